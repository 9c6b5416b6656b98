"""Agent memory snapshots: `MEMORY.md` and `memory/**` of the workspace, exported and imported as ZIP.

Import refuses entries that would land outside the memory files (zip-slip `..`, absolute names,
backslashes, symlink entries, a symlink already in the target path) and bounds the archive: entry
count, per-entry size and total uncompressed size are checked against what is actually read,
so a lying header or a zip bomb stops before anything is written.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platform_server.features.agents import archives, files
from platform_server.web.errors import ApiError, BadRequest

MEMORY_FILE = "MEMORY.md"
MEMORY_FOLDER = "memory"
MAX_ENTRIES = 5_000
MAX_ENTRY_BYTES = 10 * 1024 * 1024
MAX_TOTAL_BYTES = 50 * 1024 * 1024


def is_memory_path(rel: str) -> bool:
    return rel == MEMORY_FILE or rel.startswith(MEMORY_FOLDER + "/")


def export_zip(root: Path) -> bytes:
    """A ZIP of `MEMORY.md` and every regular file under `memory/` (symlinks skipped)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        names: list[str] = []
        if (root / MEMORY_FILE).is_file() and not (root / MEMORY_FILE).is_symlink():
            names.append(MEMORY_FILE)
        if (root / MEMORY_FOLDER).is_dir() and not (root / MEMORY_FOLDER).is_symlink():
            names.extend(rel for rel, _ in files.walk_files(root, MEMORY_FOLDER))
        for rel in sorted(names):
            try:
                data = files.read_bytes(root, rel, MAX_ENTRY_BYTES)
            except ApiError:
                continue  # vanished, replaced by a link, or too large: not part of a snapshot
            zf.writestr(rel, data)
    return buf.getvalue()


@dataclass
class Entry:
    path: str
    size: int
    action: str  # create | overwrite | refused
    reason: str | None = None
    info: zipfile.ZipInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "size": self.size, "action": self.action}
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass
class ImportPlan:
    entries: list[Entry] = field(default_factory=list)
    contents: dict[str, bytes] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        counts = {a: sum(1 for e in self.entries if e.action == a) for a in ("create", "overwrite", "refused")}
        return {
            "entries": [e.to_dict() for e in self.entries],
            "createCount": counts["create"],
            "overwriteCount": counts["overwrite"],
            "refusedCount": counts["refused"],
            "totalBytes": sum(e.size for e in self.entries if e.action != "refused"),
        }


def _classify(root: Path, info: zipfile.ZipInfo, seen: set[str]) -> Entry:
    raw = info.orig_filename if hasattr(info, "orig_filename") else info.filename
    size = info.file_size
    try:
        rel = archives.entry_path(info, raw)
    except archives.UnsafeEntry as exc:
        if exc.kind == "symlink":
            return Entry(raw, size, "refused", "symbolic link entries are not imported")
        if exc.kind == "encrypted":
            return Entry(raw, size, "refused", "encrypted entries are not supported")
        if exc.kind == "nul":
            return Entry(raw.replace("\x00", "\\0"), size, "refused", "name contains a NUL byte")
        return Entry(raw, size, "refused", exc.msg)
    if not is_memory_path(rel):
        return Entry(rel, size, "refused", "outside the memory files (MEMORY.md, memory/**)")
    if rel in seen:
        return Entry(rel, size, "refused", "duplicate entry")
    if size > MAX_ENTRY_BYTES:
        return Entry(rel, size, "refused", f"larger than {MAX_ENTRY_BYTES} bytes")
    try:
        target = files.resolve_inside(root, rel)
    except ApiError as exc:
        return Entry(rel, size, "refused", exc.msg)
    if target.is_dir():
        return Entry(rel, size, "refused", "a directory exists at this path")
    seen.add(rel)
    return Entry(rel, size, "overwrite" if target.exists() else "create", info=info)


def plan_import(root: Path, archive: bytes, read_contents: bool) -> ImportPlan:
    """What an import would write, overwrite and refuse; with read_contents, the checked bytes too."""
    with archives.open_zip(archive) as zf:
        infos = archives.file_entries(zf, MAX_ENTRIES)
        plan = ImportPlan()
        seen: set[str] = set()
        declared = 0
        for info in infos:
            entry = _classify(root, info, seen)
            plan.entries.append(entry)
            if entry.action != "refused":
                declared += entry.size
        if declared > MAX_TOTAL_BYTES:
            raise BadRequest(f"file: expands to more than {MAX_TOTAL_BYTES} bytes")
        if read_contents:
            total = 0
            for entry in plan.entries:
                if entry.info is None:
                    continue
                data = archives.read_entry(zf, entry.info, entry.path, entry.info.file_size)
                total += len(data)
                if total > MAX_TOTAL_BYTES:
                    raise BadRequest(f"file: expands to more than {MAX_TOTAL_BYTES} bytes")
                plan.contents[entry.path] = data
    return plan


def apply_import(root: Path, plan: ImportPlan) -> int:
    """Write the planned entries (merge: files not in the archive stay); returns how many were written."""
    written = 0
    for entry in plan.entries:
        if entry.action == "refused":
            continue
        files.write_bytes(root, entry.path, plan.contents[entry.path])
        written += 1
    return written
