"""Another process holding SQLite's write lock: the IOLoop waits only `db_loop_busy_timeout_ms`, then a
write answers 503 with nothing written; health and reads keep answering at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer


def env_db_path(env: Any) -> str:
    from platform_server.db import database

    return str(database.obj.database)


class LockHolder:
    """Another process that takes SQLite's write lock (BEGIN IMMEDIATE) and keeps it until released."""

    SCRIPT = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.readline()\n"
        "c.rollback()\n"
    )

    def __init__(self, db_path: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT, db_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == b"locked"

    def release(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
            self.proc.wait(10)


@pytest.mark.config(db_busy_retry_s=0)
async def test_writes_answer_503_at_once_while_another_connection_holds_the_lock_and_nothing_is_written(
    server: RunningServer, api: ApiClient, people: dict[str, dict[str, str]]
) -> None:
    holder = LockHolder(server.config.db_path)
    try:
        started = time.monotonic()
        r = await api.get("/api/v1/system/health", token="alice")
        assert r.status == 200 and r.data["status"] == "UP"
        r = await api.get("/api/v1/agents", token="alice")
        assert r.status == 200
        reads_took = time.monotonic() - started
        started = time.monotonic()
        refused = [await api.post("/api/v1/agents", {"name": f"Locked {i}", "agentType": "react"}, token="alice") for i in range(3)]
        writes_took = time.monotonic() - started
    finally:
        holder.release()
    assert reads_took < 1.0
    assert [r.status for r in refused] == [503, 503, 503] and writes_took < 1.5  # not 5 s each
    assert refused[0].body["code"] == 503 and "busy" in refused[0].body["msg"] and refused[0].body["data"] is None
    r = await api.get("/api/v1/agents", token="alice")
    assert not [a for a in r.data if a["name"].startswith("Locked")]  # nothing answered 503 was stored
    r = await api.post("/api/v1/agents", {"name": "After", "agentType": "react"}, token="alice")
    assert r.status == 200


async def test_a_write_that_meets_the_lock_runs_again_off_the_loop_and_succeeds_once_it_is_released(
    server: RunningServer, api: ApiClient, people: dict[str, dict[str, str]]
) -> None:
    holder = LockHolder(server.config.db_path)
    threading.Timer(0.6, holder.release).start()  # released by another thread while the request waits
    started = time.monotonic()
    writing = asyncio.ensure_future(api.post("/api/v1/agents", {"name": "Retried", "agentType": "react"}, token="alice"))
    slowest = 0.0
    while not writing.done():  # the loop keeps serving while the write waits for its next try
        t = time.monotonic()
        assert (await api.get("/api/v1/system/health", token="alice")).status == 200
        slowest = max(slowest, time.monotonic() - t)
        await asyncio.sleep(0.05)
    r = await writing
    holder.proc.wait(10)
    assert r.status == 200, r.body  # db_busy_retry_s (2 s by default) outlasted the 0.6 s hold
    assert time.monotonic() - started >= 0.5 and slowest < 0.5
    assert [a["name"] for a in (await api.get("/api/v1/agents", token="alice")).data].count("Retried") == 1


@pytest.mark.config(db_loop_busy_timeout_ms=3000)
async def test_a_longer_loop_busy_timeout_lets_a_write_wait_for_a_lock_released_meanwhile(
    server: RunningServer, api: ApiClient, people: dict[str, dict[str, str]]
) -> None:
    holder = LockHolder(server.config.db_path)
    threading.Timer(0.3, holder.release).start()  # released by another thread while the loop waits
    r = await api.post("/api/v1/agents", {"name": "Waited", "agentType": "react"}, token="alice")
    holder.proc.wait(10)
    assert r.status == 200, r.body


async def test_a_stream_ending_while_another_process_holds_the_lock_completes_after_it_and_the_loop_keeps_serving(env: Any) -> None:
    from tests.helpers.llm_script import Script

    env.llm.enqueue(Script(text=["one ", "two ", "three ", "four"], delay_s=0.2))
    streaming = asyncio.ensure_future(env.stream("count"))
    await asyncio.sleep(0.3)
    holder = LockHolder(env_db_path(env))
    try:
        slowest = 0.0
        for _ in range(12):  # 1.2 s: the partial save and the end commit meet the lock meanwhile
            started = time.monotonic()
            r = await env.api.get("/api/v1/system/health", token="alice")
            slowest = max(slowest, time.monotonic() - started)
            assert r.status == 200
            await asyncio.sleep(0.1)
    finally:
        holder.release()
    events = await streaming
    assert slowest < 0.5  # the loop never waited on the lock (it waited 5 s per write before)
    done = events[-1].data
    assert done["status"] == "completed"
    messages = await env.messages()
    assert [m["content"] for m in messages if m["id"] == done["assistantMessageId"]] == ["one two three four"]


async def test_a_read_with_a_personal_access_token_is_served_while_another_process_holds_the_lock(
    server: RunningServer, api: ApiClient, people: dict[str, dict[str, str]]
) -> None:
    pat = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")).data["token"]
    api.tokens["pat"] = pat
    holder = LockHolder(server.config.db_path)
    try:
        r = await api.get("/api/v1/agents", token="pat")  # its first use would store lastUsedAt: skipped
    finally:
        holder.release()
    assert r.status == 200, r.body
