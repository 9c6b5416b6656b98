"""`platform-server backup FILE`: a consistent snapshot of a live server in one tar archive.

The archive's name picks its compression (`compression_of`): `.tar.zst` zstandard (level 1: about ten times
gzip's speed for a better ratio, so a 1 GB install is copied at disk speed, not at the compressor's),
`.tar` none, `.tar.gz` / `.tgz` / any other name gzip level 1 (what older versions wrote). Restore reads
each by its magic bytes, whatever the name.

The database is copied with SQLite's online backup API in one step (one read transaction, so writers
never restart it). The files its rows name (wiki materials, chat uploads) are taken from that
snapshot's rows: one that vanished meanwhile (its row deleted after the snapshot) makes another round
take a new snapshot and copy only the files the new one names that are not in the archive yet, a
bounded number of times. The rest of the data dir (agents' folders, keys, skills) is copied as found.
The manifest lists every file with its size and the referenced ones; `restore` (restore.py) checks both.
With `database_url` set, the database part is a pg_dump of one exported snapshot (backup_pg.py).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import io
import json
import os
import sqlite3
import stat
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator, Literal, cast

from platform_server import __version__, backup_pg
from platform_server.config import Config
from platform_server.lazy import lazy_import
from platform_server.ports.database import SnapshotBusy, SnapshotFailed, SqliteDatabase

FORMAT = 2
MANIFEST = "manifest.json"
DATABASE = "platform.db"
FILES = "files/"
SKIPPED = {DATABASE, f"{DATABASE}-wal", f"{DATABASE}-shm", f"{DATABASE}-journal"}
TEMPORARY = "tmp"  # <data_dir>/tmp: files of requests in flight (web/spool.py), never worth restoring
SNAPSHOT_TRIES = 5  # a snapshot that meets a lock is tried again, this many times in all
SNAPSHOT_BUSY_MS = 5_000  # how long one try waits for a lock
ROUNDS = 5  # new snapshots taken when a referenced file vanished after the one before
GZIP_LEVEL = 1  # level 6 costs twice the time for 8 % smaller; 9 twice again
ZSTD_LEVEL = 1  # about 10x gzip's speed at a better ratio than gzip 6 on a database of text
Compression = Literal["zstd", "gzip", "none"]
SPOOL_BYTES = 8 * 1024 * 1024  # a file is read into memory up to this size, then into a temporary file


zstandard = lazy_import("zstandard")


def compression_of(target: str) -> Compression:
    """What the archive's name asks for: `.tar.zst` / `.tzst` zstandard, `.tar` none, anything else gzip."""
    name = target.lower()
    if name.endswith((".tar.zst", ".tzst", ".zst")):
        return "zstd"
    return "none" if name.endswith(".tar") else "gzip"


@contextlib.contextmanager
def _compressed(raw: IO[bytes], compression: Compression) -> Iterator[IO[bytes]]:
    """A writer that compresses into `raw`; closing it writes the compressor's end, never closes `raw`."""
    if compression == "none":
        yield raw
        return
    sink = cast(
        IO[bytes],
        zstandard.ZstdCompressor(level=ZSTD_LEVEL).stream_writer(raw, closefd=False)
        if compression == "zstd"
        else gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0),
    )
    with sink:
        yield sink


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why."""


def _safe_name(name: object) -> bool:
    return isinstance(name, str) and bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def referenced_files(db_file: str) -> set[str]:
    """Paths (relative to the data dir) of the files the database's rows name and cannot do without."""
    refs: set[str] = set()
    with sqlite3.connect(f"file:{db_file}?mode=ro", uri=True) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "wiki_raw" in tables:
            for kb_id, name in conn.execute("SELECT kb_id, stored_name FROM wiki_raw"):
                if _safe_name(name):
                    refs.add(f"wiki/{int(kb_id)}/raw/{name}")
        if "upload" in tables:
            for user_id, name in conn.execute("SELECT user_id, stored_name FROM upload"):
                if _safe_name(name):
                    refs.add(f"uploads/{int(user_id)}/{name}")
    return refs


def agent_ids(db_file: str) -> set[str]:
    """The agents a database holds: `<data_dir>/agents/<id>/` belongs to the backup only for these."""
    with sqlite3.connect(f"file:{db_file}?mode=ro", uri=True) as conn:
        try:
            return {str(int(row[0])) for row in conn.execute("SELECT id FROM agent")}
        except sqlite3.OperationalError:  # no agent table (yet)
            return set()


