"""A full disk (a 30 MB tmpfs, root only): writes answer 507 and nothing answered 5xx is stored, no
stream says `completed` for an answer that is not stored, /health says DEGRADED, writes resume once space
is freed, and both a start and SIGTERM work while the disk is full."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any, AsyncIterator

import aiohttp
import pytest

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.process import ADMIN, ServerProcess

ENV = {"PLATFORM_STORAGE_MIN_FREE_MB": "1", "PLATFORM_STORAGE_CHECK_S": "0.2"}


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    if os.geteuid() != 0:
        pytest.skip("the full-disk test mounts a tmpfs: it needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=30m", "tmpfs", str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs failed here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder: Path) -> Path:
    """Write a file until the disk has no byte left."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


@contextlib.asynccontextmanager
async def running(server: ServerProcess) -> AsyncIterator[None]:
    try:
        await server.start()
        yield
    finally:
        server.kill()


async def login(api: ApiClient) -> None:
    r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
    assert r.status == 200, r.body
    api.tokens["admin"] = r.data["token"]


async def health(api: ApiClient) -> dict[str, Any]:
    r = await api.get("/api/v1/system/health", token="admin")
    assert r.status == 200, r.body
    data: dict[str, Any] = r.data
    return data


async def wait_health(api: ApiClient, status: str, timeout: float = 10.0) -> dict[str, Any]:
    async def reached() -> dict[str, Any]:
        data = await health(api)
        assert data["status"] == status, data
        return data

    return await eventually(reached, timeout=timeout, interval=0.1)


async def stream(api: ApiClient, agent: str, conversation: str) -> dict[str, Any]:
    """The stream's last `done` (or what it ended with: an HTTP error status)."""
    try:
        events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": conversation, "message": "hi"},
                               token="admin", timeout=30)
    except AssertionError as exc:  # not a stream: an error status
        return {"status": "http-error", "detail": str(exc)[:200]}
    done = [e.data for e in events if e.event == "done"]
    return done[-1] if done else {"status": "no-done", "events": [e.event for e in events]}


async def test_a_full_disk_loses_nothing_acknowledged_and_stores_nothing_refused(small_disk: Path, llm: ScriptedOpenAI) -> None:
    data_dir = small_disk  # (the server log goes beside it, off the small disk)
    server = ServerProcess(str(data_dir), env=ENV)
    async with aiohttp.ClientSession() as session, running(server):
        api = ApiClient(server.url, session)
        await login(api)
        await use_fake_openai(api, llm.url, token="admin")
        agent = await make_agent(api, token="admin")
        assert (await health(api))["status"] == "UP"

        # streams running while the disk fills up, creates right after
        llm.default_delay_s = 0.1
        streams = [asyncio.ensure_future(stream(api, agent, f"full-{i}")) for i in range(6)]
        await asyncio.sleep(0.3)
        filler = await asyncio.to_thread(fill, small_disk)
        names = [f"Full {uuid.uuid4().hex[:6]}" for _ in range(20)]
        creates = [await api.post("/api/v1/agents", {"name": n, "agentType": "react"}, token="admin") for n in names]
        dones = await asyncio.gather(*streams)
        more = [await stream(api, agent, f"late-{i}") for i in range(3)]

        degraded = await wait_health(api, "DEGRADED")
        assert degraded["status"] == "DEGRADED" and degraded["storage"]["readOnly"] and degraded["storage"]["reason"]
        refused = await api.post("/api/v1/agents", {"name": "Refused", "agentType": "react"}, token="admin")
        assert refused.status == 507 and refused.body["code"] == 507 and "read-only" in refused.body["msg"]
        r = await api.get("/api/v1/agents", token="admin")  # reads keep working
        assert r.status == 200

        filler.unlink()  # space returns
        assert (await wait_health(api, "UP"))["status"] == "UP"
        r = await api.get("/api/v1/agents", token="admin")
        stored = {a["name"] for a in r.data}
        for name, answer in zip(names, creates):
            assert answer.status in (200, 503, 507), answer.body
            if answer.status == 200:
                assert name in stored
            else:  # answered 5xx: not stored
                assert name not in stored, (name, answer.status)
        for i, done in enumerate(dones + more):
            conversation = f"full-{i}" if i < len(dones) else f"late-{i - len(dones)}"
            if done.get("status") == "completed":  # acknowledged: the answer is there
                r = await api.get(f"/api/v1/conversations/{conversation}/messages", token="admin")
                ids = {m["id"] for m in r.data} if r.status == 200 else set()
                assert done["assistantMessageId"] in ids, (conversation, done)

            async def idle() -> bool:  # a turn that ended unsaved is set idle as soon as the disk takes it
                r = await api.get(f"/api/v1/conversations/{conversation}/status", token="admin")
                return r.status == 404 or (r.status == 200 and r.data["streamStatus"] == "idle")

            await eventually(idle, interval=0.1, what=f"{conversation} idle ({done})")
        r = await api.post("/api/v1/agents", {"name": "Afterwards", "agentType": "react"}, token="admin")
        assert r.status == 200
        llm.default_delay_s = 0.0


