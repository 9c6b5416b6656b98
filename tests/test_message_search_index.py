"""Keyword search over messages goes through a trigram index (message_fts), not a read of every message:
it finds the same substrings as before, stays in step with every write, and the migration fills it for
messages stored before it existed."""

from __future__ import annotations

import logging
from typing import Any

import apsw

from platform_server.db import database
from platform_server.features.conversations import SEARCH_INDEX, lifecycle, models, service
from platform_server.features.conversations.lifecycle import SearchIndexLoop
from platform_server.web.context import Caller, Principal
from tests.helpers.chat import ChatEnv
from tests.helpers.client import iter_sse
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script
from tests.helpers.server import RunningServer


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
    assert "SCAN message_fts VIRTUAL TABLE INDEX" in query_plan and ":M" in query_plan, query_plan  # the MATCH, by the index
    assert "SEARCH t1 USING INTEGER PRIMARY KEY" in query_plan and "SCAN t1" not in query_plan  # no read of every message
    assert "SCAN p" in query_plan and "SEARCH m USING INTEGER PRIMARY KEY" in query_plan, query_plan  # the queue drives its side


async def test_the_index_follows_edits_deletes_and_the_migration_fills_it_for_older_messages(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="Apricots."))
    await env.stream("tell me about quinces", conversation_id="old")
    conv_id = database.execute_sql("SELECT id FROM conversation WHERE conversation_id = 'old'").fetchone()[0]
    database.execute_sql("UPDATE message SET content = 'now about medlars' WHERE conversation_id = ? AND role = 'assistant'", (conv_id,))
    assert await found(env, "apricots") == [] and await found(env, "medlars") == ["old"]

    # A database from before the index: its messages are found once the migrations ran.
    for name in ("message_fts_queue", "message_fts_delete", "message_fts_update"):
        database.execute_sql(f"DROP TRIGGER {name}")
    database.execute_sql("DELETE FROM message_fts_pending")  # it had no queue: 0004 below indexes every row itself
    database.execute_sql("DROP TABLE message_fts")
    database.execute_sql("DROP TABLE message_fts_pending")
    database.execute_sql("INSERT INTO message (conversation_id, role, content, status, prompt_tokens, completion_tokens, create_time) "
                         "VALUES (?, 'user', 'a word about loquats', 'completed', 0, 0, '2025-01-01 00:00:00.000')", (conv_id,))
    dict(models.MIGRATIONS)["conversations_0004_message_search_index"](database.obj)
    dict(models.MIGRATIONS)["conversations_0008_message_index_in_batches"](database.obj)
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


def fts_count(keyword: str) -> int:
    return int(database.execute_sql("SELECT COUNT(*) FROM message_fts WHERE message_fts MATCH ?", (f'"{keyword}"',)).fetchone()[0])


def queued() -> int:
    return int(database.execute_sql("SELECT COUNT(*) FROM message_fts_pending").fetchone()[0])