def belongs(rel: str, refs: set[str], agents: set[str]) -> bool:
    """Whether a data-dir file goes with the snapshot: an agent's folder only if the agent is in it, a
    wiki material's or upload's file only if a row names it; everything else (keys, skills) always."""
    parts = rel.split("/")
    if parts[0] == "agents" and len(parts) > 2:
        return parts[1] in agents
    if parts[0] == "uploads" or (parts[0] == "wiki" and len(parts) > 3 and parts[2] == "raw"):
        return rel in refs
    return True


def applied_migrations(db_file: str) -> list[str]:
    with sqlite3.connect(f"file:{db_file}?mode=ro", uri=True) as conn:
        try:
            return [row[0] for row in conn.execute("SELECT name FROM schema_migration ORDER BY name")]
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"not a platform database: {exc}") from None


def snapshot_database(source: str, target: str) -> None:
    """Copy the live database in one step (a consistent snapshot, see `ports.database.snapshot`); a try
    that meets a lock is repeated, a few times."""
    port = SqliteDatabase(source)  # the backup of a SQLite install: this command reads its file
    last = ""
    for attempt in range(SNAPSHOT_TRIES):
        Path(target).unlink(missing_ok=True)
        try:
            port.snapshot(target, SNAPSHOT_BUSY_MS)
            return
        except SnapshotBusy as exc:
            last = str(exc)
        except SnapshotFailed as exc:
            raise BackupError(str(exc)) from None
        time.sleep(0.2 * (attempt + 1))
    raise BackupError(f"the database stayed locked through {SNAPSHOT_TRIES} tries: {last}")


def take_snapshot(config: Config, copy: str) -> tuple[str, str, backup_pg.Snapshot]:
    """The database copied (SQLite: its file at `copy`; PostgreSQL: a pg_dump beside it): the copy's path,
    its archive member name, and what the copy's rows name."""
    if config.database_url:
        path = os.path.join(os.path.dirname(copy), backup_pg.DUMP)
        Path(path).unlink(missing_ok=True)
        try:
            return path, backup_pg.DUMP, backup_pg.dump(config.database_url, path)
        except backup_pg.PgBackupError as exc:
            raise BackupError(str(exc)) from None
    snapshot_database(config.db_path, copy)
    return copy, DATABASE, backup_pg.Snapshot(referenced_files(copy), agent_ids(copy), applied_migrations(copy))


def _open_partial(target: str) -> tuple[int, str]:
    """A new file beside the target, 0600 from its creation whatever the umask (it holds the keys).

    An unpredictable name opened with O_EXCL|O_NOFOLLOW (mkstemp): a file or symlink planted at
    `<target>.partial` is never written through.
    """
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, path = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".partial")
    except OSError as exc:
        raise BackupError(f"cannot write in {folder}: {exc.strerror}") from None
    os.fchmod(fd, 0o600)
    return fd, path


