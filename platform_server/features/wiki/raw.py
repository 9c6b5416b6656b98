"""Raw materials: add (text or file), list with page counts, delete, download, state changes."""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import peewee

from platform_server.config import Config
from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.wiki import search
from platform_server.features.wiki.kbs import config_of, get_kb, kb_dir
from platform_server.features.wiki.models import Chunk, Job, KnowledgeBase, PageSource, RawMaterial
from platform_server.features.wiki.text import content_type_for, extract_text, suffix_of
from platform_server.serialize import GIVEN, Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound, PayloadTooLarge
from platform_server.web.ownership import require_creator_or_admin

MAX_TEXT_CHARS = 2_000_000  # extracted text of one material


@dataclass
class Prepared:
    """A stored file and its extracted text, ready for a row."""

    stored_name: str
    content_type: str
    size: int
    content_hash: str
    text: str


def raw_dir(config: Config, kb_id: int) -> Path:
    return kb_dir(config, kb_id) / "raw"


def stored_path(config: Config, raw: RawMaterial) -> Path:
    """The material's file; the generated name never comes from the client."""
    root = raw_dir(config, raw.kb_id).resolve()
    path = (root / raw.stored_name).resolve()
    if path.parent != root:
        raise NotFound("Raw material file not found")
    return path


def prepare(config: Config, kb_id: int, data: bytes, file_name: str) -> Prepared:
    """Check size and type, extract the text and store the bytes under a generated name (blocking)."""
    limit = config.wiki_max_material_bytes
    if len(data) > limit:
        raise PayloadTooLarge(f"Material exceeds {limit} bytes")
    ctype = content_type_for(file_name)
    text = extract_text(data, ctype)
    if not text.strip():
        raise BadRequest("The material holds no text")
    if len(text) > MAX_TEXT_CHARS:
        raise BadRequest(f"The material's text exceeds {MAX_TEXT_CHARS} characters")
    folder = raw_dir(config, kb_id)
    folder.mkdir(parents=True, exist_ok=True)
    stored = secrets.token_hex(16) + suffix_of(file_name)
    tmp = folder / (stored + ".part")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, folder / stored)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk leaves no half file behind
        raise
    return Prepared(stored, ctype, len(data), hashlib.sha256(data).hexdigest(), text)


def discard(config: Config, kb_id: int, stored_name: str) -> None:
    """Remove a stored file (blocking)."""
    try:
        (raw_dir(config, kb_id) / stored_name).unlink()
    except FileNotFoundError:
        pass


def page_counts(raw_ids: list[int]) -> dict[int, int]:
    if not raw_ids:
        return {}
    q = PageSource.select(PageSource.raw, peewee.fn.COUNT(PageSource.id).alias("n")).where(PageSource.raw.in_(raw_ids)).group_by(PageSource.raw)
    return {row.raw_id: row.n for row in q}


RAW_FIELDS = Fields(
    id=ident("id"),
    kbId=ident("kb_id"),
    title="title",
    sourceType="source_type",
    fileName="file_name",
    contentType="content_type",
    sizeBytes="size_bytes",
    contentHash="content_hash",
    status="status",
    processingStatus="status",  # the original console's name for `status`
    error="error",
    errorMessage="error",  # the original console's name for `error`
    chunkCount="chunk_count",
    pageCount=GIVEN,
    sourcePath="source_path",
    removed=flag("removed"),
    textLength=lambda raw: len(raw.text or ""),
    createTime=when("create_time"),
    updateTime=when("update_time"),
    processedTime=when("processed_time"),
)


def to_dict(raw: RawMaterial, pages: int | None = None) -> dict[str, Any]:
    """The material; `pages` (its page count) when the caller counted a whole list at once."""
    return RAW_FIELDS(raw, pageCount=page_counts([raw.id]).get(raw.id, 0) if pages is None else pages)


def get_raw(caller: Caller, kb_id: int, raw_id: int) -> RawMaterial:
    raw = RawMaterial.get_or_none((RawMaterial.id == raw_id) & (RawMaterial.kb == kb_id) & (RawMaterial.workspace_id == caller.workspace_id))
    if raw is None:
        raise NotFound("Raw material not found")
    return raw


def create(
    caller: Caller | None, kb: KnowledgeBase, title: str, source_type: str, file_name: str, prep: Prepared, source_path: str | None = None
) -> tuple[RawMaterial, bool]:
    """Insert the row; returns it and whether it should be queued now (the KB's autoProcess)."""
    auto = bool(config_of(kb)["autoProcess"])
    raw = RawMaterial(
        kb=kb.id,
        workspace_id=kb.workspace_id,
        creator_user_id=caller.user_id if caller else None,
        title=title.strip()[:200],
        source_type=source_type,
        file_name=file_name[:255],
        stored_name=prep.stored_name,
        content_type=prep.content_type,
        size_bytes=prep.size,
        content_hash=prep.content_hash,
        text=prep.text,
        status="pending",
        queued=auto,
        source_path=source_path,
    )
    audit.save(caller, "CREATE", "WIKI_RAW", raw, f"material {raw.title} in {kb.name}", workspace_id=kb.workspace_id)
    return raw, auto


