"""A KB's linked source directory: resolving it inside the configured roots, and the scan that syncs it.

A scan imports new files, re-reads changed ones (size and mtime first, then the content hash) and
marks the materials of deleted files as removed, archiving the pages only they were the source of.
Reading, hashing, extracting and storing copies runs in an executor (`list_files`, `read_files`);
the rows are written on the IOLoop in one short transaction per file (`apply`, `mark_removed`), so a
large folder never holds SQLite's write lock against the IOLoop. The watcher module drives it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, cast

from platform_server.config import Config
from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.wiki import raw as raw_service
from platform_server.features.wiki.kbs import config_of, get_kb
from platform_server.features.wiki.models import KnowledgeBase, Page, PageSource, RawMaterial
from platform_server.features.wiki.text import TEXT_TYPES, extract_text, suffix_of
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest

TEMP_SUFFIXES = ("~", ".swp", ".swx", ".swo", ".tmp", ".temp", ".part", ".crdownload", ".bak")
MAX_FILES = 20_000  # files looked at in one scan
SKIPPED_LISTED = 200  # skipped/failed entries kept in a scan result


class SourceMissing(Exception):
    """The linked folder does not exist (or is no longer a folder)."""


_WORKSPACE_ROOT = re.compile(r"^(\d{1,19}):(.+)$")


@dataclass(frozen=True)
class Root:
    """One `wiki_source_roots` entry: `<workspaceId>:<folder>` is that workspace's; a bare folder is
    global and only a global admin links under it (the server's files are not every account's)."""

    path: Path
    workspace_id: int | None


def configured_roots(config: Config) -> list[Root]:
    out: list[Root] = []
    for entry in config.wiki_source_roots:
        text = entry.strip()
        if not text:
            continue
        match = _WORKSPACE_ROOT.match(text)
        workspace_id, folder = (int(match.group(1)), match.group(2).strip()) if match else (None, text)
        out.append(Root(Path(folder).expanduser().resolve(), workspace_id))
    return out


def roots(config: Config, workspace_id: int, global_admin: bool) -> list[Path]:
    """The folders a caller may link under for a KB of this workspace (a global admin: the global ones too)."""
    return [r.path for r in configured_roots(config) if r.workspace_id == workspace_id or (global_admin and r.workspace_id is None)]


def resolve_directory(config: Config, path: str, workspace_id: int, global_admin: bool) -> Path:
    """The folder, resolved (symlinks followed) and inside a root the caller may use; 400 otherwise."""
    allowed = roots(config, workspace_id, global_admin)
    if not allowed:
        if configured_roots(config):
            raise BadRequest(
                f"No folder may be linked in this workspace: a global admin assigns folders to it in the "
                f'wiki_source_roots setting ("{workspace_id}:<folder>"), or links one'
            )
        raise BadRequest(
            "No folder may be linked: the administrator lists the allowed folders in the "
            "wiki_source_roots setting (env PLATFORM_WIKI_SOURCE_ROOTS, comma separated)"
        )
    text = path.strip()
    if not text or "\x00" in text:
        raise BadRequest("path: must be a folder path")
    given = Path(text).expanduser()
    if not given.is_absolute():
        given = allowed[0] / given
    try:
        resolved = given.resolve(strict=True)
    except (OSError, RuntimeError):
        raise BadRequest(f"path: folder not found: {text}")
    if not any(resolved == root or resolved.is_relative_to(root) for root in allowed):
        raise BadRequest(f"path: outside the source folders allowed here ({', '.join(str(r) for r in allowed)})")
    if not resolved.is_dir():
        raise BadRequest(f"path: not a folder: {text}")
    if not os.access(resolved, os.R_OK | os.X_OK):
        raise BadRequest(f"path: the server cannot read this folder: {text}")
    return resolved


def still_allowed(config: Config, kb: KnowledgeBase, directory: str) -> bool:
    """Whether a stored link is inside a root its KB may use now (settings change; links made before
    roots were per workspace): the workspace's roots, or a global one when a global admin linked it.
    A link older than the flag counts as an admin's in the Default workspace (the single-user setup
    of the README), never in another workspace (where the old rule let any account link)."""
    flag = (kb.config or {}).get("sourceLinkedByAdmin")
    linked_by_admin = bool(flag) if flag is not None else kb.workspace_id == 1
    path = Path(directory)
    return any(path == root or path.is_relative_to(root) for root in roots(config, kb.workspace_id, linked_by_admin))


def linked_directory(kb: KnowledgeBase) -> str | None:
    return (kb.config or {}).get("sourceDirectory")


def watching_enabled(kb: KnowledgeBase) -> bool:
    return bool((kb.config or {}).get("sourceWatch", True))


def set_directory(caller: Caller, kb_id: int, resolved: Path | None, watch: bool) -> KnowledgeBase:
    """Link (or with None unlink) the KB's source folder, already resolved by resolve_directory."""
    with database.atomic():
        kb = get_kb(caller, kb_id)
        cfg = dict(kb.config or {})
        if resolved is None:
            for key in ("sourceDirectory", "sourceWatch", "sourceLinkedByAdmin"):
                cfg.pop(key, None)
        else:
            cfg["sourceDirectory"], cfg["sourceWatch"] = str(resolved), watch
            cfg["sourceLinkedByAdmin"] = caller.is_global_admin
        kb.config = cfg
        kb.update_time = utcnow()
        kb.save()
        audit.record(caller, "UPDATE", "WIKI_KB", kb.id, f"source directory of {kb.name}: {resolved or 'unlinked'}{'' if watch else ' (paused)'}")
    return kb