async def test_start_and_sigterm_work_on_a_full_disk_and_partial_files_are_removed(small_disk: Path, llm: ScriptedOpenAI) -> None:
    data_dir = small_disk  # (the server log goes beside it, off the small disk)
    server = ServerProcess(str(data_dir), env=ENV)
    async with aiohttp.ClientSession() as session:
        async with running(server):
            api = ApiClient(server.url, session)
            await login(api)
            await use_fake_openai(api, llm.url, token="admin")
            agent = await make_agent(api, token="admin")
            llm.enqueue(Script(text=[f"w{i} " for i in range(200)], delay_s=0.05))
            task = asyncio.ensure_future(stream(api, agent, "cut"))
            await eventually(lambda: llm.requests, what="the turn's model call")
            await asyncio.sleep(0.3)
            server.kill()  # a conversation left running: the next start resets it
            with contextlib.suppress(Exception):
                await task
        partial = data_dir / "uploads" / "1" / "0123456789abcdef0123456789abcdef.png.part"
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_bytes(b"half an upload")
        filler = await asyncio.to_thread(fill, small_disk)
        async with running(server):  # starts although it cannot write
            api = ApiClient(server.url, session)
            await login(api)
            assert (await wait_health(api, "DEGRADED"))["status"] == "DEGRADED"
            await eventually(lambda: not partial.exists(), what="the partial file removed just after the start")
            assert server.proc is not None
            os.kill(server.proc.pid, signal.SIGTERM)
            code = await asyncio.to_thread(server.proc.wait, 20)
            assert code == 0, server.log_tail()
        filler.unlink()
        async with running(server):  # and starts clean once space is back
            api = ApiClient(server.url, session)
            await login(api)
            assert (await wait_health(api, "UP"))["status"] == "UP"
            r = await api.get("/api/v1/conversations/cut/status", token="admin")
            assert r.status == 200 and r.data["streamStatus"] == "idle"


async def test_an_upload_the_disk_cannot_hold_answers_507_leaves_no_partial_file_and_turns_read_only_on(
    small_disk: Path, llm: ScriptedOpenAI
) -> None:
    # no free-space threshold and no periodic check: only the failed write itself can say the disk is full
    server = ServerProcess(str(small_disk), env={"PLATFORM_STORAGE_MIN_FREE_MB": "0", "PLATFORM_STORAGE_CHECK_S": "0"})
    async with aiohttp.ClientSession() as session, running(server):
        api = ApiClient(server.url, session)
        await login(api)
        filler = await asyncio.to_thread(fill, small_disk)
        os.truncate(filler, filler.stat().st_size - (1 << 20))  # 1 MB left
        form = aiohttp.FormData()
        form.add_field("conversationId", "up1")
        form.add_field("file", b"x" * (3 << 20), filename="big.bin", content_type="application/octet-stream")
        r = await api.post("/api/v1/chat/upload", data=form, token="admin")
        assert r.status == 507 and r.body["code"] == 507, r.body
        uploads = small_disk / "uploads"
        assert not uploads.exists() or not [p for p in uploads.rglob("*") if p.is_file()]
        state = await health(api)
        assert state["status"] == "DEGRADED" and "full" in state["storage"]["reason"]
        filler.unlink()
        await asyncio.sleep(0.5)  # storage_check_s = 0: nothing measures again, the mode stays until a restart
        assert (await health(api))["status"] == "DEGRADED"
