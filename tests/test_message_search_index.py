"""Keyword search over messages goes through a trigram index (message_fts), not a read of every message:
it finds the same substrings as before, stays in step with every write, and the migration fills it for
messages stored before it existed."""

from __future__ import annotations

from platform_server.db import database
from platform_server.features.conversations import models, service
from platform_server.web.context import Caller, Principal
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script


def plan(sql: str, params: tuple[object, ...]) -> str:
    return " ".join(str(row[-1]) for row in database.execute_sql("EXPLAIN QUERY PLAN " + sql, params))


async def found(env: ChatEnv, keyword: str) -> list[str]:
    r = await env.api.get("/api/v1/conversations/page", params={"keyword": keyword}, token="alice")
    assert r.status == 200, r.body
    return sorted(c["conversationId"] for c in r.data["records"])


async def test_keyword_search_reads_the_trigram_index_and_finds_substrings_case_insensitively(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="Bananas ripen in the dark."))
    await env.stream("Where do Pears grow?", conversation_id="fruit")
    env.llm.enqueue(Script(text="Nothing to say."))
    await env.stream("hello there", conversation_id="other")
    assert await found(env, "pears") == ["fruit"]  # a substring of the user's message, another case
    assert await found(env, "anana") == ["fruit"]  # inside a word of the assistant's answer
    assert await found(env, "ripen in") == ["fruit"]  # spaces belong to the phrase
    assert await found(env, 'say"') == []  # a quote in the keyword is text, not FTS syntax
    assert await found(env, "th") == ["fruit", "other"]  # under three characters: the scan still answers
    assert await found(env, "pe\x00ars") == []  # a NUL (which FTS5 query text cannot hold) scans too

    sql, params = service.messages_containing("pears").sql()
    query_plan = plan(sql, tuple(params))
    assert "SCAN message_fts VIRTUAL TABLE INDEX 0:M" in query_plan, query_plan  # the MATCH, answered by the index
    assert "SEARCH t1 USING INTEGER PRIMARY KEY" in query_plan and "SCAN t1" not in query_plan  # no read of every message


async def test_the_index_follows_edits_deletes_and_the_migration_fills_it_for_older_messages(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="Apricots."))
    await env.stream("tell me about quinces", conversation_id="old")
    conv_id = database.execute_sql("SELECT id FROM conversation WHERE conversation_id = 'old'").fetchone()[0]
    database.execute_sql("UPDATE message SET content = 'now about medlars' WHERE conversation_id = ? AND role = 'assistant'", (conv_id,))
    assert await found(env, "apricots") == [] and await found(env, "medlars") == ["old"]

    # A database from before the index: its messages are found once the migration ran.
    for name in ("message_fts_insert", "message_fts_delete", "message_fts_update"):
        database.execute_sql(f"DROP TRIGGER {name}")
    database.execute_sql("DROP TABLE message_fts")
    database.execute_sql("INSERT INTO message (conversation_id, role, content, status, prompt_tokens, completion_tokens, create_time) "
                         "VALUES (?, 'user', 'a word about loquats', 'completed', 0, 0, '2025-01-01 00:00:00.000')", (conv_id,))
    dict(models.MIGRATIONS)["conversations_0004_message_search_index"](database.obj)
    assert await found(env, "loquats") == ["old"] and await found(env, "medlars") == ["old"]

    r = await env.api.delete("/api/v1/conversations/old", token="alice")  # the cascade takes its messages out of the index
    assert r.status == 200, r.body
    assert database.execute_sql("SELECT COUNT(*) FROM message_fts WHERE message_fts MATCH '\"loquats\"'").fetchone()[0] == 0


def conversation_indexes() -> set[str]:
    return {r[0] for r in database.execute_sql("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'conversation'")}


async def test_the_conversations_page_walks_an_index_in_its_order_instead_of_sorting_every_conversation(env: ChatEnv) -> None:
    for i in range(3):
        env.llm.enqueue(Script(text="ok"))
        await env.stream(f"message {i}", conversation_id=f"p{i}")
    r = await env.api.get("/api/v1/conversations/page", params={"page": 1, "size": 2}, token="alice")
    assert r.status == 200 and [c["conversationId"] for c in r.data["records"]] == ["p2", "p1"] and r.data["total"] == 3
    query_plan = plan(service._PAGE_SQL, (1, 1, 20, 0))
    assert "conversation_page" in query_plan and "TEMP B-TREE" not in query_plan, query_plan
    assert "conversation_page" in plan(service._COUNT_SQL, (1, 1))

    # A database from before: its index on user_id alone repeated the new one's first column and goes.
    database.execute_sql("DROP INDEX conversation_page")
    database.execute_sql('CREATE INDEX "conversation_user_id" ON "conversation" ("user_id")')
    dict(models.MIGRATIONS)["conversations_0005_page_index"](database.obj)
    assert "conversation_page" in conversation_indexes() and "conversation_user_id" not in conversation_indexes()


