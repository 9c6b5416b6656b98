"""Blocking work (multipart parsing of uploads, bcrypt) runs in the executor, never on the IOLoop."""
from __future__ import annotations

import aiohttp
import bcrypt
import pytest
import python_multipart.multipart

from platform_server.features.auth import service as auth
from tests.helpers.client import ApiClient
from tests.helpers.loop_watch import LoopUse, watch
from tests.helpers.seed import memory_zip


def form(**fields: bytes | str) -> aiohttp.FormData:
    data = aiohttp.FormData()
    for name, value in fields.items():
        if isinstance(value, bytes):
            data.add_field(name, value, filename=f"{name}.bin", content_type="application/octet-stream")
        else:
            data.add_field(name, value)
    return data


async def test_every_multipart_route_parses_its_body_off_the_event_loop(
    api: ApiClient, people: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = await api.post("/api/v1/agents", {"name": "Files"}, token="alice")
    agent = r.data["id"]
    r = await api.post("/api/v1/wiki/knowledge-bases", {"name": "Docs"}, token="alice")
    assert r.status == 200, r.body
    kb = r.data["id"]
    use = LoopUse()
    watch(monkeypatch, python_multipart.multipart, "MultipartParser", use)  # the streaming parser reads the spooled body
    calls = {
        "/api/v1/chat/upload": form(conversationId="c1", file=b"x" * 100_000),
        "/api/v1/stt/transcribe": form(file=b"RIFF" + b"x" * 100_000),
        f"/api/v1/agents/{agent}/workspace/memory/import/preview": form(file=memory_zip()),
        f"/api/v1/agents/{agent}/workspace/memory/import": form(file=memory_zip()),
        "/api/v1/skills/install/upload": form(file=b"not a zip"),
        f"/api/v1/wiki/knowledge-bases/{kb}/raw/upload": form(file=b"plain text notes"),
    }
    for path, body in calls.items():
        res = await api.post(path, data=body, token="alice")
        assert res.status in (200, 400), (path, res.body)
        assert res.code != 500
    assert use.on_loop == [] and len(use.off_loop) == len(calls)


async def test_a_login_for_an_unknown_user_does_its_bcrypt_work_off_the_event_loop(
    api: ApiClient, people: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "_DUMMY_HASHES", {})  # the dummy hash is computed on first use
    use = LoopUse()
    watch(monkeypatch, bcrypt, "hashpw", use)
    watch(monkeypatch, bcrypt, "checkpw", use)
    res = await api.post("/api/v1/auth/login", {"username": "nobody", "password": "whatever-123"})
    assert res.status == 401
    assert use.on_loop == [] and sorted(use.off_loop) == ["checkpw", "hashpw"]
