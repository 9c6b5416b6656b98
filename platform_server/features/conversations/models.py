"""Conversations and their messages."""

from __future__ import annotations

import logging

import peewee

from platform_server.db import BaseModel, DateTimeField, JSONField, Migration, create_tables, utcnow

log = logging.getLogger(__name__)


class Conversation(BaseModel):
    key = peewee.CharField(unique=True)  # conversation_id, or "default@<userId>" for a user's default
    conversation_id = peewee.CharField()
    user_id = peewee.BigIntegerField()  # indexed by (user_id, workspace_id, ...) below: the page's order
    workspace_id = peewee.BigIntegerField(index=True)
    agent_id = peewee.BigIntegerField(null=True, index=True)
    title = peewee.CharField(default="")
    title_set = peewee.IntegerField(default=0)  # 1 once renamed: the first message no longer names it
    pinned = peewee.IntegerField(default=0)
    archived = peewee.IntegerField(default=0)
    model_provider = peewee.CharField(null=True)
    model_name = peewee.CharField(null=True)
    source = peewee.CharField(default="web")
    end_user_id = peewee.CharField(null=True)
    stream_status = peewee.CharField(default="idle")
    message_count = peewee.IntegerField(default=0)
    last_message = peewee.TextField(default="")
    last_active_time = DateTimeField(default=utcnow, index=True)
    last_event_id = peewee.BigIntegerField(default=0)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


class Message(BaseModel):
    # No index of its own: (conversation, id) below serves every lookup by conversation and the cascade
    conversation = peewee.ForeignKeyField(Conversation, backref="messages", on_delete="CASCADE", index=False)
    role = peewee.CharField()  # user, assistant, tool, system
    content = peewee.TextField(default="")
    tool_name = peewee.CharField(null=True)
    status = peewee.CharField(default="completed")  # completed, stopped, failed, streaming
    metadata = JSONField(null=True)
    content_parts = JSONField(null=True)
    prompt_tokens = peewee.IntegerField(default=0)
    completion_tokens = peewee.IntegerField(default=0)
    runtime_model = peewee.CharField(null=True)
    runtime_provider = peewee.CharField(null=True)
    create_time = DateTimeField(default=utcnow, index=True)

    class Meta:
        indexes = ((("conversation", "id"), False),)


def _messages_with_parts(db: peewee.Database) -> None:
    """Which messages carry parts (images), per conversation: every turn of a text-only model asks, and
    most conversations have none (a partial index holds only those rows)."""
    db.execute_sql("CREATE INDEX IF NOT EXISTS message_with_parts ON message (conversation_id, id) WHERE content_parts IS NOT NULL")


def _drop_message_conversation_index(db: peewee.Database) -> None:
    """The index on message.conversation_id alone repeated the first column of (conversation_id, id):
    every stored message paid for both (one more B-tree page written per message)."""
    db.execute_sql("DROP INDEX IF EXISTS message_conversation_id")


# Keyword search over messages (the conversations page's `keyword`): a trigram FTS5 index answers the
# same substring question as `content LIKE '%kw%'` (case-insensitive) without reading every message, so
# it stays flat as messages pile up (a full scan took 0.5 s at 10,000 messages in a 100 MB database).
# External content (the text is stored once, in `message`), kept in step by triggers so every writer
# (plain-SQL hot paths, cascades, clears) is covered.
MESSAGE_FTS = "message_fts"
_FTS_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS message_fts_insert AFTER INSERT ON message BEGIN "
    "INSERT INTO message_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER IF NOT EXISTS message_fts_delete AFTER DELETE ON message BEGIN "
    "INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER IF NOT EXISTS message_fts_update AFTER UPDATE OF content ON message BEGIN "
    "INSERT INTO message_fts(message_fts, rowid, content) VALUES ('delete', old.id, old.content); "
    "INSERT INTO message_fts(rowid, content) VALUES (new.id, new.content); END",
)


