"""Knowledge bases, raw materials, chunks (with embeddings), pages, links, citations and jobs."""

from __future__ import annotations

import json

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
    source_mtime = peewee.BigIntegerField(null=True)  # st_mtime_ns of the source file when last read
    removed = BooleanField(default=False)  # its source file was deleted (its pages are archived)
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
    embed_model = peewee.BigIntegerField(null=True)  # the embedding model that made it (null: unknown, re-embedded)
    token_count = peewee.IntegerField(null=True)  # filled by the token backfill
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
    archived_reason = peewee.CharField(null=True)  # why a sync archived it (null: a person did, or not archived)
    pending = JSONField(null=True)  # a re-sync's version of a hand-edited page, to review (see wiki/sync.py)
    pending_embedding = peewee.BlobField(null=True)
    origin = peewee.CharField(default="generated")  # generated | manual
    version = peewee.IntegerField(default=1)
    embedding = peewee.BlobField(null=True)
    dims = peewee.IntegerField(default=0)
    embed_model = peewee.BigIntegerField(null=True)  # the embedding model that made it (null: unknown, re-embedded)
    token_count = peewee.IntegerField(null=True)  # filled by the token backfill
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


class PageTypePermission(BaseModel):
    """What one agent may do with pages of one type in one KB (`*`: every type without its own rule)."""

    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    agent_id = peewee.BigIntegerField(index=True)
    page_type = peewee.CharField()
    read = peewee.CharField(default="allow")  # allow | deny
    write = peewee.CharField(default="allow")  # allow | deny | approval_required
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "wiki_page_type_permission"
        indexes = ((("kb", "agent_id", "page_type"), True),)


class Transformation(BaseModel):
    """A prompt template applied to a material or a page (`{{content}}`, `{{title}}` are filled in)."""

    workspace_id = peewee.BigIntegerField(index=True)
    kb_id = peewee.BigIntegerField(null=True, index=True)  # null: every KB of the workspace
    creator_user_id = peewee.BigIntegerField(null=True)
    name = peewee.CharField()
    description = peewee.TextField(default="")
    prompt = peewee.TextField()
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "wiki_transformation"


class TransformationRun(BaseModel):
    transformation = peewee.ForeignKeyField(Transformation, on_delete="CASCADE", index=True)
    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField(null=True)
    target_type = peewee.CharField()  # raw | page | kb (an aggregate)
    target_id = peewee.BigIntegerField(null=True)
    target_title = peewee.CharField(default="")
    status = peewee.CharField(default="running", index=True)  # running | completed | failed | cancelled
    output = peewee.TextField(null=True)
    error = peewee.TextField(null=True)
    page_slug = peewee.CharField(null=True)  # the page it was saved as
    create_time = DateTimeField(default=utcnow)
    end_time = DateTimeField(null=True)

    class Meta:
        table_name = "wiki_transformation_run"


class Pipeline(BaseModel):
    """A processing pipeline of a KB: an ordered list of steps from a fixed catalogue."""

    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    name = peewee.CharField()
    description = peewee.TextField(default="")
    enabled = BooleanField(default=True)  # the newest enabled pipeline processes the KB's materials
    steps = JSONField(default=list)
    creator_user_id = peewee.BigIntegerField(null=True)  # null: made before creators were kept (admins only)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "wiki_pipeline"
        indexes = ((("kb", "name"), True),)


class PipelineRun(BaseModel):
    pipeline = peewee.ForeignKeyField(Pipeline, on_delete="CASCADE", index=True)
    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", index=True)
    raw_id = peewee.BigIntegerField(null=True, index=True)
    status = peewee.CharField(default="running")  # running | completed | failed | partial | cancelled
    steps = JSONField(default=list)  # [{type, status, startTime, endTime, durationMs, error, detail}]
    error = peewee.TextField(null=True)
    create_time = DateTimeField(default=utcnow)
    end_time = DateTimeField(null=True)

    class Meta:
        table_name = "wiki_pipeline_run"


class HotCache(BaseModel):
    """A KB's digest of its most-linked and most-recent pages, added to its agents' system prompts."""

    kb = peewee.ForeignKeyField(KnowledgeBase, on_delete="CASCADE", unique=True)
    status = peewee.CharField(default="pending")  # pending | building | ready | failed
    content = peewee.TextField(default="")
    token_count = peewee.IntegerField(default=0)
    pages = JSONField(default=list)  # slugs in the digest
    error = peewee.TextField(null=True)
    deleted = BooleanField(default=False)
    generated_time = DateTimeField(null=True)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "wiki_hot_cache"