def ignored(rel_parts: tuple[str, ...]) -> bool:
    """Hidden files and folders, editors' temporary and lock files."""
    for part in rel_parts:
        if part.startswith((".", "~$", "#")) or part.endswith(TEMP_SUFFIXES) or part == "4913":
            return True
    return False


@dataclass
class ScanResult:
    added: int = 0
    updated: int = 0
    removed: int = 0
    restored: int = 0
    unchanged: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)  # material ids to queue for processing
    cancel: list[int] = field(default_factory=list)  # material ids whose processing must stop
    time: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "restored": self.restored,
            "unchanged": self.unchanged,
            "skippedCount": len(self.skipped),
            "failedCount": len(self.failed),
            "skipped": self.skipped[:SKIPPED_LISTED],
            "failed": self.failed[:SKIPPED_LISTED],
            "queued": len(self.queue),
            "time": iso(self.time),
        }


def _walk(root: Path, result: ScanResult) -> list[tuple[str, Path, os.stat_result]]:
    """Regular files under root (no symlink leading out of it), hidden and temporary ones left out."""
    out: list[tuple[str, Path, os.stat_result]] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        dirs[:] = sorted(d for d in dirs if not ignored((d,)))
        for name in sorted(files):
            path = base / name
            rel = path.relative_to(root).as_posix()
            if ignored(tuple(rel.split("/"))):
                continue
            try:
                real = path.resolve(strict=True)
                st = real.stat()
            except (OSError, RuntimeError):
                result.failed.append({"path": rel, "error": "unreadable"})
                continue
            if not real.is_relative_to(root):
                result.skipped.append({"path": rel, "reason": "link leading outside the folder"})
                continue
            if not path.is_file():
                continue
            out.append((rel, real, st))
            if len(out) >= MAX_FILES:
                result.skipped.append({"path": rel, "reason": f"more than {MAX_FILES} files: the rest is not read"})
                return out
    return out


def _archive_orphans(raw_id: int) -> None:
    """Archive pages whose every source material is removed."""
    page_ids = [s.page_id for s in PageSource.select(PageSource.page).where(PageSource.raw == raw_id)]
    for pid in page_ids:
        live = PageSource.select().join(RawMaterial).where((PageSource.page == pid) & (RawMaterial.removed == 0)).exists()
        if not live:
            Page.update(archived=1, update_time=utcnow()).where((Page.id == pid) & (Page.archived == 0)).execute()


def _unarchive_pages(raw_id: int) -> None:
    page_ids = [s.page_id for s in PageSource.select(PageSource.page).where(PageSource.raw == raw_id)]
    if page_ids:
        Page.update(archived=0, update_time=utcnow()).where(Page.id.in_(page_ids) & (Page.archived == 1)).execute()


