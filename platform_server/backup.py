"""`platform-server backup FILE` and `restore FILE`: the database (SQLite online backup API, safe while the
server runs) and the data dir's files in one tar.gz, with a manifest naming the schema's migrations."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from platform_server import __version__
from platform_server.config import Config

FORMAT = 1
MANIFEST = "manifest.json"
DATABASE = "platform.db"
FILES = "files/"
SKIPPED = {DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm", f"{DATABASE}-journal"}


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why."""


def _applied_migrations(db_file: str) -> list[str]:
    with sqlite3.connect(f"file:{db_file}?mode=ro", uri=True) as conn:
        try:
            return [row[0] for row in conn.execute("SELECT name FROM schema_migration ORDER BY name")]
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"not a platform database: {exc}") from None


def _copy_database(source: str, target: str) -> None:
    """A consistent copy of a live WAL database (sqlite3's online backup API)."""
    if not os.path.exists(source):
        raise BackupError(f"no database at {source}")
    src = sqlite3.connect(source, timeout=30)  # read only in effect: the backup API just reads
    dst = sqlite3.connect(target)
    try:
        src.backup(dst, pages=1024)
    finally:
        dst.close()
        src.close()


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(dt.datetime.now().timestamp())
    archive.addfile(info, io.BytesIO(data))


def backup(config: Config, target: str) -> dict[str, Any]:
    """Write the archive (mode 0600); returns its manifest."""
    data_dir = Path(config.data_dir).resolve()
    with tempfile.TemporaryDirectory(prefix="platform-backup-") as tmp:
        copy = os.path.join(tmp, DATABASE)
        _copy_database(config.db_path, copy)
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "version": __version__,
            "createdAt": dt.datetime.now(dt.timezone.utc).isoformat(),
            "migrations": _applied_migrations(copy),
            "files": 0,
        }
        partial = f"{target}.partial"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
            archive.add(copy, DATABASE)
            for path in sorted(data_dir.rglob("*")):
                rel = path.relative_to(data_dir).as_posix()
                if rel in SKIPPED or path.is_symlink() or not path.is_file() or path.resolve() == Path(target).resolve():
                    continue
                archive.add(str(path), FILES + rel, recursive=False)
                manifest["files"] += 1
            _add_bytes(archive, MANIFEST, json.dumps(manifest, indent=2).encode())
        os.replace(partial, target)
    return manifest


def _read_manifest(archive: tarfile.TarFile) -> dict[str, Any]:
    try:
        member = archive.extractfile(MANIFEST)
        manifest = json.loads(member.read()) if member else None
    except (KeyError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError("not a platform-server backup (no readable manifest)")
    return manifest


def restore(config: Config, source: str, known_migrations: list[str], force: bool = False) -> dict[str, Any]:
    """Restore an archive into the (new or emptied) data dir; refuses a newer schema or a damaged database."""
    data_dir = Path(config.data_dir).resolve()
    if Path(config.db_path).exists() and not force:
        raise BackupError(f"{data_dir} already holds a database; restore into a new data dir (or pass --force)")
    try:
        archive = tarfile.open(source, mode="r:gz")
    except (OSError, tarfile.TarError) as exc:
        raise BackupError(f"cannot read {source}: {exc}") from None
    with archive, tempfile.TemporaryDirectory(prefix="platform-restore-") as tmp:
        manifest = _read_manifest(archive)
        unknown = sorted(set(manifest.get("migrations", [])) - set(known_migrations))
        if unknown:
            raise BackupError(
                f"the backup's schema is newer than this version (unknown migrations: {', '.join(unknown[:5])}); upgrade platform-server first"
            )
        archive.extract(DATABASE, tmp, filter="data")
        copy = os.path.join(tmp, DATABASE)
        try:
            with sqlite3.connect(copy) as conn:
                row = conn.execute("PRAGMA integrity_check").fetchone()
            result = str(row[0]) if row else "no answer"
        except sqlite3.DatabaseError as exc:
            result = str(exc)
        if result != "ok":
            raise BackupError(f"the backup's database failed its integrity check: {result}")
        if sorted(_applied_migrations(copy)) != sorted(manifest.get("migrations", [])):
            raise BackupError("the backup's database does not match its manifest")
        files = [m for m in archive.getmembers() if m.name.startswith(FILES) and m.isfile()]
        staged = Path(tmp, "files")
        for member in files:
            member.name = member.name[len(FILES) :]
            archive.extract(member, staged, filter="data")
        os.makedirs(data_dir, mode=0o700, exist_ok=True)
        for suffix in ("-wal", "-shm"):
            Path(config.db_path + suffix).unlink(missing_ok=True)
        for path in sorted(staged.rglob("*")):
            if path.is_file():
                dest = data_dir / path.relative_to(staged)
                dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                shutil.move(str(path), dest)
        shutil.move(copy, config.db_path)
        os.chmod(config.db_path, 0o600)
    return manifest
