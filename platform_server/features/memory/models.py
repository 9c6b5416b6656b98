"""Memory: facts per (user, agent, endUserId), contradictions between them, dream reports."""

from __future__ import annotations

import peewee

from platform_server.db import (
    BaseModel,
    BooleanField,
    DateTimeField,
    JSONField,
    Migration,
    create_tables,
    database,
    utcnow,
)


class Fact(BaseModel):
    """One remembered statement; MEMORY.md is a projection of the active ones."""

    workspace_id = peewee.BigIntegerField()
    user_id = peewee.BigIntegerField()
    agent_id = peewee.BigIntegerField(index=True)
    end_user_id = peewee.CharField(default="")  # "" = no end user
    key = peewee.CharField()
    statement = peewee.TextField()
    confidence = peewee.FloatField(default=0.7)
    status = peewee.CharField(default="active")  # active | forgotten
    source = peewee.CharField(default="conversation")  # conversation | dream | user | merge
    source_conversation_id = peewee.CharField(null=True)
    mentions = peewee.IntegerField(default=1)
    helpful_count = peewee.IntegerField(default=0)
    unhelpful_count = peewee.IntegerField(default=0)
    user_edited = BooleanField(default=False)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)
    forgotten_time = DateTimeField(null=True)

    class Meta:
        indexes = ((("user_id", "agent_id", "end_user_id", "status"), False),)


class Contradiction(BaseModel):
    workspace_id = peewee.BigIntegerField()
    user_id = peewee.BigIntegerField()
    agent_id = peewee.BigIntegerField(index=True)
    end_user_id = peewee.CharField(default="")
    fact_a = peewee.ForeignKeyField(Fact, on_delete="CASCADE")
    fact_b = peewee.ForeignKeyField(Fact, on_delete="CASCADE")
    status = peewee.CharField(default="open")  # open | resolved
    resolution = peewee.CharField(null=True)  # KEEP_A | KEEP_B | MERGE | IGNORE
    create_time = DateTimeField(default=utcnow)
    resolve_time = DateTimeField(null=True)


class DreamReport(BaseModel):
    workspace_id = peewee.BigIntegerField()
    user_id = peewee.BigIntegerField()
    agent_id = peewee.BigIntegerField(index=True)
    end_user_id = peewee.CharField(default="")
    mode = peewee.CharField()  # NIGHTLY | FOCUSED
    trigger = peewee.CharField()  # schedule | manual
    topic = peewee.CharField(null=True)
    status = peewee.CharField(default="running")  # running | completed | failed
    summary = peewee.TextField(default="")
    entries = JSONField(default=list)
    skipped = JSONField(default=list)
    error = peewee.TextField(null=True)
    model = peewee.CharField(null=True)
    seen = BooleanField(default=False)
    create_time = DateTimeField(default=utcnow, index=True)
    finish_time = DateTimeField(null=True)

    class Meta:
        indexes = ((("user_id", "agent_id", "end_user_id", "create_time"), False),)


class MemoryMeta(peewee.Model):
    """Small process-wide values that survive restarts (the last nightly run date)."""

    key = peewee.CharField(primary_key=True)
    value = peewee.TextField()

    class Meta:
        database = database
        table_name = "memory_meta"


class ExtractionMark(BaseModel):
    """How far a conversation's messages have been turned into facts (by summarize or the idle loop)."""

    conversation_db_id = peewee.BigIntegerField(unique=True)  # Conversation.id
    last_message_id = peewee.BigIntegerField(default=0)
    failed_at = DateTimeField(null=True)  # the last automatic extraction that failed (retried after the idle time)
    unreadable = peewee.IntegerField(default=0)  # answers in a row that were not the JSON asked for
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "memory_extraction_mark"


def _add_unreadable(db: peewee.Database) -> None:
    # a database created by memory_0002 from today's model already has the column
    if "unreadable" not in {c.name for c in db.get_columns("memory_extraction_mark")}:
        db.execute_sql("ALTER TABLE memory_extraction_mark ADD COLUMN unreadable INTEGER NOT NULL DEFAULT 0")


MIGRATIONS: list[Migration] = [
    ("memory_0001_tables", create_tables(Fact, Contradiction, DreamReport, MemoryMeta)),
    ("memory_0002_extraction_marks", create_tables(ExtractionMark)),
    ("memory_0003_extraction_unreadable", _add_unreadable),
]
