"""Smaller trust checks: datasource folders per workspace, webhook replay and probing, foreign ids in agent
bindings, bcrypt's 72-byte limit, what a PAT may do, short secret previews, deeply nested JSON."""
from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.client import ApiClient
from tests.helpers.server import PASSWORD, RunningServer


def sqlite_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")


async def test_a_sqlite_datasource_cannot_point_into_another_workspaces_folder(env: ChatEnv, server: Any) -> None:
    other = env.people["dave"]["workspace"]
    root = Path(server.config.data_dir) / "datasources"
    sqlite_file(root / "1" / "mine.db")
    ok = await env.api.post("/api/v1/datasources", {"name": "mine", "type": "sqlite", "config": {"path": "mine.db"}},
                            token="alice")
    assert ok.status == 200, ok.body
    assert ok.data["config"]["path"].endswith("datasources/1/mine.db")
    for path in ("../1/mine.db", str(root / "1" / "mine.db")):
        r = await env.api.post("/api/v1/datasources", {"name": "theirs", "type": "sqlite", "config": {"path": path}},
                               token="dave", workspace=other)
        assert r.status == 403, (path, r.body)  # a path outside the caller's own folder is refused, nothing stored


async def test_a_signed_webhook_without_message_id_is_not_replayable(env: ChatEnv, server: RunningServer) -> None:
    from tests.helpers.im_wecom import AES_KEY, TOKEN, callback
    from tests.helpers.messengers import settle

    r = await env.api.post("/api/v1/channels", {"name": "im", "channelType": "im_f", "agentId": env.agent_id,
                                                "settings": {"token": TOKEN, "encodingAESKey": AES_KEY}}, token="alice")
    message = {"chattype": "single", "from": {"userid": "u"}, "msgtype": "text", "text": {"content": "hi"},
               "response_url": "https://qyapi.weixin.qq.com/cgi-bin/aibot/response?response_code=x"}  # no msgid
    query, body = callback(message)
    url = f"/api/v1/channels/webhook/im_f?channelId={r.data['id']}&{query}"
    first = await env.api.post(url, data=body)
    assert first.status == 200, first.body
    again = await env.api.post(url, data=body)  # the same signed delivery replayed: deduplicated on its body
    assert again.status == 200
    await settle(server)
    assert len(env.llm.requests) == 1


async def test_an_unsigned_webhook_gets_the_same_401_whether_the_channel_exists_or_not(env: ChatEnv) -> None:
    r = await env.api.post("/api/v1/channels", {"name": "im", "channelType": "im_a", "agentId": env.agent_id,
                                                "settings": {"appKey": "ding-k"}}, token="alice")
    answers = []
    for channel_id in (r.data["id"], "999999999"):
        payload = json.dumps({"msgId": "m", "senderStaffId": "u", "msgtype": "text", "text": {"content": "hi"}}).encode()
        res = await env.api.post(f"/api/v1/channels/webhook/im_a?channelId={channel_id}", data=payload,
                                 headers={"Content-Type": "application/json", "timestamp": str(int(time.time() * 1000)),
                                          "sign": "bm90IHRoZSBzaWduYXR1cmU="})
        answers.append((res.status, res.body))
    assert answers[0] == answers[1] and answers[0][0] == 401


async def test_agent_bindings_refuse_another_workspaces_skill_and_knowledge_base(env: ChatEnv) -> None:
    other = env.people["dave"]["workspace"]
    skill = await env.api.post("/api/v1/skills", {"name": "dave-skill", "description": "d", "content": "x"},
                               token="dave", workspace=other)
    assert skill.status == 200, skill.body
    agent = f"/api/v1/agents/{env.agent_id}"
    r = await env.api.put(f"{agent}/skills", {"skillIds": [skill.data["id"]]}, token="alice")
    assert r.status == 403, r.body
    r = await env.api.post(f"{agent}/skills/{skill.data['id']}", token="alice")
    assert r.status == 403, r.body
    assert (await env.api.get(f"{agent}/skills", token="alice")).data == []
    kb = await env.api.post("/api/v1/wiki/knowledge-bases", {"name": "dave kb"}, token="dave", workspace=other)
    assert kb.status == 200, kb.body
    r = await env.api.put(agent, {"primaryKbId": kb.data["id"]}, token="alice")
    assert r.status == 403, r.body


async def test_passwords_over_72_bytes_are_not_cut_every_character_counts(api: ApiClient, people: dict) -> None:
    # bcrypt reads 72 bytes: a longer password is hashed (SHA-256, base64) before bcrypt, so the 73rd byte counts too
    long = "é" * 37  # 74 bytes in UTF-8
    r = await api.post("/api/v1/auth/users", {"username": "longpw", "password": long}, token="alice")
    assert r.status == 200, r.body
    assert (await api.post("/api/v1/auth/login", {"username": "longpw", "password": long})).status == 200
    assert (await api.post("/api/v1/auth/login", {"username": "longpw", "password": "é" * 36 + "e"})).status == 401
    r = await api.put(f"/api/v1/auth/users/{people['bob']['id']}/password", token="bob",
                      params={"oldPassword": PASSWORD, "newPassword": "x" * 73})
    assert r.status == 200, r.body
    assert (await api.post("/api/v1/auth/login", {"username": "bob", "password": "x" * 72})).status == 401
    assert (await api.post("/api/v1/auth/login", {"username": "bob", "password": "x" * 73})).status == 200


async def test_a_pat_cannot_mint_pats_and_a_password_change_revokes_the_users_pats(api: ApiClient, people: dict) -> None:
    r = await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")
    assert r.status == 200, r.body
    pat = r.data["token"]
    api.tokens["bob-pat"] = pat
    assert (await api.get("/api/v1/auth/tokens", token="bob-pat")).status == 200
    minted = await api.post("/api/v1/auth/tokens", {"name": "more"}, token="bob-pat")
    assert minted.status == 403, minted.body
    r = await api.put(f"/api/v1/auth/users/{people['bob']['id']}/password", token="bob",
                      params={"oldPassword": PASSWORD, "newPassword": "a-new-password-1"})
    assert r.status == 200, r.body
    assert (await api.get("/api/v1/auth/tokens", token="bob-pat")).status == 401


async def test_deeply_nested_json_is_a_clear_400(api: ApiClient, people: dict) -> None:
    deep = ("[" * 100_000 + "]" * 100_000).encode()
    r = await api.post("/api/v1/agents", data=deep, headers={"Content-Type": "application/json"}, token="alice")
    assert r.status == 400 and "nested" in r.body["msg"], r.body
    nested: Any = "x"
    for _ in range(200):
        nested = {"a": nested}
    r = await api.post("/api/v1/channels", {"name": "n", "channelType": "webchat", "agentId": "1", "settings": nested},
                       token="alice")
    assert r.status == 400 and "nested" in r.body["msg"], r.body
    assert (await api.get("/api/v1/agents", token="alice")).status == 200
