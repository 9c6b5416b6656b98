"""Knowledge bases, raw materials, chunks (with embeddings), pages, links, citations and jobs."""
from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow

RAW_STATES = ("pending", "processing", "completed", "failed", "partial", "cancelled")


class KnowledgeBase(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    creator_user_id = peewee.BigIntegerField(null=True)
    name = peewee.CharField()
    description = peewee.TextField(default="")
    config = JSONField(default=dict)  # see kbs.DEFAULT_CONFIG
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "wiki_kb"


class KbAgent(BaseModel):
    """An agent bound to a KB besides its primaryKbId (agents are another area; no foreign key)."""

    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE")
    agent_id = peewee.BigIntegerField(index=True)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "wiki_kb_agent"
        indexes = ((("kb", "agent_id"), True),)


class RawMaterial(BaseModel):
    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    workspace_id = peewee.BigIntegerField(index=True)
    creator_user_id = peewee.BigIntegerField(null=True)
    title = peewee.CharField()
    source_type = peewee.CharField(default="text")  # text | upload | directory
    file_name = peewee.CharField(default="")  # the client's name, shown only
    stored_name = peewee.CharField()  # generated; under <data_dir>/wiki/<kbId>/raw/
    content_type = peewee.CharField(default="text/plain")
    size_bytes = peewee.BigIntegerField(default=0)
    content_hash = peewee.CharField(default="")
    last_processed_hash = peewee.CharField(null=True)
    text = peewee.TextField(default="")  # extracted text
    status = peewee.CharField(default="pending", index=True)
    queued = BooleanField(default=False)  # waiting in the processing queue (survives restarts)
    error = peewee.TextField(null=True)
    chunk_count = peewee.IntegerField(default=0)
    source_path = peewee.CharField(null=True)  # relative path inside a linked source directory
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)
    processed_time = DateTimeField(null=True)

    class Meta:
        table_name = "wiki_raw"


class Chunk(BaseModel):
    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    raw = peewee.ForeignKeyField(RawMaterial, on_delete="CASCADE", index=True)  # type: ignore[assignment]  # shadows Model.raw()
    position = peewee.IntegerField()
    text = peewee.TextField()
    embedding = peewee.BlobField(null=True)  # float32, normalised
    dims = peewee.IntegerField(default=0)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "wiki_chunk"


class Page(BaseModel):
    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    workspace_id = peewee.BigIntegerField(index=True)
    slug = peewee.CharField()
    title = peewee.CharField()
    page_type = peewee.CharField(default="concept")
    markdown = peewee.TextField(default="")
    archived = peewee.IntegerField(default=0)  # 0/1 as the spec sends it
    origin = peewee.CharField(default="generated")  # generated | manual
    version = peewee.IntegerField(default=1)
    embedding = peewee.BlobField(null=True)
    dims = peewee.IntegerField(default=0)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "wiki_page"
        indexes = ((("kb", "slug"), True),)


class PageLink(BaseModel):
    """A [[wikilink]] in a page; the target is kept as its slug form and resolved when read."""

    page = peewee.ForeignKeyField(Page, on_delete="CASCADE", index=True)
    kb_id = peewee.BigIntegerField(index=True)
    target_slug = peewee.CharField(index=True)
    target_text = peewee.CharField()

    class Meta:
        table_name = "wiki_page_link"


class PageCitation(BaseModel):
    page = peewee.ForeignKeyField(Page, on_delete="CASCADE", index=True)
    chunk = peewee.ForeignKeyField(Chunk, on_delete="CASCADE", index=True)
    kb_id = peewee.BigIntegerField(index=True)

    class Meta:
        table_name = "wiki_page_citation"
        indexes = ((("page", "chunk"), True),)


class PageSource(BaseModel):
    """A raw material a page was generated (or updated) from."""

    page = peewee.ForeignKeyField(Page, on_delete="CASCADE", index=True)
    raw = peewee.ForeignKeyField(RawMaterial, on_delete="CASCADE", index=True)  # type: ignore[assignment]  # shadows Model.raw()

    class Meta:
        table_name = "wiki_page_source"
        indexes = ((("page", "raw"), True),)


class Job(BaseModel):
    """One processing run of one material, with its steps."""

    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    raw_id = peewee.BigIntegerField(null=True, index=True)
    kind = peewee.CharField(default="process")
    status = peewee.CharField(default="running")  # running | completed | failed | partial | cancelled | skipped
    steps = JSONField(default=list)
    error = peewee.TextField(null=True)
    pages_written = peewee.IntegerField(default=0)
    create_time = DateTimeField(default=utcnow)
    end_time = DateTimeField(null=True)

    class Meta:
        table_name = "wiki_job"


class LintRun(BaseModel):
    """One broken-link scan of a KB."""

    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    status = peewee.CharField(default="running")  # running | completed | failed
    result = JSONField(null=True)
    error = peewee.TextField(null=True)
    create_time = DateTimeField(default=utcnow)
    end_time = DateTimeField(null=True)

    class Meta:
        table_name = "wiki_lint_run"


def _fts(db: peewee.Database) -> None:
    # rowid = Chunk.id / Page.id; kept in step with the tables by the services.
    db.execute_sql("CREATE VIRTUAL TABLE IF NOT EXISTS wiki_chunk_fts USING fts5(text, kb_id UNINDEXED)")
    db.execute_sql("CREATE VIRTUAL TABLE IF NOT EXISTS wiki_page_fts USING fts5(title, body, kb_id UNINDEXED)")


MIGRATIONS: list[Migration] = [
    ("wiki_0001_tables", create_tables(KnowledgeBase, KbAgent, RawMaterial, Chunk, Page, PageLink, PageCitation,
                                       PageSource, Job)),
    ("wiki_0002_fts", _fts),
    ("wiki_0003_lint", create_tables(LintRun)),
]
