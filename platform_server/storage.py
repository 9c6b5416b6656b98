"""Storage health: whether the data folder can take writes (free space, and the last write errors).

A write that fails with SQLITE_FULL / ENOSPC (or a disk I/O error), or free space under
`storage_min_free_mb`, puts the process in read-only mode: `/health` says DEGRADED with the reason and
every write route answers 507 before it writes anything. A periodic check (`storage_check_s`) ends the
mode once the free space is back above the threshold.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

from platform_server.db import storage_fault
from platform_server.loops import Loop

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

    @property
    def read_only(self) -> bool:
        return self.reason is not None

    def note_fault(self, exc: BaseException | None) -> str | None:  # (also the checkpointer's fault callback)
        """Classify a failure (see `db.storage_fault`); a full or failing disk turns read-only mode on."""
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
        if self.free_bytes < self.min_free_bytes:
            low = f"Free space {self.free_bytes // 1024} KB is under the {self.min_free_bytes // 1024} KB threshold"
            self._degrade(low, failed_write=self.failed_write)
        elif self.reason is not None and (not self.failed_write or self.free_bytes >= RECOVERY_MIN_FREE_BYTES):
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


def remove_partial_files(data_dir: str) -> int:
    """Delete files a write left half done (`*.part`, `.tmp-*`) under the data folder; returns how many."""
    removed = 0
    root = Path(data_dir)
    for folder in ("uploads", "wiki"):  # (agent folders hold the users' own files: never swept)
        base = root / folder
        if not base.is_dir():
            continue
        for dirpath, _, names in os.walk(base, followlinks=False):
            for name in names:
                if name.endswith(PARTIAL_SUFFIX) or name.startswith(".tmp-"):
                    try:
                        os.unlink(os.path.join(dirpath, name))
                        removed += 1
                    except OSError:
                        pass
    if removed:
        log.warning("removed %d partial files left by interrupted writes", removed)
    return removed


class StorageCheckLoop(Loop):
    """Measures free space every `storage_check_s` (statvfs: cheap, on the loop)."""

    def __init__(self, health: StorageHealth, interval_s: float) -> None:
        super().__init__()
        self.health = health
        self.interval_s = interval_s

    def tick(self) -> bool:
        return self.health.check()