async def test_a_turn_queues_its_messages_for_the_index_and_the_search_finds_them_before_and_after_the_batch(
    env: ChatEnv, server: RunningServer
) -> None:
    # A turn's commits write a queue row per message, not an FTS5 segment each: the index is filled in batches.
    server.platform.runtime(SEARCH_INDEX).stop()  # (the batch below is this test's own tick)
    env.llm.enqueue(Script(text="Persimmons ripen after frost."))
    await env.stream("What about Ünterberg's quinces?", conversation_id="late")
    assert queued() == 2 and fts_count("quinces") == 0 and fts_count("persimmon") == 0  # not indexed yet...
    assert await found(env, "persimmon") == ["late"]  # ...found right away: the search reads the queue too
    assert await found(env, "ünterberg") == ["late"]  # with the index's Unicode case folding, not LIKE's ASCII one
    assert await found(env, "medlars") == []

    conv_id = database.execute_sql("SELECT id FROM conversation WHERE conversation_id = 'late'").fetchone()[0]
    database.execute_sql("UPDATE message SET content = 'now about medlars' WHERE conversation_id = ? AND role = 'assistant'", (conv_id,))
    assert await found(env, "persimmon") == [] and await found(env, "medlars") == ["late"]  # an edit while queued

    assert await SearchIndexLoop().tick() == 2  # the batch: both messages into the index, the queue empty
    assert queued() == 0 and fts_count("quinces") == 1 and fts_count("medlars") == 1 and fts_count("persimmon") == 0
    assert await found(env, "medlars") == ["late"] and await found(env, "quinces") == ["late"]
    database.execute_sql("UPDATE message SET content = 'plain figs' WHERE conversation_id = ? AND role = 'assistant'", (conv_id,))
    assert await found(env, "medlars") == [] and await found(env, "plain figs") == ["late"]  # an indexed row's edit
    assert queued() == 1 and fts_count("medlars") == 0  # the edited row left the index and waits for the next batch

    env.llm.enqueue(Script(text="Dates."))
    await env.stream("and sloes?", conversation_id="late")  # queued again, then the conversation is deleted
    assert queued() == 3
    r = await env.api.delete("/api/v1/conversations/late", token="alice")
    assert r.status == 200, r.body
    assert queued() == 0 and fts_count("quinces") == 0 and fts_count("figs") == 0  # indexed and queued rows both gone
    assert database.execute_sql("INSERT INTO message_fts(message_fts) VALUES ('integrity-check')").fetchall() == []


async def test_the_index_loop_runs_on_its_own_and_indexes_a_backlog_in_batches(env: ChatEnv, server: RunningServer) -> None:
    env.llm.enqueue(Script(text="Mulberries."))
    await env.stream("tell me of damsons", conversation_id="soon")
    await eventually(lambda: queued() == 0)  # the started loop's tick (every INDEX_EVERY_S)
    assert fts_count("damsons") == 1 and fts_count("mulberries") == 1

    server.platform.runtime(SEARCH_INDEX).stop()
    conv_id = database.execute_sql("SELECT id FROM conversation WHERE conversation_id = 'soon'").fetchone()[0]
    with database.atomic():
        for i in range(lifecycle.INDEX_BATCH + 7):
            database.execute_sql("INSERT INTO message (conversation_id, role, content, status, prompt_tokens, completion_tokens, "
                                 "create_time) VALUES (?, 'user', ?, 'completed', 0, 0, '2025-01-01 00:00:00.000')",
                                 (conv_id, f"bulk {i} elderberry"))
    assert queued() == lifecycle.INDEX_BATCH + 7
    assert await SearchIndexLoop().tick() == lifecycle.INDEX_BATCH + 7 and queued() == 0
    assert fts_count("elderberry") == lifecycle.INDEX_BATCH + 7


async def test_an_index_batch_that_meets_another_writer_waits_for_the_next_tick_and_logs_nothing(
    env: ChatEnv, server: RunningServer, caplog: Any
) -> None:
    server.platform.runtime(SEARCH_INDEX).stop()
    env.llm.enqueue(Script(text="Rowan berries."))
    await env.stream("and cloudberries?", conversation_id="busy")
    other = apsw.Connection(server.config.db_path)  # another process's writer (a backup tool, a sqlite3 shell)
    other.execute("BEGIN IMMEDIATE")
    try:
        with caplog.at_level(logging.WARNING):
            assert await SearchIndexLoop().tick() == 0  # the lock is another's: nothing written, nothing raised
        assert queued() == 2 and not [r for r in caplog.records if "locked" in r.getMessage()]
        assert await found(env, "cloudberr") == ["busy"]  # the search reads the queue meanwhile
    finally:
        other.execute("COMMIT")
        other.close()
    assert await SearchIndexLoop().tick() == 2 and fts_count("cloudberries") == 1
    assert await SearchIndexLoop(read_only=lambda: True).tick() == 0  # a full disk: no write is tried


async def indexed(word: str) -> int:
    """How many index entries match `word`, once the queued messages went through a batch."""
    await SearchIndexLoop().tick()
    return int(database.execute_sql("SELECT COUNT(*) FROM message_fts WHERE message_fts MATCH ?", (f'"{word}"',)).fetchone()[0])


