"""Secrets of integrations: blank or too-short values are refused with `<field>: <message>`."""
from __future__ import annotations

from tests.helpers.chat import ChatEnv

CHANNELS = "/api/v1/channels"


async def test_a_channel_secret_of_sixteen_spaces_is_refused_and_nothing_is_created(env: ChatEnv) -> None:
    body = {"name": "x", "channelType": "im_d", "agentId": env.agent_id, "settings": {"botToken": "xoxb-1"}}
    r = await env.api.post(CHANNELS, {**body, "secret": " " * 16}, token="alice")
    assert r.status == 400 and r.body == {"code": 400, "msg": "secret: must not be blank", "data": None}
    r = await env.api.post(CHANNELS, {**body, "secret": "  short-secret  "}, token="alice")
    assert r.status == 400 and r.msg == "secret: must be at least 16 characters, not counting surrounding spaces", r.body
    assert (await env.api.get(CHANNELS, token="alice")).data == []
    created = await env.api.post(CHANNELS, {**body, "secret": "a-real-shared-secret"}, token="alice")
    assert created.status == 200, created.body
    r = await env.api.put(f"{CHANNELS}/{created.data['id']}", {"secret": "\t" * 20}, token="alice")
    assert r.status == 400 and r.msg == "secret: must not be blank", r.body


async def test_a_blank_skill_secret_or_provider_key_is_refused_but_empty_still_removes(env: ChatEnv) -> None:
    skill = (await env.api.post("/api/v1/skills", {"name": "deploy", "description": "Deploys."}, token="alice")).data
    base = f"/api/v1/skills/{skill['id']}/secrets"
    r = await env.api.post(base, {"key": "TOKEN", "value": "    "}, token="alice")
    assert r.status == 400 and r.msg == 'value: must not be blank (send "" to remove it)', r.body
    assert (await env.api.get(base, token="alice")).data == []
    assert (await env.api.post(base, {"key": "TOKEN", "value": "real-token-value"}, token="alice")).status == 200
    assert (await env.api.post(base, {"key": "TOKEN", "value": ""}, token="alice")).data["deleted"] is True

    r = await env.api.put("/api/v1/models/fake/config", {"apiKey": "   "}, token="alice")
    assert r.status == 400 and r.msg == 'apiKey: must not be blank (send "" to remove it)', r.body
