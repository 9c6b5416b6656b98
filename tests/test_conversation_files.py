"""A conversation's files for the console: the owner's uploads and the files its tools generated."""
from __future__ import annotations

import aiohttp

from platform_server.features.media.service import save_generated
from tests.helpers.chat import ChatEnv
from tests.helpers.server import RunningServer


async def upload(env: ChatEnv, cid: str, name: str, body: bytes, token: str = "alice") -> dict:
    form = aiohttp.FormData()
    form.add_field("conversationId", cid)
    form.add_field("file", body, filename=name, content_type="text/plain")
    r = await env.api.post("/api/v1/chat/upload", data=form, token=token)
    assert r.status == 200, r.body
    return r.data


async def test_the_owner_sees_uploads_and_generated_files_with_their_one_time_state(env: ChatEnv, server: RunningServer) -> None:
    events = await env.stream("hello", conversation_id="files-1")
    assert events[-1].event == "done"
    up = await upload(env, "files-1", "notes.txt", b"some notes")
    alice = int(env.people["alice"]["id"])
    made = await save_generated(alice, 1, "files-1", "chart.csv", "text/csv", b"a,b\n1,2\n")
    await save_generated(alice, 1, "other-conv", "elsewhere.txt", "text/plain", b"x")

    r = await env.api.get("/api/v1/conversations/files-1/files", token="alice")
    assert r.status == 200, r.body
    assert [(u["name"], u["size"], u["url"]) for u in r.data["uploads"]] == [("notes.txt", 10, up["url"])]
    assert [(g["name"], g["state"], g["url"]) for g in r.data["generated"]] == [("chart.csv", "available", made["url"])]
    assert (await env.api.get(made["url"])).status == 200  # the one download
    r = await env.api.get("/api/v1/conversations/files-1/files", token="alice")
    assert r.data["generated"][0]["state"] == "downloaded" and r.data["generated"][0]["url"] is None


async def test_another_user_or_an_unknown_conversation_gets_nothing(env: ChatEnv) -> None:
    await env.stream("hello", conversation_id="files-2")
    assert (await env.api.get("/api/v1/conversations/files-2/files", token="bob")).status in (403, 404)
    assert (await env.api.get("/api/v1/conversations/nope/files", token="alice")).status == 404
    assert (await env.api.get("/api/v1/conversations/files-2/files")).status == 401