def _message_search_index(db: peewee.Database) -> None:
    """The trigram index of message text, filled from the messages already stored (once: `rebuild`
    reads them all, so an existing large database pays it at this migration's start). PostgreSQL answers
    `ILIKE '%kw%'` from a pg_trgm index instead (service.messages_containing), when the extension can be made."""
    if isinstance(db, peewee.PostgresqlDatabase):
        try:
            with db.atomic():
                db.execute_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                db.execute_sql("CREATE INDEX IF NOT EXISTS message_content_trgm ON message USING gin (content gin_trgm_ops)")
        except peewee.DatabaseError as exc:  # no right to create extensions: search scans, as before
            log.warning("message search without a trigram index (pg_trgm: %s)", exc)
        return
    db.execute_sql("CREATE VIRTUAL TABLE IF NOT EXISTS message_fts USING fts5(content, content='message', content_rowid='id', tokenize='trigram')")
    for trigger in _FTS_TRIGGERS:
        db.execute_sql(trigger)
    db.execute_sql("INSERT INTO message_fts(message_fts) VALUES ('rebuild')")


def _conversation_page_index(db: peewee.Database) -> None:
    """The conversations page walks a user's conversations in its order (pinned, then latest, then id,
    newest first) through this index, instead of sorting all of them for each page: a page costs the
    same at 100 conversations and at 100,000. The index on user_id alone is its first column: dropped."""
    db.execute_sql(
        "CREATE INDEX IF NOT EXISTS conversation_page ON conversation (user_id, workspace_id, pinned DESC, last_active_time DESC, id DESC)"
    )
    db.execute_sql("DROP INDEX IF EXISTS conversation_user_id")


def _left_running_indexes(db: peewee.Database) -> None:
    """Every start marks what a stop left streaming or running (`reset_running`) before it is healthy:
    without an index that read every message, so a restart grew with the database. These partial
    indexes hold only the rows in flight (none after a clean stop), so the start reads almost nothing."""
    db.execute_sql("CREATE INDEX IF NOT EXISTS message_streaming ON message (status) WHERE status = 'streaming'")
    db.execute_sql("CREATE INDEX IF NOT EXISTS conversation_running ON conversation (stream_status) WHERE stream_status = 'running'")


# Conversation titles in a trigram index too: a keyword search ORed `title LIKE '%kw%'` with the message match,
# and that OR kept either index from driving the query (every one of the user's conversations tested, for the
# count and again for the page: linear in conversations). With both sides indexed the search reads the union of
# the two matches. Same external-content scheme as message_fts; only an INSERT or a change of the title writes it.
TITLE_FTS = "conversation_title_fts"
_TITLE_TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS conversation_title_fts_insert AFTER INSERT ON conversation BEGIN "
    "INSERT INTO conversation_title_fts(rowid, title) VALUES (new.id, new.title); END",
    "CREATE TRIGGER IF NOT EXISTS conversation_title_fts_delete AFTER DELETE ON conversation BEGIN "
    "INSERT INTO conversation_title_fts(conversation_title_fts, rowid, title) VALUES ('delete', old.id, old.title); END",
    "CREATE TRIGGER IF NOT EXISTS conversation_title_fts_update AFTER UPDATE OF title ON conversation BEGIN "
    "INSERT INTO conversation_title_fts(conversation_title_fts, rowid, title) VALUES ('delete', old.id, old.title); "
    "INSERT INTO conversation_title_fts(rowid, title) VALUES (new.id, new.title); END",
)


def _title_search_index(db: peewee.Database) -> None:
    """The trigram index of conversation titles, filled from the stored ones. PostgreSQL keeps its `ILIKE`."""
    if isinstance(db, peewee.PostgresqlDatabase):
        return
    db.execute_sql(
        "CREATE VIRTUAL TABLE IF NOT EXISTS conversation_title_fts USING fts5(title, content='conversation', content_rowid='id', tokenize='trigram')"
    )
    for trigger in _TITLE_TRIGGERS:
        db.execute_sql(trigger)
    db.execute_sql("INSERT INTO conversation_title_fts(conversation_title_fts) VALUES ('rebuild')")