def _read_file(path: str) -> tuple[IO[bytes], int, float] | None:
    """The file's bytes as they are now (None when it is gone or is no regular file): read before the
    tar entry is written, so a file that changes meanwhile cannot leave a member of the wrong size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            return None
        spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
        size = 0
        while chunk := fh.read(1024 * 1024):
            spool.write(chunk)
            size += len(chunk)
    spool.seek(0)
    return spool, size, st.st_mtime


@dataclass
class _Writer:
    """The archive being written and what it holds so far."""

    archive: tarfile.TarFile
    data_dir: Path
    sizes: dict[str, int] = field(default_factory=dict)
    vanished: set[str] = field(default_factory=set)

    def add_file(self, rel: str) -> bool:
        """Add `<data_dir>/rel` as it is now; False when it is gone."""
        got = _read_file(str(self.data_dir / rel))
        if got is None:
            self.vanished.add(rel)
            return False
        spool, size, mtime = got
        with spool:
            info = tarfile.TarInfo(FILES + rel)
            info.size, info.mode, info.mtime = size, 0o600, int(mtime)
            self.archive.addfile(info, spool)
        self.sizes[rel] = size
        return True

    def add_bytes(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
        self.archive.addfile(info, io.BytesIO(data))


def _data_files(data_dir: Path, skip: set[str]) -> list[str]:
    """Regular files under the data dir (no symlink followed), relative; the database, `skip` and the
    temporary folder (upload bodies being received) left out."""
    found: list[str] = []
    for current, dirs, names in os.walk(data_dir, followlinks=False):
        rel_dir = os.path.relpath(current, data_dir)
        if rel_dir == ".":
            dirs[:] = [d for d in dirs if d != TEMPORARY]
        dirs.sort()
        for name in sorted(names):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            if rel in SKIPPED or rel in skip or name.endswith(".partial") or name.endswith(".part"):
                continue
            found.append(rel)
    return found


def _own_files(data_dir: Path, paths: list[str]) -> set[str]:
    """Which of `paths` (the archive, its partial) lie in the data dir: never archived into themselves."""
    out = set()
    for p in paths:
        try:
            out.add(Path(p).resolve().relative_to(data_dir).as_posix())
        except ValueError:
            continue
    return out


def backup(config: Config, target: str) -> dict[str, Any]:
    """Write the archive (mode 0600) and return its manifest; nothing is left behind when it fails."""
    data_dir = Path(config.data_dir).resolve()
    os.umask(0o077)  # whatever this process creates (a stopped server's -wal/-shm, temporary copies) is private
    fd, partial = _open_partial(target)
    try:
        with tempfile.TemporaryDirectory(prefix="platform-backup-") as tmp:
            manifest = _write_archive(config, data_dir, fd, partial, target, os.path.join(tmp, DATABASE))
        os.replace(partial, target)
        return manifest
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


def _write_archive(config: Config, data_dir: Path, fd: int, partial: str, target: str, copy: str) -> dict[str, Any]:
    with os.fdopen(fd, "wb") as raw:
        with _compressed(raw, compression_of(target)) as sink, tarfile.open(fileobj=sink, mode="w|") as archive:
            manifest = _fill_archive(config, data_dir, archive, partial, target, copy)
        raw.flush()
        os.fsync(raw.fileno())  # the archive's end included: it is renamed into place next
    return manifest


def _fill_archive(config: Config, data_dir: Path, archive: tarfile.TarFile, partial: str, target: str, copy: str) -> dict[str, Any]:
    writer = _Writer(archive, data_dir)
    copy, member, taken = take_snapshot(config, copy)
    refs, agents = taken.refs, taken.agents
    for rel in _data_files(data_dir, _own_files(data_dir, [target, partial])):
        writer.add_file(rel)  # a file gone meanwhile is checked below if a row names it
    rounds = 1
    missing = sorted(refs - writer.sizes.keys())
    # An agent deleted during the walk took part of its folder along: the next snapshot drops it.
    # (One still there deleted a file itself: no row names those, so one more round settles it.)
    emptied = {rel.split("/")[1] for rel in writer.vanished if rel.startswith("agents/") and rel.count("/") > 1} & agents
    while missing or emptied:
        if rounds >= ROUNDS:
            raise BackupError(f"files named by the database kept vanishing through {ROUNDS} snapshots (e.g. {', '.join(missing[:3])})")
        # Rows deleted after the snapshot took their files along: a new snapshot no longer names them.
        # Only what it names and the archive lacks is copied; nothing already copied is read again.
        copy, member, taken = take_snapshot(config, copy)
        refs, agents, emptied = taken.refs, taken.agents, set()
        missing = sorted(rel for rel in refs - writer.sizes.keys() if not writer.add_file(rel))
        rounds += 1
    listed = {rel: size for rel, size in writer.sizes.items() if belongs(rel, refs, agents)}
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "version": __version__,
        "createdAt": dt.datetime.now(dt.timezone.utc).isoformat(),
        "database": "postgresql" if member == backup_pg.DUMP else "sqlite",
        "migrations": taken.migrations,
        "snapshots": rounds,
        # What restore puts back: files of agents or rows deleted after the snapshot may be in the
        # archive (copied before a later round), but only these go with the database.
        "files": [{"path": rel, "size": size} for rel, size in sorted(listed.items())],
        "referenced": sorted(refs),
    }
    archive.add(copy, member)
    writer.add_bytes(MANIFEST, json.dumps(manifest, indent=1).encode())
    return manifest
