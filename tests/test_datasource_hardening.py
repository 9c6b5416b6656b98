"""Datasources cannot reach any other file: a member's query cannot attach, vacuum or read the platform's database."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.test_datasources import make_db


async def _shop(env: ChatEnv, server: Any) -> Path:
    path = make_db(server)
    r = await env.api.post("/api/v1/datasources", {"name": "shop", "type": "sqlite", "config": {"path": "shop.db"}}, token="alice")
    assert r.status == 200, r.body
    assert (await env.api.put("/api/v1/workspaces/1", {"hostTools": ["sql"]}, token="alice")).status == 200  # a global admin enables SQL
    await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["query_datasource"]}, token="alice")
    return path


async def _query(env: ChatEnv, *queries: str, token: str = "bob") -> list[dict[str, Any]]:
    """Each query through the agent's `query_datasource` in one turn of `token`'s; the tool results in order."""
    calls = [Script(tool_calls=[ScriptedToolCall("query_datasource", {"datasource": "shop", "query": q})]) for q in queries]
    env.llm.enqueue(*calls, Script(text="done"))
    events = await env.stream("look", token=token, conversation_id=f"q{len(env.llm.request_log)}")
    return [e.data for e in events if e.event == "tool_call_completed"]


async def test_a_member_cannot_attach_the_platform_database_through_a_datasource(env: ChatEnv, server: Any, tmp_path: Any) -> None:
    await _shop(env, server)
    data_dir = Path(server.config.data_dir)
    platform_db = str(data_dir / "platform.db")
    before = {p.name: os.stat(p).st_ino for p in data_dir.iterdir() if p.name.startswith("platform.db")}
    assert {"platform.db-wal", "platform.db-shm"} <= set(before)
    results = await _query(
        env,
        f"ATTACH DATABASE '{platform_db}' AS p",
        f"ATTACH DATABASE 'file:{platform_db}?mode=ro' AS p",
        "SELECT * FROM pragma_database_list",
        "PRAGMA database_list",
        f"VACUUM INTO '{tmp_path / 'stolen.db'}'",
        "DETACH DATABASE main",
    )
    assert len(results) == 6
    for r in results:
        assert r["success"] is False, r
        assert r["result"].startswith("query not authorized: a datasource query may only read"), r
    assert platform_db not in json.dumps(results)
    after = {p.name: os.stat(p).st_ino for p in data_dir.iterdir() if p.name.startswith("platform.db")}
    assert after == before  # the WAL and shared-memory files were neither deleted nor replaced
    # the server's own database still answers and stores
    r = await env.api.post("/api/v1/agents", {"name": "After", "systemPrompt": "x", "agentType": "react"}, token="alice")
    assert r.status == 200, r.body
    assert not (tmp_path / "stolen.db").exists()


async def test_datasource_queries_cannot_load_code_or_touch_files(env: ChatEnv, server: Any, tmp_path: Any) -> None:
    await _shop(env, server)
    results = await _query(
        env,
        "SELECT load_extension('/lib/x86_64-linux-gnu/libc.so.6')",
        "SELECT fts3_tokenizer('simple')",
        "PRAGMA query_only = 0",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA writable_schema = 1",
        "SELECT * FROM pragma_table_info('items')",
    )
    assert [r["success"] for r in results] == [False, False, False, False, False, True], results
    ok = await _query(env, "SELECT name FROM items ORDER BY id", "PRAGMA table_info(items)", "SELECT sqlite_version()")
    assert all(r["success"] for r in ok), ok
    assert json.loads(ok[0]["result"])["rows"] == [["apple"], ["pear"]]


async def test_a_datasource_file_swapped_for_a_link_to_the_platform_database_is_refused(env: ChatEnv, server: Any) -> None:
    path = await _shop(env, server)
    data_dir = Path(server.config.data_dir)
    ds_id = (await env.api.get("/api/v1/datasources", token="bob")).data[0]["id"]
    path.unlink()
    os.link(data_dir / "platform.db", path)  # a hard link: the same inode, inside the workspace's folder
    results = await _query(env, "SELECT count(*) FROM sqlite_master")
    assert results[0]["success"] is False and "platform database" in results[0]["result"], results
    test = await env.api.post(f"/api/v1/datasources/{ds_id}/test", token="bob")
    assert test.data["success"] is False and "platform database" in test.data["message"], test.data
    r = await env.api.post("/api/v1/datasources", {"name": "linked", "type": "sqlite", "config": {"path": "shop.db"}}, token="alice")
    assert r.status == 400 and r.body["code"] == 400 and r.body["msg"] == "config.path: the datasource file is the platform database", r.body
    path.unlink()
    path.symlink_to(data_dir / "platform.db")
    results = await _query(env, "SELECT count(*) FROM sqlite_master")
    assert results[0]["success"] is False and "outside" in results[0]["result"], results
    assert str(data_dir) not in results[0]["result"]


async def test_a_datasource_root_inside_the_data_directory_reaches_no_file_there(tmp_path: Any) -> None:
    from tests.helpers.server import create_personas, start_server

    data_dir = tmp_path / "data"
    server = await start_server(str(data_dir), datasource_roots=(str(data_dir / "agents"),))
    try:
        await create_personas(server.client)
        planted = data_dir / "agents" / "1" / "copy.db"  # workspace 1's folder of that root is in the data directory
        planted.parent.mkdir(parents=True)
        with sqlite3.connect(planted) as db:
            db.execute("CREATE TABLE t (x)")
        r = await server.client.post("/api/v1/datasources", {"name": "x", "type": "sqlite", "config": {"path": str(planted)}}, token="alice")
        assert r.status == 400 and r.body["msg"] == "config.path: the datasource file lies in the data directory", r.body
    finally:
        await server.stop()
