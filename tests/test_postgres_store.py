"""`database_url`: the platform stores everything in PostgreSQL (issue 31), migrations run once under an
advisory lock, and what one server wrote a second one reads back."""

from __future__ import annotations

import asyncio
import shutil
import time
from typing import Any

import pytest

from platform_server.config import load_config
from tests.helpers import postgres
from tests.helpers.eventually import eventually
from tests.helpers.server import create_personas, start_server

pytestmark = pytest.mark.skipif(
    shutil.which("initdb") is None and not postgres._debian_bins(), reason="PostgreSQL is not installed"
)


async def test_a_server_on_postgres_keeps_its_data_there(tmp_path: Any) -> None:
    pg = postgres.cluster()
    url = pg.fresh_database()
    name = url.rsplit("/", 1)[1]
    running = await start_server(str(tmp_path / "one"), database_url=url)
    try:
        people = await create_personas(running.client)
        r = await running.client.get("/api/v1/auth/users", token="alice")
        assert r.status == 200, r.body
    finally:
        await running.stop()
    assert not (tmp_path / "one" / "platform.db").exists()  # nothing went to SQLite
    users = pg.psql('SELECT username FROM "user" ORDER BY username', database=name).split()
    assert users == ["alice", "bob", "carol", "dave"]
    applied = int(pg.psql("SELECT count(*) FROM schema_migration", database=name))
    assert applied > 10
    # a restart (the data dir keeps the secrets' keys: every process must share them): no migration runs
    # twice, the users are there
    again = await start_server(str(tmp_path / "one"), database_url=url)
    try:
        r = await again.client.post("/api/v1/auth/login", {"username": "bob", "password": "password-123"})
        assert r.status == 200, r.body
        assert r.data["id"] == people["bob"]["id"]
    finally:
        await again.stop()
    assert int(pg.psql("SELECT count(*) FROM schema_migration", database=name)) == applied
    pg.drop(url)


def test_database_url_is_read_from_the_environment() -> None:
    config = load_config(None, env={"PLATFORM_DATABASE_URL": "postgresql://u:p@db.example/platform"})
    assert config.database_url == "postgresql://u:p@db.example/platform"
    assert load_config(None, env={}).database_url == ""  # the default: the SQLite file


def test_the_database_location_an_admin_sees_never_holds_the_password() -> None:
    from platform_server.ports.database import PostgresDatabase

    assert PostgresDatabase("postgresql://app:s3cret@db.example:5433/platform").location() == "postgresql://app@db.example:5433/platform"


def test_a_bad_database_url_is_refused() -> None:
    from platform_server import pg

    with pytest.raises(ValueError, match="postgresql://"):
        pg.connect_params("mysql://u@h/db")
    with pytest.raises(ValueError, match="names no database"):
        pg.connect_params("postgresql://u@h/")


async def test_another_process_write_invalidates_this_process_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The change feed: psql (another process) disables bob; this server's auth cache, which would keep his
    token for an hour without a feed, refuses him as soon as the NOTIFY arrives."""
    from platform_server.features.auth import cache

    monkeypatch.setattr(cache, "EPOCH_RECHECK_S", 3600.0)  # only the change feed can invalidate now
    pg = postgres.cluster()
    url = pg.fresh_database()
    running = await start_server(str(tmp_path / "data"), database_url=url)
    try:
        people = await create_personas(running.client)
        api = running.client
        assert (await api.get("/api/v1/agents", token="bob")).status == 200  # cached now
        pg.psql(f'UPDATE "user" SET enabled = 0 WHERE id = {int(people["bob"]["id"])}', database=url.rsplit("/", 1)[1])

        async def refused() -> bool:
            return (await api.get("/api/v1/agents", token="bob")).status == 401

        await eventually(refused, timeout=5.0, what="bob refused after another process disabled him")
        assert (await api.get("/api/v1/agents", token="carol")).status == 200  # the others are unaffected
    finally:
        await running.stop()
    pg.drop(url)


async def test_wiki_keyword_search_uses_tsvector_on_postgres(tmp_path: Any) -> None:
    """FTS5's tables are tsvector tables on PostgreSQL: any word matches, a title hit outranks a body hit,
    other KBs' rows stay out."""
    from platform_server.features.wiki import search

    pg = postgres.cluster()
    url = pg.fresh_database()
    running = await start_server(str(tmp_path / "data"), database_url=url)
    try:
        pg.psql(
            "INSERT INTO wiki_page_fts (rowid, title, body, kb_id) VALUES"
            " (1, 'Kettle care', 'descale it monthly', 7), (2, 'Plants', 'the kettle waters ferns', 7),"
            " (3, 'Kettle', 'another knowledge base', 8), (4, 'Bikes', 'nothing to see', 7)",
            database=url.rsplit("/", 1)[1],
        )
        scores = search._keyword("wiki_page_fts", [7], "How is the kettle descaled?", 10)
        assert set(scores) == {1, 2} and scores[1] == 1.0 and 0 < scores[2] < 1.0
        assert search._keyword("wiki_page_fts", [7], "?!", 10) == {}
    finally:
        await running.stop()
    pg.drop(url)


async def test_the_leader_lock_passes_to_this_process_when_the_holder_is_killed(tmp_path: Any) -> None:
    """Another process holds the leader lock: this server runs no shared loop; SIGKILL that process and this
    one becomes the leader within a few seconds (PostgreSQL ends the dead session and frees its lock)."""
    import os
    import signal
    import subprocess
    import sys

    from platform_server import pg as pg_mechanics
    from platform_server.ports import leader

    pg = postgres.cluster()
    url = pg.fresh_database()
    holder_code = (
        "import sys, time; from platform_server import pg; p = pg.Leader(sys.argv[1]); p.start();"
        " print('leader' if p.is_leader() else 'follower', flush=True); time.sleep(600)"
    )
    holder = subprocess.Popen([sys.executable, "-c", holder_code, url], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "leader"
        running = await start_server(str(tmp_path / "data"), database_url=url)
        try:
            assert isinstance(leader.current(), pg_mechanics.Leader) and not leader.is_leader()
            os.kill(holder.pid, signal.SIGKILL)
            holder.wait(10)

            async def leading() -> bool:
                return leader.is_leader()

            await eventually(leading, timeout=10.0, what="this process took the leader lock")
        finally:
            await running.stop()
        assert not leader.is_leader() or isinstance(leader.current(), leader.ThisProcess)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)
    pg.drop(url)


async def test_a_server_on_postgres_stops_at_once_without_waiting_for_its_change_listeners_poll(tmp_path: Any) -> None:
    # the listener's thread waited out its 1 s select before it saw the stop flag: every stop (a restart, a
    # test server) took a second; stop() now wakes it
    running = await start_server(str(tmp_path / "one"), database_url=postgres.cluster().fresh_database())
    await asyncio.sleep(0.2)  # the listener is in its select
    began = time.perf_counter()
    await running.stop()
    assert time.perf_counter() - began < 0.5