# The trigram index of message text (conversations_0008), two costs cut:
# - A streaming answer's partial saves (every 0.5 s, chat/store.py save_partial) rewrite its whole text; with the
#   index kept in step on every write each save re-tokenised all of it (1.4 ms of CPU for a 4,000-character
#   answer, 2 us without), so an answer's index cost grew with the square of its length, on the IOLoop. Only
#   settled messages (not 'streaming') are indexed: an answer enters once, when it is completed, stopped or failed
#   (a start marks a crashed turn's answer failed).
# - An FTS5 insert per message cost a turn two small FTS5 segments, one per commit (276-285 us of CPU for a turn's
#   two messages against 79-98 us without the index, apsw, same schema); a queue row per message and a batch of
#   them indexed every second cost 138 us. A settled message waits in MESSAGE_FTS_PENDING until
#   `service.index_pending` indexes it; the search reads that tail directly (`service.conversations_matching`),
#   so it finds a message as soon as it is stored (an answer as soon as it ends).
# A message is in the index when it is settled and not queued; the triggers keep exactly those rows there.
MESSAGE_FTS_PENDING = "message_fts_pending"
_OLD_INDEXED = f"old.status IS NOT 'streaming' AND NOT EXISTS (SELECT 1 FROM {MESSAGE_FTS_PENDING} WHERE id = old.id)"
_BATCHED_FTS_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS message_fts_queue AFTER INSERT ON message WHEN new.status IS NOT 'streaming' BEGIN "
    f"INSERT OR IGNORE INTO {MESSAGE_FTS_PENDING}(id) VALUES (new.id); END",
    f"CREATE TRIGGER IF NOT EXISTS message_fts_delete AFTER DELETE ON message BEGIN "
    f"INSERT INTO message_fts(message_fts, rowid, content) SELECT 'delete', old.id, old.content WHERE {_OLD_INDEXED}; "
    f"DELETE FROM {MESSAGE_FTS_PENDING} WHERE id = old.id; END",
    # in order: the old text leaves the index (if it was in), then the row is queued again or, streaming, leaves the queue
    f"CREATE TRIGGER IF NOT EXISTS message_fts_update AFTER UPDATE OF content, status ON message "
    "WHEN (old.status IS 'streaming') != (new.status IS 'streaming') OR (new.content IS NOT old.content AND new.status IS NOT 'streaming') BEGIN "
    f"INSERT INTO message_fts(message_fts, rowid, content) SELECT 'delete', old.id, old.content WHERE {_OLD_INDEXED}; "
    f"DELETE FROM {MESSAGE_FTS_PENDING} WHERE id = new.id AND new.status IS 'streaming'; "
    f"INSERT OR IGNORE INTO {MESSAGE_FTS_PENDING}(id) SELECT new.id WHERE new.status IS NOT 'streaming'; END",
)


def _message_index_in_batches(db: peewee.Database) -> None:
    """Settled messages reach the trigram index through a queue, in batches (see MESSAGE_FTS_PENDING); answers
    the former triggers indexed while streaming leave it, with the text they were indexed with (their current
    text: every write re-indexed it). PostgreSQL: nothing."""
    if isinstance(db, peewee.PostgresqlDatabase):
        return
    db.execute_sql(f"CREATE TABLE IF NOT EXISTS {MESSAGE_FTS_PENDING} (id INTEGER PRIMARY KEY)")
    for name in ("message_fts_insert", "message_fts_delete", "message_fts_update"):
        db.execute_sql(f"DROP TRIGGER IF EXISTS {name}")
    db.execute_sql("INSERT INTO message_fts(message_fts, rowid, content) SELECT 'delete', id, content FROM message WHERE status = 'streaming'")
    for trigger in _BATCHED_FTS_TRIGGERS:
        db.execute_sql(trigger)
        db.execute_sql(trigger)


MIGRATIONS: list[Migration] = [
    ("conversations_0001_tables", create_tables(Conversation, Message)),
    ("conversations_0002_messages_with_parts", _messages_with_parts),
    ("conversations_0003_one_conversation_index_on_messages", _drop_message_conversation_index),
    ("conversations_0004_message_search_index", _message_search_index),
    ("conversations_0005_page_index", _conversation_page_index),
    ("conversations_0006_left_running_indexes", _left_running_indexes),
    ("conversations_0007_title_search_index", _title_search_index),
    ("conversations_0008_message_index_in_batches", _message_index_in_batches),
]
