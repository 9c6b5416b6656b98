"""Chat uploads (who uploaded which file into which conversation), compacted conversation context and the follow-ups
queued for a running turn."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, JSONField, Migration, create_tables, utcnow
from platform_server.features.conversations.models import Conversation


class Upload(BaseModel):
    stored_name = peewee.CharField(unique=True)
    user_id = peewee.BigIntegerField(index=True)
    conversation_id = peewee.CharField()
    name = peewee.CharField()
    size = peewee.IntegerField()
    content_type = peewee.CharField()
    create_time = DateTimeField(default=utcnow)


class ContextSummary(BaseModel):
    """A conversation's compacted past: the model's summary of every message up to `upto_message_id`,
    made once when the history stopped fitting the model's context, and reused until more must go."""

    conversation = peewee.ForeignKeyField(Conversation, on_delete="CASCADE", unique=True, column_name="conversation_id")
    upto_message_id = peewee.BigIntegerField()
    summary = peewee.TextField()
    messages = peewee.IntegerField()  # stored messages it stands for
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "chat_context_summary"


class PendingInput(BaseModel):
    """A follow-up accepted for a running turn and not yet taken by it (issue 31): stored when accepted, so a process
    that dies with it queued loses nothing: the leader's sweep (or the next start) keeps it as the conversation's
    next user message. The turn reads its queue from memory; the row is deleted in the commit that stores it."""

    conversation = peewee.ForeignKeyField(Conversation, on_delete="CASCADE", column_name="conversation_id")
    content = peewee.TextField(default="")
    content_parts = JSONField(null=True)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "chat_pending_input"


MIGRATIONS: list[Migration] = [
    ("chat_0001_uploads", create_tables(Upload)),
    ("chat_0002_context_summaries", create_tables(ContextSummary)),
    ("chat_0003_pending_inputs", create_tables(PendingInput)),
]
