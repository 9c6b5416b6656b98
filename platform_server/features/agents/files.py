"""Files confined to an agent's workspace folder: `..`, absolute paths, symlinks, NUL never escape.

Every operation walks from the root with directory file descriptors and `O_NOFOLLOW`, so a
symlink anywhere in the path (also one planted inside the folder, or swapped in between a check
and the use) is refused instead of followed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any, Iterator

from platform_server.db import iso
from platform_server.web.errors import BadRequest, Forbidden, NotFound

MAX_REL_PATH = 1024  # bytes, whole relative path
MAX_SEGMENT = 255  # bytes, one name
MAX_DEPTH = 32
MAX_LIST_ENTRIES = 10_000
_DRIVE = re.compile(r"^[A-Za-z]:")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
ESCAPE = "Path escapes the agent workspace"


class PathInTheWay(BadRequest):
    """A well-formed path the folder's content refuses (a folder where a file is asked for, a file where a folder
    is): a 400 where the path came from a tool call; the HTTP file routes answer it as the 409 it is."""


# A file's path as the HTTP routes document and check it, so the document and the server refuse the same paths:
# 1-32 names of 1-63 characters, none `.` (`..` stays a 403 escape), no `/`, backslash, colon or control character,
# at most 256 characters. Stricter than split_rel on purpose: a pattern cannot count UTF-8 bytes, and 63 characters
# stay under a name's 255 bytes, 256 under the path's 1024, whatever the characters (memory files follow the same rule).
PATH_NAME = r"(?:[^./\\:\x00-\x1f\x7f][^/\\:\x00-\x1f\x7f]{0,62}|\.[^/\\:\x00-\x1f\x7f]{1,62})"
ROUTE_PATH_PATTERN = f"^{PATH_NAME}(?:/{PATH_NAME}){{0,31}}$"
ROUTE_PATH_MAX = 256
_ROUTE_PATH = re.compile(ROUTE_PATH_PATTERN)
ROUTE_PATH_RULE = "a relative path of 1-32 names of 1-63 characters (none '.', no '\\', ':' or control character), at most 256"
SYMLINK = "Symbolic links are not allowed in the agent workspace"


def split_rel(rel: str | None) -> list[str]:
    """Validate a workspace-relative path and split it into names (`.` and empty names dropped)."""
    if rel is None or rel == "":
        raise BadRequest("path: must name a file")
    if "\x00" in rel:
        raise BadRequest("path: must not contain NUL bytes")
    if "\\" in rel:
        raise BadRequest("path: backslashes are not allowed")
    if any(ord(c) < 0x20 or c == "\x7f" for c in rel):
        raise BadRequest("path: must not contain control characters")
    if len(rel.encode("utf-8", "surrogatepass")) > MAX_REL_PATH:
        raise BadRequest(f"path: longer than {MAX_REL_PATH} bytes")
    if rel.startswith("/") or _DRIVE.match(rel):
        raise BadRequest("path: must be relative to the agent workspace")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise Forbidden(ESCAPE)
    if not parts:
        raise BadRequest("path: must name a file")
    if len(parts) > MAX_DEPTH:
        raise BadRequest(f"path: deeper than {MAX_DEPTH} levels")
    for p in parts:
        try:
            encoded = p.encode("utf-8")
        except UnicodeEncodeError:
            raise BadRequest("path: not valid UTF-8")
        if len(encoded) > MAX_SEGMENT:
            raise BadRequest(f"path: a name is longer than {MAX_SEGMENT} bytes")
    return parts


def route_path_schema(pattern: str = ROUTE_PATH_PATTERN) -> dict[str, object]:
    """The document's schema of a `{path}` route parameter (a handler's path_schemas)."""
    return {"type": "string", "minLength": 1, "maxLength": ROUTE_PATH_MAX, "pattern": pattern}


def check_route_path(path: str, pattern: re.Pattern[str] | None = None, rule: str = ROUTE_PATH_RULE) -> str:
    """400 unless `path` is what the route's documented pattern allows (ROUTE_PATH_PATTERN or a stricter one)."""
    if len(path) > ROUTE_PATH_MAX or not (pattern or _ROUTE_PATH).fullmatch(path):
        raise BadRequest(f"path: {rule}")
    return path


def resolve_inside(root: Path, rel: str) -> Path:
    """The path of `rel` inside `root` (it may not exist yet); 400 malformed, 403 escape or symlink."""
    parts = split_rel(rel)
    current = root
    for part in parts:
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            break
        except NotADirectoryError:
            raise PathInTheWay("path: a parent is not a directory")
        if stat.S_ISLNK(st.st_mode):
            raise Forbidden(SYMLINK)
    target = root.joinpath(*parts)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(target)]) != real_root:
        raise Forbidden(ESCAPE)
    return target


