"""The one ZIP safety check: opening an uploaded archive, naming its entries safely, reading them capped.

Used by the agent memory import and the skill ZIP install; each words its own refusals."""

from __future__ import annotations

import io
import stat
import zipfile

from platform_server.features.agents import files
from platform_server.web.errors import ApiError, BadRequest

READ_ERRORS = (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError)


def open_zip(archive: bytes) -> zipfile.ZipFile:
    """The archive opened for reading; 400 when empty or not a ZIP."""
    if not archive:
        raise BadRequest("file: a ZIP archive is required")
    try:
        return zipfile.ZipFile(io.BytesIO(archive))
    except (zipfile.BadZipFile, ValueError, OSError):
        raise BadRequest("file: not a ZIP archive")


def file_entries(zf: zipfile.ZipFile, max_entries: int) -> list[zipfile.ZipInfo]:
    """The archive's file entries (no directories); 400 above `max_entries`."""
    infos = [i for i in zf.infolist() if not i.is_dir()]
    if len(infos) > max_entries:
        raise BadRequest(f"file: more than {max_entries} entries")
    return infos


class UnsafeEntry(Exception):
    """An entry that must not be extracted; `kind` is symlink, encrypted, nul or path (`msg` says why)."""

    def __init__(self, kind: str, msg: str = "") -> None:
        super().__init__(msg or kind)
        self.kind = kind
        self.msg = msg


def entry_path(info: zipfile.ZipInfo, name: str | None = None) -> str:
    """The entry's normalised relative path; UnsafeEntry for a symbolic link, an encrypted entry,
    a NUL byte or a path that leaves the root (absolute, `..`, ...)."""
    raw = info.filename if name is None else name
    if stat.S_ISLNK(info.external_attr >> 16):
        raise UnsafeEntry("symlink")
    if info.flag_bits & 0x1:
        raise UnsafeEntry("encrypted")
    if "\x00" in raw:
        raise UnsafeEntry("nul")
    try:
        return "/".join(files.split_rel(raw))
    except ApiError as exc:
        raise UnsafeEntry("path", exc.msg)


def read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, shown: str, limit: int) -> bytes:
    """At most `limit` bytes of an entry; 400 when unreadable or larger than its header (or `limit`) says."""
    try:
        with zf.open(info) as fh:
            data = fh.read(min(info.file_size, limit) + 1)
    except READ_ERRORS:
        raise BadRequest(f"file: entry '{shown}' cannot be read")
    if len(data) > info.file_size or len(data) > limit:
        raise BadRequest(f"file: entry '{shown}' is larger than its header says")
    return data
