"""`backup` / `restore` when the database is PostgreSQL (issue 31): the archive holds a pg_dump of the live
database (never a data dir without its database), restore puts it into a new, empty database and the
files beside it; without PostgreSQL's client programs, or onto the other engine, it is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import postgres
from tests.helpers.chat import chat_env, text_of
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.seed import upload_form
from tests.helpers.server import PASSWORD, create_personas, start_server

pytestmark = pytest.mark.skipif(shutil.which("initdb") is None and not postgres._debian_bins(), reason="PostgreSQL is not installed")


def cli(*args: str, url: str = "", path: str = "/usr/bin:/bin") -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PLATFORM_DATABASE_URL": url}
    return subprocess.run([sys.executable, "-m", "platform_server", *args], capture_output=True, text=True, timeout=300, env=env)


async def test_a_backup_of_a_postgres_install_restores_into_a_new_database_and_data_dir(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    url = postgres.cluster().fresh_database()
    data_dir = str(tmp_path / "data")
    first = await start_server(data_dir, database_url=url)
    try:
        people = await create_personas(first.client)
        env = await chat_env(first.client, people, llm)
        assert text_of(await env.stream("hello c1", conversation_id="c1")) == "Echo: hello c1"
        r = await first.client.post("/api/v1/chat/upload", token="alice", data=upload_form("c1", b"uploaded bytes"))
        assert r.status == 200, r.body
        stored = r.data["storedName"]
        (Path(data_dir) / "agents" / env.agent_id / "workspace" / "notes.txt").write_text("kept")
        archive = tmp_path / "backup.tar.gz"
        done = cli("backup", str(archive), "--data-dir", data_dir, url=url)  # the server keeps running
        assert done.returncode == 0, done.stderr
    finally:
        await first.stop()
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
    assert "platform.pgdump" in names and "platform.db" not in names, names
    assert manifest["database"] == "postgresql" and manifest["migrations"]
    assert any(ref.endswith(f"/{stored}") for ref in manifest["referenced"])  # the upload's row named its file

    target_url, target_dir = postgres.cluster().fresh_database(), str(tmp_path / "restored")
    done = cli("restore", str(archive), "--data-dir", target_dir, url=target_url)
    assert done.returncode == 0, done.stderr
    again = cli("restore", str(archive), "--data-dir", str(tmp_path / "other"), url=target_url)
    assert again.returncode != 0 and "not empty" in again.stderr, again.stderr
    restored = await start_server(target_dir, database_url=target_url)
    try:
        r = await restored.client.post("/api/v1/auth/login", {"username": "bob", "password": PASSWORD})
        assert r.status == 200 and r.data["id"] == people["bob"]["id"], r.body
        restored.client.tokens.update(first.client.tokens)  # the JWT secret came along with the data dir
        r = await restored.client.get("/api/v1/conversations/c1/messages", token="alice")
        assert r.status == 200, r.body
        assert "Echo: hello c1" in json.dumps(r.data)
        r = await restored.client.get(f"/api/v1/agents/{env.agent_id}/workspace/files/notes.txt", token="alice")
        assert r.raw == b"kept"
        assert (Path(target_dir) / "uploads" / str(people["alice"]["id"]) / stored).read_bytes() == b"uploaded bytes"
        events = await restored.client.sse("POST", "/api/v1/chat/stream", {
            "agentId": env.agent_id, "conversationId": "c2", "message": "after restore"}, token="alice")
        assert text_of(events) == "Echo: after restore"  # the sealed provider key still opens
    finally:
        await restored.stop()
    for u in (url, target_url):
        postgres.cluster().drop(u)


async def test_without_pg_dump_a_backup_is_refused_and_no_archive_is_left(tmp_path: Any) -> None:
    url = postgres.cluster().fresh_database()
    running = await start_server(str(tmp_path / "data"), database_url=url)
    await running.stop()
    archive = tmp_path / "b.tar.gz"
    done = cli("backup", str(archive), "--data-dir", str(tmp_path / "data"), url=url, path=str(tmp_path))  # no pg_dump on PATH
    assert done.returncode != 0 and "pg_dump is not installed" in done.stderr and "postgresql-client" in done.stderr, done.stderr
    assert not archive.exists() and not list(tmp_path.glob("*.partial"))
    postgres.cluster().drop(url)


async def test_an_archive_goes_back_only_onto_the_engine_it_came_from(tmp_path: Any) -> None:
    running = await start_server(str(tmp_path / "lite"), database_url="")  # a SQLite install
    try:
        await create_personas(running.client)
    finally:
        await running.stop()
    archive = tmp_path / "lite.tar.gz"
    assert cli("backup", str(archive), "--data-dir", str(tmp_path / "lite")).returncode == 0
    url = postgres.cluster().fresh_database()
    done = cli("restore", str(archive), "--data-dir", str(tmp_path / "to-pg"), url=url)
    assert done.returncode != 0 and "migrate-to-postgres" in done.stderr, done.stderr
    assert not os.path.exists(tmp_path / "to-pg" / "platform.db")
    name = url.rsplit("/", 1)[1]
    assert postgres.cluster().psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database=name).strip() == "0"
    postgres.cluster().drop(url)


def test_the_ports_snapshot_is_a_dump_pg_restore_reads_and_garbage_is_not(tmp_path: Any) -> None:
    from platform_server.ports.database import PostgresDatabase

    url = postgres.cluster().fresh_database()
    port = PostgresDatabase(url)
    target = str(tmp_path / "snap.pgdump")
    port.snapshot(target, 1000)
    assert port.check_copy(target) == "ok"
    Path(target).write_bytes(b"PGDMP" + b"\0" * 64)  # a dump's magic and nothing readable after it
    assert "pg_restore failed" in port.check_copy(target)
    postgres.cluster().drop(url)
