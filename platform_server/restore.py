"""`platform-server restore FILE`: check a backup archive member by member, stage it beside the data dir,
verify the database and that every file it names (and every file the manifest lists) is there, then
move it into place. A hostile or damaged archive is refused with a message, never half-restored.
With `database_url` set, the archive's pg_dump goes into that (new, empty) database (backup_pg.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path
from typing import Any, Iterator

from platform_server import backup_pg
from platform_server.backup import DATABASE, FILES, MANIFEST, BackupError, applied_migrations, referenced_files
from platform_server.config import Config
from platform_server.lazy import lazy_import
from platform_server.ports.database import SqliteDatabase

zstandard = lazy_import("zstandard")  # only for a .tar.zst archive

FORMATS = (1, 2)  # format 1 archives (no file list) are checked against their database's rows only
MAX_MEMBERS = 1_000_000
MAX_MANIFEST_BYTES = 64 * 1024 * 1024


def _safe_rel(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and "\x00" not in rel and all(p not in ("", ".", "..") for p in parts)


class _Stage:
    """The archive's members, checked one by one and written under a private folder."""

    def __init__(self, root: Path, limit: int) -> None:
        self.root, self.limit = root, limit
        self.total = 0
        self.count = 0
        self.files: dict[str, int] = {}  # rel -> size
        self.manifest: bytes | None = None
        self.database: Path | None = None

    def take(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        self.count += 1
        if self.count > MAX_MEMBERS:
            raise BackupError(f"the archive has more than {MAX_MEMBERS} members")
        name = member.name
        if member.isdir():
            if not _safe_rel(name.rstrip("/")):
                raise BackupError(f"the archive holds an unsafe path: {name[:200]!r}")
            return
        if not member.isfile():
            kind = "symlink" if member.issym() else "hard link" if member.islnk() else "device or special file"
            raise BackupError(f"the archive holds a {kind} ({name[:200]!r}): only regular files are restored")
        self.total += member.size
        if self.total > self.limit:
            raise BackupError(f"the archive unpacks to more than restore_max_bytes ({self.limit} bytes)")
        if name == MANIFEST:
            if member.size > MAX_MANIFEST_BYTES:
                raise BackupError("the archive's manifest is too large")
            src = archive.extractfile(member)
            self.manifest = src.read() if src else b""
        elif name in (DATABASE, backup_pg.DUMP):
            self.database = self._write(archive, member, self.root / name)
        elif name.startswith(FILES) and _safe_rel(name[len(FILES) :]):
            rel = name[len(FILES) :]
            self._write(archive, member, self.root / "files" / rel)
            self.files[rel] = member.size  # a later member of the same name replaces it, as tar does
        else:
            raise BackupError(f"the archive holds an unsafe or unknown path: {name[:200]!r}")

    def _write(self, archive: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> Path:
        src = archive.extractfile(member)
        if src is None:
            raise BackupError(f"cannot read {member.name[:200]!r} from the archive")
        dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        dest.unlink(missing_ok=True)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(src, out, 1024 * 1024)
        return dest


def _check_database(copy: Path, manifest: dict[str, Any]) -> None:
    result = SqliteDatabase(str(copy)).check_copy(str(copy))
    if result != "ok":
        raise BackupError(f"the backup's database failed its integrity check: {result}")
    if sorted(applied_migrations(str(copy))) != sorted(manifest.get("migrations", [])):
        raise BackupError("the backup's database does not match its manifest")


def _check_engine(copy: Path, config: Config) -> None:
    """An archive goes back onto the engine it came from (migrate-to-postgres moves SQLite to PostgreSQL)."""
    if copy.name == backup_pg.DUMP and not config.database_url:
        raise BackupError("the archive holds a PostgreSQL dump: set database_url to a new, empty PostgreSQL database and restore again")
    if copy.name == DATABASE and config.database_url:
        raise BackupError(
            "the archive holds a SQLite database and database_url is set: restore it without database_url, "
            "then move it with `platform-server migrate-to-postgres`"
        )


def _check_dump(copy: Path) -> None:
    try:
        backup_pg.check_dump(str(copy))
    except backup_pg.PgBackupError as exc:
        raise BackupError(f"the backup's database cannot be read: {exc}") from None


def _restore_dump(url: str, copy: Path, manifest: dict[str, Any]) -> None:
    try:
        backup_pg.restore(url, str(copy), list(manifest.get("migrations", [])))
    except backup_pg.PgBackupError as exc:
        raise BackupError(str(exc)) from None


def _check_files(stage: _Stage, manifest: dict[str, Any]) -> None:
    """Every file the manifest lists, with its size, and every file the database's rows name."""
    listed = manifest.get("files")
    available = set(stage.files)
    if isinstance(listed, list):
        available = set()
        for entry in listed:
            rel = entry.get("path") if isinstance(entry, dict) else None
            if not isinstance(rel, str) or stage.files.get(rel) != entry.get("size"):
                raise BackupError(f"the manifest lists a file the archive lacks or holds at another size: {str(rel)[:200]!r}")
            available.add(rel)
    assert stage.database is not None
    named = set(manifest.get("referenced") or [])  # a dump's rows: as the backup read them from its snapshot
    if stage.database.name == DATABASE:
        named |= referenced_files(str(stage.database))
    missing = sorted(named - available)
    if missing:
        raise BackupError(f"the database names {len(missing)} file(s) the archive lacks (e.g. {', '.join(missing[:3])})")


def _read_manifest(raw: bytes | None, known_migrations: list[str]) -> dict[str, Any]:
    try:
        manifest = json.loads(raw) if raw is not None else None
    except ValueError:
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") not in FORMATS:
        raise BackupError("not a platform-server backup (no readable manifest)")
    for key in ("migrations", "referenced"):
        value = manifest.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise BackupError(f"the archive's manifest is damaged ({key} is not a list of names)")
    if manifest["format"] > 1 and not isinstance(manifest.get("files"), list):
        raise BackupError("the archive's manifest is damaged (files is not a list)")
    unknown = sorted(set(manifest.get("migrations", [])) - set(known_migrations))
    if unknown:
        raise BackupError(
            f"the backup's schema is newer than this version (unknown migrations: {', '.join(unknown[:5])}); upgrade platform-server first"
        )
    return manifest


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@contextlib.contextmanager
def _open_archive(source: str) -> Iterator[tarfile.TarFile]:
    """The archive read in one pass, whatever its compression (by its magic bytes, not its name)."""
    with open(source, "rb") as raw:
        if raw.read(4) != ZSTD_MAGIC:
            raw.seek(0)
            with tarfile.open(fileobj=raw, mode="r|*") as archive:  # gzip or none
                yield archive
            return
        raw.seek(0)
        with zstandard.ZstdDecompressor().stream_reader(raw, closefd=False) as plain, tarfile.open(fileobj=plain, mode="r|") as archive:
            yield archive


def restore(config: Config, source: str, known_migrations: list[str], force: bool = False) -> dict[str, Any]:
    """Restore an archive into the (new or emptied) data dir; refuses anything it cannot fully verify."""
    data_dir = Path(config.data_dir).resolve()
    if not config.database_url and Path(config.db_path).exists() and not force:
        raise BackupError(f"{data_dir} already holds a database; restore into a new data dir (or pass --force)")
    limit = config.restore_max_bytes
    try:
        st = os.stat(source)
        if st.st_size > limit:
            raise BackupError(f"{source} is larger than restore_max_bytes ({limit} bytes)")
        data_dir.parent.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix=".platform-restore-", dir=data_dir.parent))  # same file system: moves are renames
    except OSError as exc:
        raise BackupError(f"cannot read {source}: {exc.strerror or exc}") from None
    try:
        stage = _Stage(root, limit)
        try:
            with _open_archive(source) as archive:
                for member in archive:
                    stage.take(archive, member)
        except (OSError, tarfile.TarError, EOFError, zlib.error, zstandard.ZstdError) as exc:
            raise BackupError(f"cannot read {source}: {exc}") from None
        manifest = _read_manifest(stage.manifest, known_migrations)
        if stage.database is None:
            raise BackupError("the archive holds no database")
        _check_engine(stage.database, config)
        if config.database_url:
            _check_dump(stage.database)
        else:
            _check_database(stage.database, manifest)
        _check_files(stage, manifest)
        listed = manifest.get("files")
        wanted = sorted({e["path"] for e in listed} if isinstance(listed, list) else stage.files)  # checked above
        if config.database_url:  # the database first: a refused restore leaves the data dir as it was
            _restore_dump(config.database_url, stage.database, manifest)
        try:
            _move_into_place(stage, wanted, data_dir, None if config.database_url else config.db_path)
        except OSError as exc:
            raise BackupError(f"cannot write {data_dir}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return manifest


def _move_into_place(stage: _Stage, wanted: list[str], data_dir: Path, db_path: str | None) -> None:
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    if db_path is not None:
        for suffix in ("-wal", "-shm"):
            Path(db_path + suffix).unlink(missing_ok=True)
    staged = stage.root / "files"
    for rel in wanted:
        dest = data_dir / rel
        dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.move(str(staged / rel), dest)
    assert stage.database is not None
    if db_path is not None:  # (a PostgreSQL dump went into its database already)
        shutil.move(str(stage.database), db_path)
        os.chmod(db_path, 0o600)
