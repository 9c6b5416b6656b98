"""Chat attachments: generated stored names, uploader-only reads, image parts for vision models."""

from __future__ import annotations

import base64
import mimetypes
import re
import secrets
from pathlib import Path
from typing import Protocol

from platform_server.blocking import run_blocking
from platform_server.db import database, iso
from platform_server.features.chat.models import Upload
from platform_server.json_types import JsonObject
from platform_server.ports import files as file_store
from platform_server.web.errors import BadRequest, Forbidden, NotFound

FILES_PREFIX = "/api/v1/chat/files/"
_EXTENSION = re.compile(r"^[a-z0-9]{1,8}$")
_STORED_NAME = re.compile(r"^[a-f0-9]{32}(\.[a-z0-9]{1,8})?$")
MAX_IMAGE_DATA_URL = 10 * 1024 * 1024


def upload_root() -> Path:
    return file_store.current().path("uploads")


def _path(user_id: int, stored_name: str) -> Path:
    if not _STORED_NAME.match(stored_name):
        raise NotFound("File not found")
    return upload_root() / str(user_id) / stored_name


class SpooledPart(Protocol):
    """An uploaded file already on disk (web/spool.py): moved into place, never read into memory."""

    size: int

    def move_to(self, dest: Path) -> None: ...


def _write(path: Path, body: bytes | SpooledPart) -> None:
    """Written whole or not at all: a `.part` file renamed into place, removed when the write fails
    (a full disk); one a crash left behind is removed at the next start (`storage.remove_partial_files`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    try:
        if isinstance(body, bytes):
            partial.write_bytes(body)
        else:
            body.move_to(partial)
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _discard(path: Path) -> None:
    path.unlink(missing_ok=True)


async def store(user_id: int, conversation_id: str, filename: str, body: bytes | SpooledPart, content_type: str | None) -> JsonObject:
    """Save an upload under a generated name (written off the IOLoop); the client's file name is only metadata."""
    name = Path(filename.replace("\\", "/")).name[:200] or "file"
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    stored = secrets.token_hex(16) + (f".{ext}" if _EXTENSION.match(ext) else "")
    kind = (content_type or "").split(";")[0].strip() or mimetypes.guess_type(name)[0] or "application/octet-stream"
    path = _path(user_id, stored)
    size = len(body) if isinstance(body, bytes) else body.size
    await run_blocking(_write, path, body)
    try:
        with database.atomic():
            row = Upload.create(stored_name=stored, user_id=user_id, conversation_id=conversation_id, name=name, size=size, content_type=kind)
    except BaseException:
        await run_blocking(_discard, path)  # no row: the file would be kept for nobody
        raise
    return {
        "storedName": stored,
        "url": f"{FILES_PREFIX}{conversation_id}/{stored}",
        "name": name,
        "size": size,
        "contentType": kind,
        "createTime": iso(row.create_time),
    }


def open_upload(user_id: int, conversation_id: str, stored_name: str) -> tuple[Path, Upload]:
    """The file of an upload, for its uploader only (403 for anyone else, 404 when unknown)."""
    row = Upload.get_or_none(Upload.stored_name == stored_name)
    if row is None or row.conversation_id != conversation_id:
        raise NotFound("File not found")
    if row.user_id != user_id:
        raise Forbidden("Not the uploader of this file")
    path = _path(user_id, stored_name)
    if not path.is_file():
        raise NotFound("File not found")
    return path, row


def check_parts(user_id: int, parts: list[JsonObject] | None) -> list[JsonObject] | None:
    """Validate contentParts: text, or images from the caller's uploads or data: URLs (never http)."""
    if parts is None:
        return None
    for p in parts:
        kind = p.get("type")
        if kind == "text":
            if not isinstance(p.get("text"), str):
                raise BadRequest("contentParts.text: must be a string")
        elif kind == "image":
            url = p.get("url")
            if not isinstance(url, str) or not url:
                raise BadRequest("contentParts.url: required for an image part")
            if url.startswith("data:"):
                if not re.match(r"^data:image/[a-z0-9.+-]+;base64,", url) or len(url) > MAX_IMAGE_DATA_URL:
                    raise BadRequest("contentParts.url: data URLs must be base64 images")
            elif url.startswith(FILES_PREFIX):
                _, stored = _split_files_url(url)
                row = Upload.get_or_none(Upload.stored_name == stored)
                if row is None or row.user_id != user_id:
                    raise BadRequest("contentParts.url: not one of your uploads")
            else:
                raise BadRequest("contentParts.url: only your uploads or data: URLs are accepted")
        else:
            raise BadRequest("contentParts.type: must be text or image")
    return parts


def _split_files_url(url: str) -> tuple[str, str]:
    rest = url[len(FILES_PREFIX) :]
    conversation_id, _, stored = rest.rpartition("/")
    if not conversation_id or not stored:
        raise BadRequest("contentParts.url: malformed upload URL")
    return conversation_id, stored


def image_data_url(user_id: int, url: str, content_type: str | None) -> str | None:
    """A data: URL for an image part (the model never fetches an address)."""
    if url.startswith("data:"):
        return url
    if not url.startswith(FILES_PREFIX):
        return None
    conversation_id, stored = _split_files_url(url)
    try:
        path, row = open_upload(user_id, conversation_id, stored)
    except (NotFound, Forbidden):
        return None
    kind = content_type or row.content_type or "application/octet-stream"
    return f"data:{kind};base64," + base64.b64encode(path.read_bytes()).decode()
