"""A write-only secret never follows its object to another origin: a messaging platform's tokens, datasource and MCP
headers, a provider's API key are dropped when the URL's origin changes, unless given again in that request."""
from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.im_qq import LocalQQ, c2c_event
from tests.helpers.server import free_port

LOCAL = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))
MASKED_DS = "********"


@pytest.fixture
async def platforms() -> AsyncIterator[tuple[LocalQQ, LocalQQ]]:
    real, attacker = LocalQQ(), LocalQQ()
    yield real, attacker
    real.stop()
    attacker.stop()


@LOCAL
async def test_a_platform_channel_moved_to_another_api_origin_forgets_its_tokens(
        env: ChatEnv, platforms: tuple[LocalQQ, LocalQQ]) -> None:
    real, attacker = platforms
    settings = {"appId": real.app_id, "appSecret": real.app_secret, "apiBaseUrl": real.url, "authBaseUrl": real.url}
    channel = (await env.api.post("/api/v1/channels", {"name": "qq", "channelType": "im_h", "agentId": env.agent_id,
                                                      "settings": settings}, token="alice")).data
    path = f"/api/v1/channels/{channel['id']}"
    same = await env.api.put(path, {"settings": {**settings, "appSecret": None, "apiBaseUrl": real.url + "/v2"}}, token="alice")
    assert same.status == 200 and same.data["secretSettingsSet"] == ["appSecret"]  # same origin: kept
    moved = {"appId": real.app_id, "apiBaseUrl": attacker.url, "authBaseUrl": attacker.url}
    r = await env.api.put(path, {"settings": moved}, token="alice")
    assert r.status == 409 and "appSecret" in r.msg, r.body  # the stored secret does not follow: type it again
    r = await env.api.put(path, {"settings": {**moved, "apiBaseUrl": real.url}}, token="alice")
    assert r.status == 409  # the access token host moved alone: the same
    assert (await env.api.get(path, token="alice")).data["settings"]["apiBaseUrl"] == real.url + "/v2"
    r = await env.api.put(path, {"settings": {**moved, "appSecret": "typed-again"}}, token="alice")
    assert r.status == 200 and r.data["secretSettingsSet"] == ["appSecret"]
    body, headers = attacker.signed(c2c_event("e1", "u1", "hi"), secret="typed-again")
    assert (await env.api.post(f"/api/v1/channels/webhook/im_h?channelId={channel['id']}", data=body, headers=headers)).status == 200
    assert real.sent == [] and real.tokens == set()


async def test_datasource_headers_do_not_follow_a_base_url_to_another_origin(env: ChatEnv) -> None:
    body = {"name": "api", "type": "http",
            "config": {"baseUrl": "https://api.example.com/v1", "headers": {"Authorization": "Bearer ds-secret", "X-Team": "t1"}}}
    ds = (await env.api.post("/api/v1/datasources", body, token="alice")).data
    url = f"/api/v1/datasources/{ds['id']}"
    masked = {"Authorization": MASKED_DS, "X-Team": MASKED_DS}
    r = await env.api.put(url, {"config": {"baseUrl": "https://api.example.com/v2", "headers": masked}}, token="alice")
    assert r.data["config"]["headers"] == masked  # same origin: the mask keeps the values
    r = await env.api.put(url, {"config": {"baseUrl": "https://evil.example.net/v2", "headers": {**masked, "X-Team": "t2"}}},
                          token="alice")
    assert r.status == 200 and r.data["config"]["headers"] == {"X-Team": MASKED_DS}, r.body
    r = await env.api.put(url, {"config": {"baseUrl": "https://api.example.com/v1", "headers": masked}}, token="alice")
    assert r.data["config"]["headers"] == {}  # back to the first origin: t2 was given for evil, and ds-secret is gone


async def test_mcp_headers_do_not_follow_a_url_to_another_origin(env: ChatEnv) -> None:
    port, other = free_port(), free_port()
    body = {"name": "docs", "transport": "streamable_http", "url": f"http://127.0.0.1:{port}/mcp",
            "headers": {"X-Api-Key": "mcp-secret-key"}}
    created = await env.api.post("/api/v1/mcp/servers", body, token="alice")
    assert created.status == 200, created.body
    url = f"/api/v1/mcp/servers/{created.data['id']}"
    r = await env.api.put(url, {"url": f"http://127.0.0.1:{other}/mcp"}, token="alice")
    assert r.status == 200 and r.data["headers"] == {}, r.body
    r = await env.api.put(url, {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"X-Api-Key": "******"}}, token="alice")
    assert r.status == 200 and r.data["headers"] == {}  # a mask keeps nothing across an origin change


async def test_a_providers_api_key_does_not_follow_a_base_url_to_another_origin(env: ChatEnv) -> None:
    async def key() -> Any:
        providers = (await env.api.get("/api/v1/models", token="alice")).data
        return next(p for p in providers if (p.get("providerId") or p.get("id")) == "fake")["apiKey"]

    assert await key() == "test-key"
    await env.api.put("/api/v1/models/fake/config", {"baseUrl": env.llm.url + "/"}, token="alice")
    assert await key() == "test-key"
    r = await env.api.put("/api/v1/models/fake/config", {"baseUrl": "https://collector.example.net/v1"}, token="alice")
    assert r.status == 200 and await key() is None
    r = await env.api.put("/api/v1/models/fake/config", {"baseUrl": env.llm.url, "apiKey": "typed-again"}, token="alice")
    assert await key() == "typed-again"
