"""A write-only secret never follows its object to another origin: a pairing token, datasource and MCP
headers, a provider's API key are dropped when the URL's origin changes, unless given again in that request."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_gateway import FakeGateway
from tests.helpers.server import free_port
from tests.test_channels import signed

LOCAL = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))
MASKED_DS = "********"


@pytest.fixture
async def gateways() -> AsyncIterator[tuple[FakeGateway, FakeGateway]]:
    real, attacker = FakeGateway(), FakeGateway()
    yield real, attacker
    real.stop()
    attacker.stop()


async def paired_channel(env: ChatEnv, gateway: FakeGateway) -> dict[str, Any]:
    body = {"name": "paired", "channelType": "im_h", "agentId": env.agent_id,
            "replyUrl": gateway.url + "/reply", "settings": {"gatewayUrl": gateway.url}}
    channel = (await env.api.post("/api/v1/channels", body, token="alice")).data
    begun = (await env.api.post("/api/v1/channels/qrcode/im_h/begin", {"channelId": channel["id"]}, token="alice")).data
    gateway.advance("confirmed", credentials={"accountId": "bot-42", "token": "paired-token-xyz"})
    status = await env.api.get(f"/api/v1/channels/qrcode/im_h/status?sessionId={begun['sessionId']}", token="alice")
    assert status.data["status"] == "confirmed", status.body
    return channel


@LOCAL
async def test_a_reply_url_moved_to_another_origin_unpairs_the_channel_and_the_token_is_not_sent_there(
        env: ChatEnv, gateways: tuple[FakeGateway, FakeGateway]) -> None:
    real, attacker = gateways
    channel = await paired_channel(env, real)
    same = await env.api.put(f"/api/v1/channels/{channel['id']}", {"replyUrl": real.url + "/v2/reply"}, token="alice")
    assert same.data["paired"] is True  # another path of the same origin keeps the pairing
    moved = await env.api.put(f"/api/v1/channels/{channel['id']}", {"replyUrl": attacker.url + "/reply"}, token="alice")
    assert moved.status == 200 and moved.data["paired"] is False and moved.data["pairedAccountId"] is None, moved.body
    back = await env.api.put(f"/api/v1/channels/{channel['id']}", {"replyUrl": real.url + "/reply"}, token="alice")
    assert back.data["paired"] is False  # dropped, not hidden
    await env.api.put(f"/api/v1/channels/{channel['id']}", {"replyUrl": attacker.url + "/reply"}, token="alice")
    payload = {"channelId": channel["id"], "messageId": "m1", "sender": {"id": "u1"}, "text": "hello"}
    body, headers = signed(channel["secret"], payload)
    assert (await env.api.post("/api/v1/channels/webhook/im_h", data=body, headers=headers)).status == 200
    await asyncio.wait_for(attacker.replied.wait(), 10)
    assert "Authorization" not in attacker.replies[0][0]


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
