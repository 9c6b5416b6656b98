"""Upload bodies go to disk as they arrive, and their multipart parts are parsed from there into files.

Buffered in memory, eight concurrent 19.9 MB uploads took the server from 82 to 577 MB: the chunks,
their join, and the parsed part were each a copy. Here the body is written to a private temporary file
in 1 MiB batches (off the IOLoop), then parsed in a worker with python-multipart's streaming parser,
each file part written to its own temporary file. A handler moves a part into place or reads it in a
worker; whatever it did not take is deleted when the request ends. Every function here blocks.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import tornado.httputil

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import python_multipart.exceptions as multipart_errors
    import python_multipart.multipart as multipart
    from python_multipart.multipart import MultipartCallbacks  # a TypedDict defined for type checkers only
else:  # only uploads parse forms, in a worker thread: imported there on first use
    multipart = lazy_import("python_multipart.multipart")
    multipart_errors = lazy_import("python_multipart.exceptions")

SPOOL_DIR = ("tmp", "uploads")  # under the data dir: a part moves into place with a rename
BATCH_BYTES = 1024 * 1024  # written to disk once this much has arrived
READ_BYTES = 1024 * 1024
MAX_FIELD_BYTES = 1024 * 1024  # all the text fields of one form together (files are not counted)


class FormError(Exception):
    """A malformed form body; the message says what is wrong."""


def spool_dir(data_dir: str) -> Path:
    return Path(data_dir).resolve().joinpath(*SPOOL_DIR)


def clear_stale(data_dir: str) -> None:
    """Delete what a stopped process left in the spool folder (at start, before any request)."""
    folder = spool_dir(data_dir)
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)


def _new_file(folder: Path, prefix: str) -> tuple[int, Path]:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=folder, prefix=prefix)
    return fd, Path(name)


@dataclass
class UploadedFile:
    """One file part of a multipart body, on disk until a handler takes it."""

    filename: str
    content_type: str
    path: Path
    size: int = 0

    def read(self) -> bytes:
        return self.path.read_bytes()

    def move_to(self, dest: Path) -> None:
        """Move the part's file into place (a rename: the spool folder is inside the data dir)."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.path, dest)


@dataclass
class BodySpool:
    """A request body written to a temporary file as it arrives."""

    folder: Path
    path: Path | None = None
    size: int = 0
    pending: list[bytes] = field(default_factory=list)
    pending_bytes: int = 0
    parts: list[UploadedFile] = field(default_factory=list)
    closed: bool = False  # the request ended: a batch still being written is not kept

    def add(self, chunk: bytes) -> bool:
        """Keep a chunk (on the IOLoop); True when a batch is due to be written with `flush`."""
        self.pending.append(chunk)
        self.pending_bytes += len(chunk)
        self.size += len(chunk)
        return self.pending_bytes >= BATCH_BYTES

    def flush(self) -> None:
        chunks, self.pending, self.pending_bytes = self.pending, [], 0
        if self.closed:
            return
        if self.path is None:
            fd, self.path = _new_file(self.folder, "body-")
            os.close(fd)
        with open(self.path, "ab") as fh:
            for chunk in chunks:
                fh.write(chunk)

    def read_all(self) -> bytes:
        self.flush()
        assert self.path is not None
        return self.path.read_bytes()

    def cleanup(self) -> None:
        """Delete the body and every part no handler took."""
        self.closed = True
        for path in [self.path, *(p.path for p in self.parts)]:
            if path is not None:
                with contextlib.suppress(OSError):
                    path.unlink()

    def parse_form(self, content_type: str, headers: tornado.httputil.HTTPHeaders) -> tuple[dict[str, list[bytes]], dict[str, list[UploadedFile]]]:
        """Text fields and file parts of a multipart (or urlencoded) body."""
        self.flush()
        if not content_type.lower().startswith("multipart/form-data"):
            args: dict[str, list[bytes]] = {}
            if content_type.lower().startswith("application/x-www-form-urlencoded"):
                if self.size > MAX_FIELD_BYTES:
                    raise FormError(f"the form's text fields exceed {MAX_FIELD_BYTES} bytes")
                tornado.httputil.parse_body_arguments(content_type, self.read_all(), args, {}, headers)
            return args, {}
        _, options = multipart.parse_options_header(content_type)
        boundary = options.get(b"boundary")
        if not boundary:
            raise FormError("multipart body without a boundary")
        form = _Form(self)
        parser = multipart.MultipartParser(boundary, form.callbacks())
        assert self.path is not None
        try:
            with open(self.path, "rb") as fh:
                while block := fh.read(READ_BYTES):
                    parser.write(block)
            parser.finalize()
            if not form.complete:  # a cut-off body: its last part may be cut off too
                raise FormError("the body ends before its closing boundary")
        except multipart_errors.MultipartParseError as exc:
            raise FormError(str(exc)) from None
        finally:
            form.close_file()
        return form.args, form.files


class _Form:
    """python-multipart's callbacks: headers per part, text fields in memory, file parts to disk."""

    def __init__(self, spool: BodySpool) -> None:
        self.spool = spool
        self.args: dict[str, list[bytes]] = {}
        self.files: dict[str, list[UploadedFile]] = {}
        self.field_bytes = 0
        self.complete = False  # the closing boundary was seen
        self._headers: dict[bytes, bytes] = {}
        self._name, self._value = b"", b""
        self._part_name = ""
        self._text: bytearray | None = None
        self._file: UploadedFile | None = None
        self._fh: int | None = None

    def callbacks(self) -> MultipartCallbacks:
        return {
            "on_part_begin": self._begin,
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._data,
            "on_part_end": self._end,
            "on_end": self._complete,
        }

    def _complete(self) -> None:
        self.complete = True

    def _begin(self) -> None:
        self._headers, self._name, self._value = {}, b"", b""

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._name += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._name.strip().lower()] = self._value.strip()
        self._name, self._value = b"", b""

    def _headers_finished(self) -> None:
        _, options = multipart.parse_options_header(self._headers.get(b"content-disposition", b""))
        self._part_name = options.get(b"name", b"").decode("utf-8", "replace")
        filename = options.get(b"filename")
        if not filename:  # as Tornado's parser had it: no (or an empty) file name makes a text field
            self._text = bytearray()
            return
        fd, path = _new_file(self.spool.folder, "part-")
        ctype = self._headers.get(b"content-type", b"application/octet-stream").decode("latin-1")
        self._fh, self._file = fd, UploadedFile(filename.decode("utf-8", "replace"), ctype, path)
        self.spool.parts.append(self._file)

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._file is not None and self._fh is not None:
            view = memoryview(data)[start:end]
            while view:
                view = view[os.write(self._fh, view) :]
            self._file.size += end - start
        elif self._text is not None:
            self.field_bytes += end - start
            if self.field_bytes > MAX_FIELD_BYTES:
                raise FormError(f"the form's text fields exceed {MAX_FIELD_BYTES} bytes")
            self._text += data[start:end]

    def _end(self) -> None:
        if self._file is not None:
            self.files.setdefault(self._part_name, []).append(self._file)
            self.close_file()
        elif self._text is not None:
            self.args.setdefault(self._part_name, []).append(bytes(self._text))
        self._text, self._file = None, None

    def close_file(self) -> None:
        if self._fh is not None:
            os.close(self._fh)
            self._fh = None
