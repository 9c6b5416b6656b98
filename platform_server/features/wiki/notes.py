"""A note becomes a page as it is, with no LLM: its title, its headings and its [[links]] kept.

The page-writing LLM call is a digest that only a model able to write JSON can do; the embedded demo model
held the model for minutes per material and then failed. Without such a model (or when the knowledge base
asks for it) each material is one page: the title from its first heading (else its file name), the text as
its markdown (so headings and wikilinks stay), cited to all its chunks, embedded by the embedding model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Callable

from platform_server.db import database, utcnow
from platform_server.features.wiki import search, sync
from platform_server.features.wiki.models import KnowledgeBase, Page, PageCitation, PageSource, RawMaterial
from platform_server.features.wiki.pages import set_links
from platform_server.features.wiki.text import slugify

HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
FRONT_TITLE = re.compile(r"\A---\n(?:.*\n)*?title:[ \t]*[\"']?(.+?)[\"']?[ \t]*\n(?:.*\n)*?---\n")
MAX_CITED_CHUNKS = 200


@dataclass(frozen=True)
class NotePage:
    slug: str
    title: str
    markdown: str


def title_of(text: str, fallback: str) -> str:
    """The front matter's `title:`, else the first heading, else the fallback (the file name)."""
    front = FRONT_TITLE.match(text)
    if front:
        return front.group(1).strip()[:200] or fallback
    first = HEADING.search(text)
    return (first.group(1).strip()[:200] if first else "") or fallback


def note_of(raw: RawMaterial, text: str) -> NotePage:
    """The page of a material: slug from its file name (how [[links]] between notes name each other)."""
    stem = PurePosixPath(raw.file_name or "").stem
    title = title_of(text, raw.title or stem or "Untitled")
    slug = slugify(stem) or slugify(title) or f"note-{raw.id}"
    return NotePage(slug, title, text.strip())


def _free_slug(kb_id: int, raw_id: int, slug: str) -> Page | str:
    """This material's page under the slug, or a slug no other material's page holds."""
    n = 1
    candidate = slug
    while True:
        page = Page.get_or_none((Page.kb == kb_id) & (Page.slug == candidate))
        if page is None:
            return candidate
        if PageSource.get_or_none((PageSource.page == page.id) & (PageSource.raw == raw_id)) is not None:
            return page
        n += 1
        candidate = f"{slug[:110]}-{n}"


def store(
    kb: KnowledgeBase,
    raw: RawMaterial,
    note: NotePage,
    page_type: str,
    blob: bytes,
    chunk_ids: list[int],
    alive: Callable[[int], Any],
    model_id: int | None = None,
) -> int:
    """Write the note's page with its links, index row, source and citations (blocking: in an executor); a page
    a person edited keeps its text and gets the note's new version as its pending change (wiki/sync.py)."""
    with database.atomic("IMMEDIATE"):
        alive(raw.id)
        found = _free_slug(kb.id, raw.id, note.slug)
        if isinstance(found, str):
            page = Page.create(
                kb=kb.id,
                workspace_id=kb.workspace_id,
                slug=found,
                title=note.title,
                page_type=page_type,
                markdown=note.markdown,
                origin="note",
                embedding=blob,
                dims=len(blob) // 4,
                embed_model=model_id,
            )
        elif sync.hold_for_review(found, raw.id, note.title, found.page_type, note.markdown, blob):
            page = found
            page.save(only=[Page.pending, Page.pending_embedding])  # a person's text stays as it is
        else:
            page = found
            page.title, page.markdown, page.embedding, page.dims = note.title, note.markdown, blob, len(blob) // 4
            page.embed_model = model_id
            sync.revive(page)  # the note is back
            page.version += 1
            page.update_time = utcnow()
            page.save()
        if page.origin != "manual":
            set_links(page)
            search.fts_put_page(page)
        PageSource.insert(page=page.id, raw=raw.id).on_conflict_ignore().execute()
        for cid in chunk_ids[:MAX_CITED_CHUNKS]:
            PageCitation.insert(page=page.id, chunk=cid, kb_id=kb.id).on_conflict_ignore().execute()
    return int(page.id)