def _open_dir(parent_fd: int, name: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        raise NotFound("File not found")
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            except OSError:
                raise NotFound("File not found")
            if stat.S_ISLNK(st.st_mode):
                raise Forbidden(SYMLINK)
            raise PathInTheWay("path: a parent is not a directory")
        raise


@contextlib.contextmanager
def _parent(root: Path, parts: list[str], create: bool) -> Iterator[int]:
    """A descriptor of the directory holding the last name, walked without following links."""
    if create:
        root.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NotFound("File not found")
    try:
        for part in parts[:-1]:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            child = _open_dir(fd, part)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_regular(dir_fd: int, name: str) -> tuple[int, os.stat_result]:
    """Open a regular file without following a link; 404 absent, 403 symlink, 400 anything else."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        raise NotFound("File not found")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Forbidden(SYMLINK)
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise PathInTheWay("path: is a directory" if stat.S_ISDIR(st.st_mode) else "path: not a regular file")
    return fd, st


def read_bytes(root: Path, rel: str, max_bytes: int) -> bytes:
    """The bytes of a regular file inside root (404 absent, 403 symlink, 400 directory or too large)."""
    parts = split_rel(rel)
    with _parent(root, parts, create=False) as dfd:
        fd, st = _open_regular(dfd, parts[-1])
        with os.fdopen(fd, "rb") as fh:
            if st.st_size > max_bytes:
                raise BadRequest(f"File is larger than {max_bytes} bytes")
            data = fh.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise BadRequest(f"File is larger than {max_bytes} bytes")
            return data


def read_text_capped(root: Path, rel: str, cap: int) -> str | None:
    """Up to `cap` bytes of a file as text, or None when it is absent, unsafe or not a regular file."""
    try:
        parts = split_rel(rel)
        with _parent(root, parts, create=False) as dfd:
            fd, _ = _open_regular(dfd, parts[-1])
            with os.fdopen(fd, "rb") as fh:
                return fh.read(cap).decode("utf-8", "replace")
    except (OSError, BadRequest, Forbidden, NotFound):
        return None


def write_bytes(root: Path, rel: str, data: bytes) -> bool:
    """Write a file atomically inside root (parents created); True when it did not exist before."""
    parts = split_rel(rel)
    with _parent(root, parts, create=True) as dfd:
        name = parts[-1]
        st = _lstat_at(dfd, name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise Forbidden(SYMLINK)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise PathInTheWay("path: is a directory")
        tmp = f".tmp-{secrets.token_hex(8)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        return st is None


def delete_path(root: Path, rel: str) -> None:
    """Delete a file or an empty directory inside root (symlinks are refused, not followed)."""
    parts = split_rel(rel)
    with _parent(root, parts, create=False) as dfd:
        st = _lstat_at(dfd, parts[-1])
        if st is None:
            raise NotFound("File not found")
        if stat.S_ISLNK(st.st_mode):
            raise Forbidden(SYMLINK)
        if stat.S_ISDIR(st.st_mode):
            try:
                os.rmdir(parts[-1], dir_fd=dfd)
            except OSError as exc:
                if exc.errno == errno.ENOTEMPTY:
                    raise PathInTheWay("Directory not empty")
                raise
            return
        os.unlink(parts[-1], dir_fd=dfd)


def file_info(rel: str, st: os.stat_result) -> dict[str, Any]:
    modified = iso(dt.datetime.fromtimestamp(st.st_mtime, dt.timezone.utc))
    # filename/fileSize/updateTime: the original console's names for the same values
    return {"path": rel, "size": st.st_size, "modifiedTime": modified, "filename": rel, "fileSize": st.st_size, "updateTime": modified}


def stat_file(root: Path, rel: str) -> dict[str, Any]:
    parts = split_rel(rel)
    with _parent(root, parts, create=False) as dfd:
        st = _lstat_at(dfd, parts[-1])
        if st is None:
            raise NotFound("File not found")
        return file_info("/".join(parts), st)


def walk_files(root: Path, start: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """Regular files under root (or under `start` inside it), never through a symlink, sorted."""
    base = root.joinpath(*split_rel(start)) if start else root
    if start:
        resolve_inside(root, start)
    prefix = "/".join(split_rel(start)) + "/" if start else ""
    stack = [(base, prefix)]
    count = 0
    while stack:
        directory, rel = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name, reverse=True)
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), rel + entry.name + "/"))
            elif entry.is_file(follow_symlinks=False):
                if entry.name.startswith(".tmp-"):
                    continue
                count += 1
                if count > MAX_LIST_ENTRIES:
                    return
                yield rel + entry.name, entry.stat(follow_symlinks=False)


def list_files(root: Path) -> list[dict[str, Any]]:
    """Every regular file of the workspace (relative path, size, modified time), by path."""
    items = [file_info(rel, st) for rel, st in walk_files(root)]
    return sorted(items, key=lambda i: i["path"])