def list_raw(caller: Caller, kb_id: int, status: str | None) -> list[dict[str, Any]]:
    kb = get_kb(caller, kb_id)
    q = RawMaterial.select().where(RawMaterial.kb == kb.id)
    if status:
        q = q.where(RawMaterial.status == status)
    rows = list(q.order_by(RawMaterial.create_time.desc(), RawMaterial.id.desc()))
    counts = page_counts([r.id for r in rows])
    return [to_dict(r, counts.get(r.id, 0)) for r in rows]


def delete(caller: Caller, kb_id: int, raw_id: int) -> RawMaterial:
    """Delete the row, its chunks and citations (pages stay); the caller removes the file."""
    with database.atomic():
        raw = get_raw(caller, kb_id, raw_id)
        # A folder-synced material (no creator) is the KB's: deleting it needs the KB's creator or an admin.
        owner = raw.creator_user_id if raw.creator_user_id is not None else raw.kb.creator_user_id
        require_creator_or_admin(caller, owner, "material")
        chunk_ids = [c.id for c in Chunk.select(Chunk.id).where(Chunk.raw == raw.id)]
        search.fts_drop_chunks(chunk_ids)
        raw.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "WIKI_RAW", raw.id, f"material {raw.title}")
    return raw


def check_cancellable(caller: Caller, kb_id: int, raw_id: int) -> RawMaterial:
    raw = get_raw(caller, kb_id, raw_id)
    if raw.status != "processing":
        raise Conflict(f"Cancel is valid only while processing (status: {raw.status})")
    return raw


def mark_cancelled(caller: Caller | None, raw_id: int) -> RawMaterial | None:
    with database.atomic():
        raw = RawMaterial.get_or_none(RawMaterial.id == raw_id)
        if raw is None:
            return None
        raw.status, raw.queued, raw.error, raw.update_time = "cancelled", False, "Cancelled by request", utcnow()
        raw.save()
        if caller is not None:
            audit.record(caller, "UPDATE", "WIKI_RAW", raw.id, f"cancel processing of {raw.title}")
    return raw


def requeue(caller: Caller, kb_id: int, raw_id: int, force: bool) -> RawMaterial:
    """Back to pending and queued; force forgets the last processed hash."""
    with database.atomic():
        raw = get_raw(caller, kb_id, raw_id)
        if raw.status == "processing":
            raise Conflict("The material is already processing")
        _requeue(raw, force)
        audit.record(caller, "UPDATE", "WIKI_RAW", raw.id, f"reprocess {raw.title}{' (force)' if force else ''}")
    return raw


def _requeue(raw: RawMaterial, force: bool) -> None:
    raw.status, raw.queued, raw.error, raw.update_time = "pending", True, None, utcnow()
    if force:
        raw.last_processed_hash = None
    raw.save()


def requeue_kb(caller: Caller, kb_id: int, force: bool) -> list[int]:
    """Queue the KB's materials that need work (all of them with force); returns their ids."""
    with database.atomic():
        kb = get_kb(caller, kb_id)
        ids = []
        for raw in RawMaterial.select().where((RawMaterial.kb == kb.id) & (RawMaterial.status != "processing")):
            if force or raw.status != "completed" or raw.last_processed_hash != raw.content_hash:
                _requeue(raw, force)
                ids.append(raw.id)
        audit.record(caller, "UPDATE", "WIKI_KB", kb.id, f"process {len(ids)} materials{' (force)' if force else ''}")
    return ids


def jobs(caller: Caller, kb_id: int, raw_id: int | None, limit: int) -> list[dict[str, Any]]:
    """The KB's processing jobs, newest first."""
    kb = get_kb(caller, kb_id)
    q = Job.select().where(Job.kb == kb.id)
    if raw_id is not None:
        q = q.where(Job.raw_id == raw_id)
    return [
        {
            "id": str(j.id),
            "kbId": str(j.kb_id),
            "rawId": None if j.raw_id is None else str(j.raw_id),
            "kind": j.kind,
            "status": j.status,
            "steps": j.steps,
            "error": j.error,
            "pagesWritten": j.pages_written,
            "createTime": iso(j.create_time),
            "endTime": iso(j.end_time),
        }
        for j in q.order_by(Job.create_time.desc(), Job.id.desc()).limit(limit)
    ]
