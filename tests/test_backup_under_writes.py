"""`platform-server backup` while clients create and delete agents and wiki materials: every backup
succeeds, and every file a restored row names is there."""
from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from platform_server.app import collect_migrations
from platform_server.config import load_config
from platform_server.restore import restore
from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, make_kb

BACKUPS = 10
TEXT = "Material about photosynthesis and chlorophyll. " * 400  # ~19 KB a file


def env_vars() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


async def run_backup(data_dir: str, archive: Path) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "platform_server", "backup", str(archive), "--data-dir", data_dir,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env_vars())
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, err.decode()


async def add_material(api: ApiClient, kb: str, title: str) -> str:
    r = await api.post(f"{KB}/{kb}/raw/text", {"title": title, "text": TEXT}, token="bob")
    assert r.status == 200, r.body
    return r.data["id"]


async def upload(api: ApiClient, cid: str, body: bytes) -> None:
    form = aiohttp.FormData()
    form.add_field("conversationId", cid)
    form.add_field("file", body, filename="notes.txt", content_type="text/plain")
    r = await api.post("/api/v1/chat/upload", data=form, token="bob")
    assert r.status == 200, r.body


async def churn(api: ApiClient, kb: str, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """Create and delete agents (with workspace files) and materials as fast as the server answers."""
    n = 0
    while not stop.is_set():
        n += 1
        r = await api.post("/api/v1/agents", {"name": f"churn {n}", "systemPrompt": "x", "agentType": "react"}, token="alice")
        assert r.status == 200, r.body
        agent = r.data["id"]
        for i in range(3):
            w = await api.put(f"/api/v1/agents/{agent}/workspace/files/notes-{i}.txt", {"content": TEXT}, token="alice")
            assert w.status == 200, w.body
        kept = await add_material(api, kb, f"kept {n}")
        gone = await add_material(api, kb, f"gone {n}")
        d = await api.delete(f"{KB}/{kb}/raw/{gone}", token="bob")
        assert d.status == 200, d.body
        d = await api.delete(f"/api/v1/agents/{agent}", token="alice")
        assert d.status == 200, d.body
        if n % 4 == 0:  # materials come and go: older ones are deleted too
            d = await api.delete(f"{KB}/{kb}/raw/{kept}", token="bob")
            assert d.status == 200, d.body
        counts["rounds"] = n


def missing_files(data_dir: Path) -> list[str]:
    """Files named by the restored database's rows that are not in the restored data dir."""
    with sqlite3.connect(data_dir / "platform.db") as conn:
        named = [f"wiki/{kb}/raw/{name}" for kb, name in conn.execute("SELECT kb_id, stored_name FROM wiki_raw")]
        named += [f"uploads/{uid}/{name}" for uid, name in conn.execute("SELECT user_id, stored_name FROM upload")]
        agents = {str(row[0]) for row in conn.execute("SELECT id FROM agent")}
    assert named, "the restored database names no files: the test proves nothing"
    folders = list((data_dir / "agents").iterdir()) if (data_dir / "agents").exists() else []
    strays = [f"agents/{p.name}" for p in folders if p.name not in agents]  # folders of deleted agents
    return [rel for rel in named if not (data_dir / rel).is_file()] + strays


async def test_ten_backups_under_agent_and_material_churn_all_succeed_and_restore_every_named_file(
        api: ApiClient, people: dict[str, Any], server: RunningServer, tmp_path: Path) -> None:
    kb = await make_kb(api, autoProcess=False)
    r = await api.post("/api/v1/agents", {"name": "kept", "systemPrompt": "x", "agentType": "react"}, token="alice")
    kept_agent = r.data["id"]
    w = await api.put(f"/api/v1/agents/{kept_agent}/workspace/files/kept.txt", {"content": "kept"}, token="alice")
    assert w.status == 200, w.body
    for i in range(40):
        await add_material(api, kb, f"seed {i}")
    for i in range(10):
        await upload(api, f"conv-{i}", TEXT.encode())
    stop, counts = asyncio.Event(), {"rounds": 0}
    writer = asyncio.create_task(churn(api, kb, stop, counts))
    results = []
    started = time.monotonic()
    try:
        for i in range(BACKUPS):
            results.append(await run_backup(server.config.data_dir, tmp_path / f"b{i}.tar.gz"))
            assert not writer.done(), writer.exception()
    finally:
        stop.set()
        await writer
    assert counts["rounds"] >= BACKUPS, counts  # the writes really ran during the backups
    assert [rc for rc, _ in results] == [0] * BACKUPS, [err[-300:] for rc, err in results if rc]
    assert not list(tmp_path.glob("*.partial")) and not list(tmp_path.glob(".*.partial"))
    assert time.monotonic() - started < 90
    known = [name for name, _ in collect_migrations()]
    for i in range(BACKUPS):
        target = tmp_path / f"restored-{i}"
        config = load_config(None, env={}, overrides={"data_dir": str(target)})
        await asyncio.to_thread(restore, config, str(tmp_path / f"b{i}.tar.gz"), known)
        assert missing_files(target) == [], f"backup {i}"
        assert (target / "agents" / kept_agent / "workspace" / "kept.txt").read_text() == "kept"