def _mark_removed(raw_id: int, result: ScanResult) -> None:
    with database.atomic():
        current = RawMaterial.get_or_none(RawMaterial.id == raw_id)
        if current is None or current.removed:
            return
        if current.status in ("processing", "pending"):
            current.status, current.error = "cancelled", "The source file was deleted"
            result.cancel.append(current.id)
        current.removed, current.queued, current.update_time = True, False, utcnow()
        current.save()
        _archive_orphans(current.id)
        audit.record(None, "UPDATE", "WIKI_RAW", current.id, f"source file {current.source_path} deleted", workspace_id=current.workspace_id)
    result.removed += 1


@dataclass
class Change:
    """What the executor found for one file; applied to the database on the IOLoop."""

    rel: str
    name: str
    row_id: int | None
    mtime: int
    size: int
    digest: str = ""
    text: str = ""
    stored: str = ""  # a new stored copy ("" when the content did not change)
    content_type: str = ""


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO never hangs the open


_SWAP_REASONS = {  # what O_NOFOLLOW's refusals mean here
    errno.ELOOP: "a symbolic link was put in its place",
    errno.ENOTDIR: "a folder on its path was replaced (by a symbolic link or a file)",
}


class Swapped(OSError):
    """The file read is not the one the scan looked at (replaced, or a link put in its place)."""