async def test_a_streaming_answer_enters_the_index_once_it_is_settled_not_at_each_partial_save(env: ChatEnv) -> None:
    # Chunks 0.3 s apart: the second comes after the 0.5 s partial-save period, so the answer is stored
    # streaming with "quokkas"; then the model goes quiet until the turn is stopped.
    env.llm.enqueue(Script(text=["wombats ", "quokkas ", "numbats "], delay_s=0.3, hang_after_chunks=3))  # the role chunk, then two
    r = await env.api.session.post(env.api.base_url + "/api/v1/chat/stream",
                                   json={"agentId": env.agent_id, "conversationId": "marsupials", "message": "name some"},
                                   headers={"Authorization": "Bearer " + env.api.tokens["alice"]})
    it = iter_sse(r)

    async def saved_streaming() -> bool:
        row = database.execute_sql("SELECT status, content FROM message WHERE role = 'assistant' AND content LIKE '%quokkas%'").fetchone()
        return row is not None and row[0] == "streaming"

    await eventually(saved_streaming, interval=0.05)
    assert await indexed("quokkas") == 0 and await found(env, "quokkas") == []  # a partial save re-indexes nothing
    assert (await env.api.post("/api/v1/chat/marsupials/stop", token="alice")).status == 200
    tail = [ev async for ev in it]
    r.close()
    assert tail[-1].data["status"] == "stopped"
    assert await indexed("quokkas") == 1 and await found(env, "quokkas") == ["marsupials"]  # stopped: settled, indexed

    # A later edit of the settled text follows; a delete takes it out; a streaming row never enters.
    database.execute_sql("UPDATE message SET content = 'now about bilbies' WHERE content LIKE '%quokkas%'")
    assert await indexed("quokkas") == 0 and await indexed("bilbies") == 1
    conv_id = database.execute_sql("SELECT id FROM conversation WHERE conversation_id = 'marsupials'").fetchone()[0]
    database.execute_sql("INSERT INTO message (conversation_id, role, content, status, prompt_tokens, completion_tokens, create_time) "
                         "VALUES (?, 'assistant', 'half a dunnart', 'streaming', 0, 0, '2025-01-01 00:00:00.000')", (conv_id,))
    database.execute_sql("UPDATE message SET content = 'half a dunnart story' WHERE content = 'half a dunnart'")
    assert await indexed("dunnart") == 0
    database.execute_sql("UPDATE message SET status = 'failed' WHERE content = 'half a dunnart story'")  # a start marks it failed
    assert await indexed("dunnart") == 1
    database.execute_sql("DELETE FROM message WHERE content = 'half a dunnart story'")
    assert await indexed("dunnart") == 0 and await indexed("bilbies") == 1


async def test_the_migration_takes_answers_left_streaming_out_of_the_index(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="Echidnas lay eggs."))
    await env.stream("tell me", conversation_id="mono")
    conv_id = database.execute_sql("SELECT id FROM conversation WHERE conversation_id = 'mono'").fetchone()[0]
    # A database from before: its triggers indexed every write, a streaming answer included.
    for name in ("message_fts_queue", "message_fts_delete", "message_fts_update"):
        database.execute_sql(f"DROP TRIGGER {name}")
    database.execute_sql("DELETE FROM message_fts_pending")  # it had no queue: 0004 below indexes every row itself
    dict(models.MIGRATIONS)["conversations_0004_message_search_index"](database.obj)
    database.execute_sql("INSERT INTO message (conversation_id, role, content, status, prompt_tokens, completion_tokens, create_time) "
                         "VALUES (?, 'assistant', 'platypus partial', 'streaming', 0, 0, '2025-01-01 00:00:00.000')", (conv_id,))
    assert await indexed("platypus") == 1
    dict(models.MIGRATIONS)["conversations_0008_message_index_in_batches"](database.obj)
    assert await indexed("platypus") == 0 and await indexed("echidnas") == 1
    database.execute_sql("UPDATE message SET status = 'failed' WHERE content = 'platypus partial'")  # what a start does with it
    assert await indexed("platypus") == 1 and await found(env, "platypus") == ["mono"]
    database.execute_sql("INSERT INTO message_fts(message_fts, rank) VALUES ('integrity-check', 1)")  # the index matches the rows


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
