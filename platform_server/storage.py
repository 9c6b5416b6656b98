"""Storage health: whether the data folder can take writes (free space, and the last write errors).

A write that fails with SQLITE_FULL / ENOSPC (or a disk I/O error), or free space under
`storage_min_free_mb`, puts the process in read-only mode: `/health` says DEGRADED with the reason and
every write route answers 507 before it writes anything. A periodic check (`storage_check_s`) ends the
mode once the free space is back above the threshold.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from platform_server.loops import Loop
from platform_server.ports.database import storage_fault

log = logging.getLogger(__name__)

RECOVERY_MIN_FREE_BYTES = 1024 * 1024  # after a write failed: at least this much free before writes resume
PARTIAL_SUFFIX = ".part"  # files being written: renamed into place once whole


class StorageHealth:
    """The process's read-only mode and its reason (one per process, `platform.storage`)."""

    def __init__(self, data_dir: str, min_free_bytes: int) -> None:
        self.data_dir = data_dir
        self.min_free_bytes = min_free_bytes
        self.reason: str | None = None  # set while read-only
        self.failed_write = False  # read-only because a write failed (not only low space)
        self.since: float | None = None
        self.free_bytes: int | None = None
        # The start freed the reserve to open the database: until it is made again, its size does not
        # count as free (else the 2 MB it freed would read as space back, and writes resume on a full disk).
        self.reserve_owed = False

    @property
    def read_only(self) -> bool:
        return self.reason is not None

    def note_fault(self, exc: BaseException | None) -> str | None:  # (also the checkpointer's fault callback)
        """Classify a failure (see `ports.database.storage_fault`); a full or failing disk turns read-only mode on."""
        kind = storage_fault(exc)
        if kind in ("full", "io"):
            what = "the disk is full" if kind == "full" else "the disk failed a write"
            self._degrade(f"A write failed: {what} ({type(exc).__name__})", failed_write=True)
        return kind

    def check(self) -> bool:
        """Measure free space; enter or leave read-only mode. Returns whether writes are accepted."""
        try:
            self.free_bytes = shutil.disk_usage(self.data_dir).free
        except OSError as exc:
            self._degrade(f"The data folder cannot be measured: {exc.strerror}", failed_write=True)
            return False
        free = self.free_bytes - (RESERVE_BYTES if self.reserve_owed else 0)
        if free < self.min_free_bytes:
            low = f"Free space {self.free_bytes // 1024} KB is under the {self.min_free_bytes // 1024} KB threshold"
            self._degrade(low, failed_write=self.failed_write)
        elif self.reason is not None and (not self.failed_write or free >= RECOVERY_MIN_FREE_BYTES):
            log.warning("storage: writes accepted again (%d KB free)", self.free_bytes // 1024)
            self.reason, self.failed_write, self.since = None, False, None
        return self.reason is None

    def _degrade(self, reason: str, failed_write: bool) -> None:
        if self.reason is None:
            log.error("storage: read-only until space returns: %s", reason)
            self.since = time.time()
        self.reason, self.failed_write = reason, failed_write or self.failed_write

    def snapshot(self) -> dict[str, Any]:
        return {
            "status": "DEGRADED" if self.reason else "UP",
            "readOnly": self.reason is not None,
            "reason": self.reason,
            "freeBytes": self.free_bytes,
            "minFreeBytes": self.min_free_bytes,
        }


RESERVE_NAME = ".storage-reserve"
RESERVE_BYTES = 2 * 1024 * 1024  # what opening the database (its -wal and -shm files) and a last checkpoint need


def keep_reserve(data_dir: str, min_free_bytes: int) -> bool:
    """Hold a small file of reserved space (made when there is room to spare), so a start on a full disk
    can free it to open the database and serve reads. Returns whether the reserve is there."""
    path = os.path.join(data_dir, RESERVE_NAME)
    if os.path.exists(path):
        return True
    try:
        if shutil.disk_usage(data_dir).free < min_free_bytes + 2 * RESERVE_BYTES:
            return False
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False
    try:
        os.write(fd, b"\0" * RESERVE_BYTES)  # written, not sparse: the blocks are really taken
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        return False
    os.close(fd)
    return True


def release_reserve(data_dir: str) -> bool:
    """Free the reserve (the disk is full); returns whether there was one."""
    try:
        os.unlink(os.path.join(data_dir, RESERVE_NAME))
    except OSError:
        return False
    log.warning("storage: the disk is full; the %d KB reserve was freed to open the database", RESERVE_BYTES // 1024)
    return True


def start_write(health: StorageHealth, what: str, write: Callable[[], Any]) -> None:
    """A write a start does (resetting what a stop left running): on a full disk the reserve is freed and
    it is tried once more; if it still fails the server starts read-only and the next start does it."""
    for attempt in (1, 2):
        try:
            write()
            return
        except Exception as exc:
            if health.note_fault(exc) not in ("full", "io"):
                raise
            if attempt == 1 and release_reserve(health.data_dir):
                health.reserve_owed = True
            else:
                log.warning("start: %s left for the next start (the disk is full)", what)
                return


def remove_partial_files(data_dir: str, older_than: float) -> int:
    """Delete files a write left half done (`*.part`, `.tmp-*`) under the data folder, last written before
    `older_than` (the start: a write of this process may be under way); returns how many."""
    removed = 0
    root = Path(data_dir)
    for folder in ("uploads", "wiki"):  # (agent folders hold the users' own files: never swept)
        base = root / folder
        if not base.is_dir():
            continue
        for dirpath, _, names in os.walk(base, followlinks=False):
            for name in names:
                if name.endswith(PARTIAL_SUFFIX) or name.startswith(".tmp-"):
                    path = os.path.join(dirpath, name)
                    try:
                        if os.lstat(path).st_mtime < older_than:
                            os.unlink(path)
                            removed += 1
                    except OSError:
                        pass
    if removed:
        log.warning("removed %d partial files left by interrupted writes", removed)
    return removed


class StorageCheckLoop(Loop):
    """Measures free space every `storage_check_s` (statvfs: cheap, on the loop)."""

    leader_only = False  # every process writes to its own disk, and must know when it fills

    def __init__(self, health: StorageHealth, interval_s: float) -> None:
        super().__init__()
        self.health = health
        self.interval_s = interval_s

    def tick(self) -> bool:
        healthy = self.health.check()
        if healthy or self.health.reserve_owed:
            if keep_reserve(self.health.data_dir, self.health.min_free_bytes):
                self.health.reserve_owed = False
        return healthy