def _fts(db: peewee.Database) -> None:
    # rowid = Chunk.id / Page.id; kept in step with the tables by the services.
    if isinstance(db, peewee.PostgresqlDatabase):
        # PostgreSQL: plain tables with the same columns (so the services' writes are the same SQL) and
        # a generated tsvector under a GIN index; 'simple' does not stem, as FTS5's unicode61 does not.
        db.execute_sql(
            "CREATE TABLE IF NOT EXISTS wiki_chunk_fts (rowid BIGINT PRIMARY KEY, text TEXT, kb_id BIGINT,"
            " tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(text, ''))) STORED)"
        )
        db.execute_sql(
            "CREATE TABLE IF NOT EXISTS wiki_page_fts (rowid BIGINT PRIMARY KEY, title TEXT, body TEXT, kb_id BIGINT,"
            " tsv tsvector GENERATED ALWAYS AS (setweight(to_tsvector('simple', coalesce(title, '')), 'A')"
            " || to_tsvector('simple', coalesce(body, ''))) STORED)"
        )
        for table in ("wiki_chunk_fts", "wiki_page_fts"):
            db.execute_sql(f"CREATE INDEX IF NOT EXISTS {table}_tsv ON {table} USING GIN (tsv)")
            db.execute_sql(f"CREATE INDEX IF NOT EXISTS {table}_kb ON {table} (kb_id)")
        return
    db.execute_sql("CREATE VIRTUAL TABLE IF NOT EXISTS wiki_chunk_fts USING fts5(text, kb_id UNINDEXED)")
    db.execute_sql("CREATE VIRTUAL TABLE IF NOT EXISTS wiki_page_fts USING fts5(title, body, kb_id UNINDEXED)")


def _source_columns(db: peewee.Database) -> None:
    # A fresh database already has them: wiki_0001 creates the table from the current model.
    have = {c.name for c in db.get_columns("wiki_raw")}
    if "source_mtime" not in have:
        db.execute_sql("ALTER TABLE wiki_raw ADD COLUMN source_mtime INTEGER")
    if "removed" not in have:
        db.execute_sql("ALTER TABLE wiki_raw ADD COLUMN removed INTEGER NOT NULL DEFAULT 0")
    db.execute_sql("CREATE INDEX IF NOT EXISTS wiki_raw_source ON wiki_raw (kb_id, source_type, source_path)")


def _token_columns(db: peewee.Database) -> None:
    for table in ("wiki_chunk", "wiki_page"):
        if "token_count" not in {c.name for c in db.get_columns(table)}:
            db.execute_sql(f"ALTER TABLE {table} ADD COLUMN token_count INTEGER")


def _pipeline_creator(db: peewee.Database) -> None:
    # Edits and deletes of a pipeline need its creator or a workspace admin; older rows stay creatorless.
    if "creator_user_id" not in {c.name for c in db.get_columns("wiki_pipeline")}:
        db.execute_sql("ALTER TABLE wiki_pipeline ADD COLUMN creator_user_id INTEGER")


def _add_columns(name: str, table: str, columns: dict[str, str]) -> Migration:
    """Add the columns a table lacks (a fresh database has them: wiki_0001 creates tables from the models)."""

    def run(db: peewee.Database) -> None:
        have = {c.name for c in db.get_columns(table)}
        for column, ddl in columns.items():
            if column not in have:
                db.execute_sql(f"ALTER TABLE {table} ADD COLUMN {column} {ddl}")

    return (name, run)


def _embed_model(db: peewee.Database) -> None:
    """Which model made each vector; the vectors already there are taken as their KB's model's of today."""
    for table in ("wiki_chunk", "wiki_page"):
        if "embed_model" not in {c.name for c in db.get_columns(table)}:
            db.execute_sql(f"ALTER TABLE {table} ADD COLUMN embed_model INTEGER")
        db.execute_sql(f"CREATE INDEX IF NOT EXISTS {table}_embed_model ON {table} (kb_id, embed_model)")
    if "model_config" not in db.get_tables():
        return
    row = db.execute_sql("SELECT id FROM model_config WHERE model_type = 'embedding' AND is_default = 1 LIMIT 1").fetchone()
    default = row[0] if row else None
    for kb_id, config in db.execute_sql("SELECT id, config FROM wiki_kb").fetchall():
        try:
            chosen = (json.loads(config or "{}") or {}).get("embeddingModelId")
            model = int(chosen) if chosen is not None else default
        except (ValueError, TypeError, AttributeError):
            model = default
        if model is not None:
            for table in ("wiki_chunk", "wiki_page"):
                db.execute_sql(
                    f"UPDATE {table} SET embed_model = ? WHERE kb_id = ? AND embedding IS NOT NULL AND embed_model IS NULL", (model, kb_id)
                )


MIGRATIONS: list[Migration] = [
    ("wiki_0001_tables", create_tables(KnowledgeBase, KbAgent, RawMaterial, Chunk, Page, PageLink, PageCitation, PageSource, Job)),
    ("wiki_0002_fts", _fts),
    ("wiki_0003_lint", create_tables(LintRun)),
    ("wiki_0004_source", _source_columns),
    ("wiki_0005_permissions", create_tables(PageTypePermission)),
    ("wiki_0006_transformations", create_tables(Transformation, TransformationRun)),
    ("wiki_0007_pipelines", create_tables(Pipeline, PipelineRun)),
    ("wiki_0008_hot_cache", create_tables(HotCache)),
    ("wiki_0009_token_counts", _token_columns),
    ("wiki_0010_pipeline_creator", _pipeline_creator),
    _add_columns("wiki_0011_archived_reason", "wiki_page", {"archived_reason": "VARCHAR(255)"}),
    _add_columns("wiki_0012_pending_change", "wiki_page", {"pending": "TEXT", "pending_embedding": "BLOB"}),
    ("wiki_0013_embed_model", _embed_model),
]
