"""Messages carry one index per way they are looked up: what a stored message costs stays small."""

from __future__ import annotations

from platform_server.db import database
from platform_server.features.chat import history
from platform_server.features.conversations import models
from tests.helpers.chat import ChatEnv


def message_indexes() -> set[str]:
    return {row[0] for row in database.execute_sql("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'message'")}


def plan(sql: str, *params: object) -> str:
    return " ".join(str(row) for row in database.execute_sql("EXPLAIN QUERY PLAN " + sql, params))


async def test_messages_are_found_by_conversation_through_one_index_and_the_repeated_one_is_dropped(env: ChatEnv) -> None:
    events = await env.stream("hello", conversation_id="ix")
    assert events[-1].data["status"] == "completed"
    assert "message_conversation_id" not in message_indexes()  # its column leads (conversation_id, id) already
    assert "message_conversation_id_id" in plan(history._RECENT_SQL, 1, 0, 20)
    assert "message_conversation_id_id" in plan("SELECT COUNT(*) FROM message WHERE conversation_id = ?", 1)
    assert "message_conversation_id_id" in plan("DELETE FROM message WHERE conversation_id = ?", 1)  # the cascade's lookup

    # A database made before the change had the repeated index: the migration drops it, once.
    database.execute_sql('CREATE INDEX "message_conversation_id" ON "message" ("conversation_id")')
    dropping = dict(models.MIGRATIONS)["conversations_0003_one_conversation_index_on_messages"]
    dropping(database.obj)
    assert "message_conversation_id" not in message_indexes()
    dropping(database.obj)  # a second run finds nothing to do