async def test_a_start_finds_what_was_left_running_through_partial_indexes_not_a_read_of_every_message(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="ok"))
    await env.stream("hello", conversation_id="r1")
    for name in ("message_streaming", "conversation_running"):
        database.execute_sql(f"DROP INDEX {name}")
    dict(models.MIGRATIONS)["conversations_0006_left_running_indexes"](database.obj)
    message_plan = plan("UPDATE message SET status = 'failed' WHERE status = 'streaming'", ())
    conversation_plan = plan("UPDATE conversation SET stream_status = 'idle' WHERE stream_status = 'running'", ())
    assert "message_streaming" in message_plan and "conversation_running" in conversation_plan, (message_plan, conversation_plan)

    # what reset_running does at a start, through those indexes: a message left streaming is failed
    conv_id = database.execute_sql("SELECT id FROM conversation WHERE conversation_id = 'r1'").fetchone()[0]
    database.execute_sql("UPDATE message SET status = 'streaming' WHERE conversation_id = ? AND role = 'assistant'", (conv_id,))
    database.execute_sql("UPDATE conversation SET stream_status = 'running' WHERE id = ?", (conv_id,))
    assert service.reset_running() == 1
    assert database.execute_sql("SELECT COUNT(*) FROM message WHERE status = 'streaming'").fetchone()[0] == 0


async def test_titles_are_searched_through_their_own_trigram_index_and_the_matches_drive_the_page(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="ok"))
    await env.stream("first words", conversation_id="named")
    env.llm.enqueue(Script(text="ok"))
    await env.stream("something about plums", conversation_id="plain")
    assert (await env.api.put("/api/v1/conversations/named/title", {"title": "Orchard Plans"}, token="alice")).status == 200
    assert await found(env, "chard pl") == ["named"]  # inside the title, another case, across the space
    assert await found(env, "plums") == ["plain"] and await found(env, "orchard") == ["named"]
    assert await found(env, "pl") == ["named", "plain"]  # under three characters: title and messages scanned
    assert (await env.api.put("/api/v1/conversations/named/title", {"title": "Vineyard"}, token="alice")).status == 200
    assert await found(env, "orchard") == [] and await found(env, "vineyard") == ["named"]  # the index follows a rename

    caller = Caller(Principal(user_id=1, username="alice", role="admin", token_kind="jwt"), workspace_id=1, workspace_role="owner")
    sql, params = service._mine(caller, page_index=False).where(service.conversations_matching("plums")).sql()
    query_plan = plan(sql, tuple(params))
    assert "conversation_title_fts VIRTUAL TABLE" in query_plan and "message_fts VIRTUAL TABLE" in query_plan, query_plan
    assert "USING INTEGER PRIMARY KEY" in query_plan and "conversation_page" not in query_plan, query_plan  # the matches drive

    # A database from before the title index: its conversations are found once the migration ran.
    for name in ("conversation_title_fts_insert", "conversation_title_fts_delete", "conversation_title_fts_update"):
        database.execute_sql(f"DROP TRIGGER {name}")
    database.execute_sql("DROP TABLE conversation_title_fts")
    database.execute_sql("UPDATE conversation SET title = 'Greenhouse' WHERE conversation_id = 'plain'")
    dict(models.MIGRATIONS)["conversations_0007_title_search_index"](database.obj)
    assert await found(env, "greenhouse") == ["plain"] and await found(env, "vineyard") == ["named"]
    r = await env.api.delete("/api/v1/conversations/plain", token="alice")
    assert r.status == 200, r.body
    assert database.execute_sql("SELECT COUNT(*) FROM conversation_title_fts WHERE conversation_title_fts MATCH '\"greenhouse\"'").fetchone()[0] == 0


async def test_a_keyword_page_matches_once_for_its_records_and_its_total(env: ChatEnv) -> None:
    """The page and its total come from one statement (a window count over the matches the page sorts
    anyway): the trigram scans and their union ran twice, once for the count and once for the page, which
    at a million messages was most of the route's time."""
    for i in range(3):
        env.llm.enqueue(Script(text=f"Plums number {i}."))
        await env.stream(f"about plums {i}", conversation_id=f"plum-{i}")
    statements: list[str] = []

    def trace(_cursor: object, sql: str, _bindings: object) -> bool:
        statements.append(sql)
        return True

    con = database.connection()
    con.exec_trace = trace
    try:
        r = await env.api.get("/api/v1/conversations/page", params={"keyword": "plums", "size": 2}, token="alice")
    finally:
        con.exec_trace = None
    assert r.status == 200, r.body
    assert r.data["total"] == 3 and len(r.data["records"]) == 2
    assert sum(MESSAGE_FTS_MATCH in s for s in statements) == 1, statements

    # past the last match the page is empty and the total still counts them
    r = await env.api.get("/api/v1/conversations/page", params={"keyword": "plums", "size": 2, "page": 3}, token="alice")
    assert r.status == 200 and r.data["total"] == 3 and r.data["records"] == []
    r = await env.api.get("/api/v1/conversations/page", params={"keyword": "plums", "size": 2, "page": 2}, token="alice")
    assert r.data["total"] == 3 and [c["conversationId"] for c in r.data["records"]] == ["plum-0"]


MESSAGE_FTS_MATCH = "message_fts MATCH"


async def test_a_conversations_page_reads_only_the_agent_columns_it_shows(env: ChatEnv) -> None:
    """Each record names its agent (name, icon): the agent's prompt and JSON settings are not read for it."""
    env.llm.enqueue(Script(text="Figs."))
    await env.stream("about figs", conversation_id="fig")
    statements: list[str] = []

    def trace(_cursor: object, sql: str, _bindings: object) -> bool:
        statements.append(sql)
        return True

    con = database.connection()
    con.exec_trace = trace
    try:
        r = await env.api.get("/api/v1/conversations/page", params={"keyword": "figs"}, token="alice")
    finally:
        con.exec_trace = None
    assert r.status == 200 and r.data["records"][0]["agentName"], r.body
    agent_reads = [s for s in statements if 'FROM "agent"' in s]
    assert agent_reads and all("system_prompt" not in s for s in agent_reads), agent_reads
