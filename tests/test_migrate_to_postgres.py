"""`platform-server migrate-to-postgres` (issue 31): a SQLite install seeded through the API (agents, a
conversation with its messages, wiki pages and chunks, memory, cron jobs, triggers, skills, settings,
users...) is copied into a new PostgreSQL database; the server started on it answers every read route
as the SQLite server did, the same people log in, new rows get new ids; a non-empty target is refused."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from tests.helpers import postgres
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.seed import Seeded, seed_workspace_one
from tests.helpers.server import PASSWORD, RunningServer, create_personas, start_server

pytestmark = pytest.mark.skipif(shutil.which("initdb") is None and not postgres._debian_bins(), reason="PostgreSQL is not installed")

# Read routes whose answers are not (only) the stored data: the process's own state (provider health,
# install tasks in memory), the time of the answer (an export's exportedAt), counters a read itself moves.
LIVE = re.compile(r"/health|/runtime|/metrics|/status|/events|/stream|/usage|/activity|/audit|/admin/|/system|/provider-pool|/export")


async def _reads(running: RunningServer, s: Seeded) -> dict[str, Any]:
    """Every parameter-free or seed-filled GET route's answer, as alice, where it is 200 and JSON."""
    answers: dict[str, Any] = {}
    for r in running.platform.routes:
        if "get" not in {m.lower() for m in r.handler.implemented_methods()} or "GET" in r.handler.sse_methods:
            continue
        path, _ = s.fill(r.template)
        if LIVE.search(path):
            continue
        res = await running.client.get(path, token="alice")
        if res.status == 200 and res.data is not None:
            answers[path] = res.data
    return answers


def _migrate(data_dir: str, url: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "platform_server", "migrate-to-postgres", "--data-dir", data_dir, "--to", url]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


async def test_a_seeded_sqlite_install_moves_to_postgres_and_serves_the_same_data(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    data_dir = str(tmp_path / "data")
    first = await start_server(data_dir, database_url="")  # SQLite, whatever PLATFORM_TEST_DATABASE says
    try:
        people = await create_personas(first.client)
        s = await seed_workspace_one(first.client, people, llm, data_dir)
        before = await _reads(first, s)
    finally:
        await first.stop()
    with sqlite3.connect(os.path.join(data_dir, "platform.db")) as conn:
        kinds = ("agent", "message", "wiki_chunk", "wiki_page", "user", "cron_job", "setting")
        counts = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in kinds}
    assert all(counts.values()), counts  # the seed wrote each kind

    url = postgres.cluster().fresh_database()
    done = _migrate(data_dir, url)
    assert done.returncode == 0, done.stderr[-3000:]
    for table, n in counts.items():  # a line per table, with the count read back and its checksum
        assert re.search(rf"^{table}: {n} rows, checksum [0-9a-f]{{16}} \(read back: same\)$", done.stdout, re.M), done.stdout

    again = await start_server(data_dir, database_url=url)
    try:
        api: ApiClient = again.client
        r = await api.post("/api/v1/auth/login", {"username": "bob", "password": PASSWORD})  # the same person, the same password
        assert r.status == 200 and r.data["id"] == people["bob"]["id"], r.body
        r = await api.post("/api/v1/auth/login", {"username": "alice", "password": PASSWORD})
        assert r.status == 200, r.body
        api.tokens["alice"] = r.data["token"]
        after = await _reads(again, s)
        assert len(before) > 60, sorted(before)
        differ = [p for p in before if json.dumps(before[p], sort_keys=True) != json.dumps(after.get(p), sort_keys=True)]
        assert not differ, "\n".join(f"{p}\n {json.dumps(before[p], sort_keys=True)}\n {json.dumps(after.get(p), sort_keys=True)}" for p in differ)
        r = await api.post("/api/v1/agents", {"name": "after the move", "systemPrompt": "Hi"}, token="alice")
        assert r.status == 200, r.body  # the id sequences moved past the copied ids
        assert int(r.data["id"]) > int(s.agent)
    finally:
        await again.stop()

    done = _migrate(data_dir, url)  # once more: the target holds the copy now
    assert done.returncode != 0 and "not empty" in done.stderr, done.stderr[-2000:]
    postgres.cluster().drop(url)


def test_a_source_that_is_not_a_platform_database_is_refused_and_nothing_is_written(tmp_path: Any) -> None:
    source = tmp_path / "other.db"
    with sqlite3.connect(source) as conn:
        conn.execute("CREATE TABLE t (x)")
    url = postgres.cluster().fresh_database()
    command = [sys.executable, "-m", "platform_server", "migrate-to-postgres", "--data-dir", str(tmp_path / "d"), "--from", str(source), "--to", url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "not a platform database" in done.stderr, done.stderr[-2000:]
    name = url.rsplit("/", 1)[1]
    tables = postgres.cluster().psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database=name).strip()
    postgres.cluster().drop(url)
    assert tables == "0"  # refused before the schema went in: the database is as empty as it was


async def test_a_copy_that_fails_midway_leaves_the_target_empty_for_another_try(tmp_path: Any) -> None:
    data_dir = str(tmp_path / "data")
    first = await start_server(data_dir, database_url="")
    try:
        await create_personas(first.client)
    finally:
        await first.stop()
    with sqlite3.connect(os.path.join(data_dir, "platform.db")) as conn:  # a value PostgreSQL's column refuses
        conn.execute("UPDATE workspace_member SET workspace_id = 'not a number' WHERE rowid = (SELECT MIN(rowid) FROM workspace_member)")
    url = postgres.cluster().fresh_database()
    done = _migrate(data_dir, url)
    assert done.returncode != 0 and "workspace_member: PostgreSQL refused a row" in done.stderr, done.stderr[-2000:]
    name = url.rsplit("/", 1)[1]
    assert postgres.cluster().psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database=name).strip() == "0"
    postgres.cluster().drop(url)