def open_scanned(path: Path, st: os.stat_result) -> int:
    """A read descriptor of `path`, the very file `st` describes, reached through no symbolic link.

    The scan resolved and stat'ed the path earlier; anyone who can write in the folder can swap the
    file, or a folder on its way, for a link to a secret in between. So every component is opened
    relative to the previous one with O_NOFOLLOW (a link anywhere fails with ELOOP) and the opened
    descriptor must be a regular file with the scanned device and inode.
    """
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in path.parts[1:-1]:
            step = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = step
        file_fd = os.open(path.name, _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
    opened = os.fstat(file_fd)
    if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
        os.close(file_fd)
        raise Swapped(errno.ESTALE, "the file changed while it was scanned; the next scan reads it")
    return file_fd


def read_scanned(path: Path, st: os.stat_result, limit: int) -> bytes | None:
    """The scanned file's bytes (None when longer than `limit`), read through `open_scanned`."""
    with os.fdopen(open_scanned(path, st), "rb") as f:
        data = f.read(limit + 1)
    return None if len(data) > limit else data


def _read(config: Config, rel: str, path: Path, st: os.stat_result, result: ScanResult) -> tuple[bytes, str] | None:
    """The file's bytes and extracted text, or None when it is skipped or failed (noted in the result)."""
    ctype = TEXT_TYPES.get(suffix_of(path.name))
    if ctype is None:
        result.skipped.append({"path": rel, "reason": "unsupported type"})
        return None
    too_large = {"path": rel, "error": f"larger than {config.wiki_max_material_bytes} bytes"}
    if st.st_size > config.wiki_max_material_bytes:
        result.failed.append(too_large)
        return None
    try:
        data = read_scanned(path, st, config.wiki_max_material_bytes)
        if data is None:  # it grew after the scan looked at it
            result.failed.append(too_large)
            return None
        text = extract_text(data, ctype)
    except Swapped as exc:
        result.failed.append({"path": rel, "error": exc.strerror or "changed while scanned"})
        return None
    except OSError as exc:
        reason = _SWAP_REASONS.get(exc.errno or 0) or exc.strerror or type(exc).__name__
        result.failed.append({"path": rel, "error": f"unreadable: {reason}"})
        return None
    except ApiError as exc:
        result.failed.append({"path": rel, "error": exc.msg})
        return None
    if not text.strip():
        result.failed.append({"path": rel, "error": "holds no text"})
        return None
    if len(text) > raw_service.MAX_TEXT_CHARS:
        result.failed.append({"path": rel, "error": f"text longer than {raw_service.MAX_TEXT_CHARS} characters"})
        return None
    return data, text


def _store(config: Config, kb_id: int, data: bytes, name: str) -> str:
    folder = raw_service.raw_dir(config, kb_id)
    folder.mkdir(parents=True, exist_ok=True)
    stored = os.urandom(16).hex() + suffix_of(name)
    tmp = folder / (stored + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, folder / stored)
    return stored


@dataclass
class Known:
    """A directory material as the scan compares it."""

    id: int
    size: int
    mtime: int | None
    digest: str
    removed: bool


def known_materials(kb_id: int) -> dict[str, Known]:
    q = (
        RawMaterial.select(
            RawMaterial.id, RawMaterial.source_path, RawMaterial.size_bytes, RawMaterial.source_mtime, RawMaterial.content_hash, RawMaterial.removed
        )
        .where((RawMaterial.kb == kb_id) & (RawMaterial.source_type == "directory"))
        .tuples()
    )
    rows = cast(Iterable[tuple[int, str, int, int | None, str, int]], q)
    return {rel: Known(i, size, mtime, digest, bool(removed)) for i, rel, size, mtime, digest, removed in rows}


def list_files(directory: str, result: ScanResult) -> list[tuple[str, Path, os.stat_result]]:
    """The folder's files (blocking); SourceMissing when it is gone."""
    root = Path(directory)
    if not root.is_dir():
        raise SourceMissing(f"The folder is missing: {directory}")
    return _walk(root, result)


def read_files(
    config: Config, kb_id: int, files: list[tuple[str, Path, os.stat_result]], known: dict[str, Known], result: ScanResult
) -> list[Change]:
    """Read, hash, extract and store the files that are new or changed (blocking: run it in an executor)."""
    out: list[Change] = []
    for rel, path, st in files:
        row = known.get(rel)
        if row is not None and row.size == st.st_size and row.mtime == st.st_mtime_ns and not row.removed:
            result.unchanged += 1
            continue
        read = _read(config, rel, path, st, result)
        if read is None:
            continue
        data, text = read
        digest = hashlib.sha256(data).hexdigest()
        change = Change(rel, path.name, row.id if row else None, st.st_mtime_ns, len(data), digest)
        if row is None or row.digest != digest:
            try:
                change.stored = _store(config, kb_id, data, path.name)
            except OSError as exc:
                result.failed.append({"path": rel, "error": f"cannot store a copy: {exc.strerror or exc}"})
                continue
            change.text, change.content_type = text, TEXT_TYPES[suffix_of(path.name)]
        out.append(change)
    return out


def apply(kb: KnowledgeBase, change: Change, result: ScanResult) -> str | None:
    """Write one change (short transaction, on the IOLoop); returns a stored file to discard."""
    auto = bool(config_of(kb)["autoProcess"])
    if change.row_id is None:
        prep = raw_service.Prepared(change.stored, change.content_type, change.size, change.digest, change.text)
        title = change.name.rsplit(".", 1)[0] or change.name
        created, queued = raw_service.create(None, kb, title, "directory", change.name, prep, change.rel)
        RawMaterial.update(source_mtime=change.mtime).where(RawMaterial.id == created.id).execute()
        result.added += 1
        if queued:
            result.queue.append(created.id)
        return None
    with database.atomic():
        current = RawMaterial.get_or_none(RawMaterial.id == change.row_id)
        if current is None:
            return change.stored or None
        was_removed = bool(current.removed)
        if not change.stored:  # same content: only the file's mtime moved (or it came back)
            RawMaterial.update(source_mtime=change.mtime, size_bytes=change.size, removed=False, update_time=utcnow()).where(
                RawMaterial.id == current.id
            ).execute()
            if was_removed:
                _unarchive_pages(current.id)
                result.restored += 1
            else:
                result.unchanged += 1
            return None
        old_stored = current.stored_name
        if current.status == "processing":
            result.cancel.append(current.id)
        current.stored_name, current.content_type, current.size_bytes = change.stored, change.content_type, change.size
        current.content_hash, current.text, current.source_mtime = change.digest, change.text, change.mtime
        current.removed, current.error, current.update_time = False, None, utcnow()
        current.status, current.queued = "pending", auto
        current.save()
        if was_removed:
            _unarchive_pages(current.id)
        audit.record(None, "UPDATE", "WIKI_RAW", current.id, f"source file {change.rel} changed", workspace_id=current.workspace_id)
    result.updated += 1
    if auto:
        result.queue.append(current.id)
    return old_stored


def mark_removed(known: dict[str, Known], seen: set[str], result: ScanResult) -> None:
    """Materials whose file is gone: removed, their pages archived (on the IOLoop)."""
    for rel, row in known.items():
        if rel not in seen and not row.removed:
            _mark_removed(row.id, result)
