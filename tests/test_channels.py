"""Channels: management, the platforms the console is told about, and the public webchat (each messaging platform's
protocol has its own test_channel_<platform>.py)."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import ChatEnv, names, text_of


async def make_channel(env: ChatEnv, kind: str, reply_url: str | None = None) -> dict[str, Any]:
    body = {"name": f"my {kind}", "channelType": kind, "agentId": env.agent_id}
    if reply_url:
        body["replyUrl"] = reply_url
    r = await env.api.post("/api/v1/channels", body, token="alice")
    assert r.status == 200, r.body
    return r.data


async def test_channel_management_is_for_workspace_admins_and_checks_its_input(env: ChatEnv) -> None:
    body = {"name": "x", "channelType": "im_e", "agentId": env.agent_id,
            "settings": {"botToken": "123:abc", "apiBaseUrl": "https://example.invalid/bot"}}
    assert (await env.api.post("/api/v1/channels", body, token="bob")).status == 403
    missing = await env.api.post("/api/v1/channels", {**body, "settings": {}}, token="alice")
    assert missing.status == 400 and "botToken" in missing.body["msg"]
    bad_url = await env.api.post("/api/v1/channels", {**body, "settings": {"botToken": "t", "apiBaseUrl": "ftp://x"}}, token="alice")
    assert bad_url.status == 400 and "apiBaseUrl" in bad_url.body["msg"]
    assert (await env.api.post("/api/v1/channels", {**body, "channelType": "im_z"}, token="alice")).status == 400
    assert (await env.api.post("/api/v1/channels", {**body, "agentId": "1"}, token="alice")).status == 404  # no such agent
    blocked = {**body, "settings": {"botToken": "t", "apiBaseUrl": "http://169.254.169.254/x"}}
    pre = await env.api.post("/api/v1/channels/preflight", blocked, token="alice")
    assert pre.data["valid"] is False and pre.data["problems"][0].startswith("settings.apiBaseUrl")
    created = (await env.api.post("/api/v1/channels", body, token="alice")).data
    assert "123:abc" not in str(created) and created["settings"] == {"apiBaseUrl": "https://example.invalid/bot"}
    assert [c["id"] for c in (await env.api.get("/api/v1/channels/type/im_e", token="carol")).data] == [created["id"]]
    health = await env.api.get(f"/api/v1/channels/{created['id']}/health", token="carol")
    assert health.data["healthy"] is False
    r = await env.api.put(f"/api/v1/channels/{created['id']}/toggle", {"enabled": False}, token="alice")
    assert r.data["enabled"] is False and r.data["secretSettingsSet"] == ["botToken"]  # kept through the update
    # the body is optional, as the document says: neither `enabled` nor `?enabled=` flips it, as the other toggles do
    r = await env.api.put(f"/api/v1/channels/{created['id']}/toggle", token="alice")
    assert r.status == 200 and r.data["enabled"] is True, r.body
    r = await env.api.put(f"/api/v1/channels/{created['id']}/toggle", {}, token="alice")
    assert r.status == 200 and r.data["enabled"] is False, r.body
    assert (await env.api.get("/api/v1/channels/status", token="bob")).status == 403
    status = await env.api.get("/api/v1/channels/status", token="alice")
    assert status.data["byType"]["im_e"]["unhealthy"] == 1
    assert (await env.api.get("/api/v1/channels", token="dave", workspace=env.people["dave"]["workspace"])).data == []
    assert (await env.api.delete(f"/api/v1/channels/{created['id']}", token="alice")).status == 200


async def test_the_console_is_told_each_platforms_name_fields_and_setup_help(env: ChatEnv) -> None:
    r = await env.api.get("/api/v1/channels/platforms", token="carol")
    assert r.status == 200, r.body
    by_type = {p["channelType"]: p for p in r.data}
    assert {"im_a", "im_b", "im_d", "im_e"} <= set(by_type)
    telegram = by_type["im_e"]
    assert telegram["label"] == "Telegram" and "http" not in telegram["help"]
    assert [(f["key"], f["secret"]) for f in telegram["fields"]] == [("botToken", True), ("apiBaseUrl", False)]
    assert telegram["webhookPath"] == "/api/v1/channels/webhook/im_e?channelId={id}"


async def test_the_public_webchat_streams_answers_per_session(env: ChatEnv) -> None:
    channel = await make_channel(env, "webchat")
    token = channel["publicToken"]
    config = await env.api.get("/api/v1/channels/webchat/config", params={"token": token})
    assert config.data["agentName"] == "Helper"
    assert (await env.api.get("/api/v1/channels/webchat/config", params={"token": "nope"})).status == 404
    events = await env.api.sse("POST", "/api/v1/channels/webchat/stream", {"token": token, "sessionId": "s1", "message": "hi"})
    assert names(events)[0] == "meta" and text_of(events) == "Echo: hi"
    bad = await env.api.sse("POST", "/api/v1/channels/webchat/stream", {"token": "nope", "sessionId": "s1", "message": "hi"})
    assert names(bad) == ["error"]


async def test_the_document_states_each_platforms_settings_and_an_update_that_the_stored_type_refuses_is_a_409(
    env: ChatEnv,
) -> None:
    """Seed 7 created a Feishu channel without its appId: the document allowed any settings. The create now states each
    type's settings; every body the document allows is taken, every body it refuses is a 400."""
    from tests.helpers.openapi_inputs import conforms

    doc = (await env.api.get("/v3/api-docs")).body
    key = "A" * 43
    base = {"name": "Bot", "agentId": str(env.agent_id)}
    feishu = {**base, "channelType": "im_c", "settings": {"appId": "cli_1", "appSecret": "s", "verificationToken": "v"}}
    answers: dict[int, list[dict[str, Any]]] = {
        200: [feishu, {**base, "channelType": "im_f", "settings": {"token": "t", "encodingAESKey": key}},
              {**base, "channelType": "webchat", "replyUrl": "not a url", "settings": {"any": 1}}],
        400: [{**base, "channelType": "im_c", "settings": {"appId": "cli_1"}},  # seed 7: no appSecret, no token
              {**base, "channelType": "im_c"},
              {**feishu, "settings": {**feishu["settings"], "appSecret": "\ufeff"}},  # blank as the document reads it
              {**feishu, "replyUrl": "ftp://x"},
              {**base, "channelType": "im_f", "settings": {"token": "t", "encodingAESKey": f" {key}"}},
              {**base, "channelType": "webchat", "settings": {"approverIds": "u1"}}],
    }
    made = {}
    for status, bodies in answers.items():
        for body in bodies:
            r = await env.api.post("/api/v1/channels", body, token="alice")
            assert r.status == status, (body, r.body)
            assert conforms(doc, "ChannelCreate", body) == (status == 200), body
            made.setdefault(body["channelType"], r.data)
    # an update names no type: the document cannot state the type's rules there, the stored type refuses (409)
    update = {"settings": {"appSecret": "s2"}}  # the given settings replace the public ones: appId is gone (secrets stay)
    r = await env.api.put(f"/api/v1/channels/{made['im_c']['id']}", update, token="alice")
    assert r.status == 409 and r.msg == "settings.appId: required for Feishu / Lark (App ID)", r.body
    assert conforms(doc, "ChannelUpdate", update)
    r = await env.api.put(f"/api/v1/channels/{made['im_c']['id']}", {"settings": {**feishu["settings"], "appId": "cli_2"}}, token="alice")
    assert r.status == 200 and r.data["settings"]["appId"] == "cli_2", r.body
