"""The public webchat: its token can be rotated, and its routes are rate limited per token and address (429)."""
from __future__ import annotations

import aiohttp
import pytest

from platform_server.features.channels.webchat_limits import WebchatLimiter
from platform_server.web.errors import TooManyRequests
from tests.helpers.chat import ChatEnv, text_of
from tests.helpers.client import ApiClient
from tests.test_channels import make_channel

CONFIG = "/api/v1/channels/webchat/config"
STREAM = "/api/v1/channels/webchat/stream"


async def test_a_webchat_token_is_rotated_by_a_workspace_admin_and_the_old_one_stops_working(env: ChatEnv) -> None:
    channel = await make_channel(env, "webchat")
    old = channel["publicToken"]
    assert (await env.api.put(f"/api/v1/channels/{channel['id']}", {"rotatePublicToken": True}, token="bob")).status == 403
    r = await env.api.put(f"/api/v1/channels/{channel['id']}", {"rotatePublicToken": True}, token="alice")
    assert r.status == 200, r.body
    new = r.data["publicToken"]
    assert new != old and new.startswith("wc_") and len(new) == len(old)
    assert (await env.api.get(CONFIG, params={"token": old})).status == 404
    assert (await env.api.get(CONFIG, params={"token": new})).status == 200
    events = await env.api.sse("POST", STREAM, {"token": old, "sessionId": "s1", "message": "hi"})
    assert [e.event for e in events] == ["error"] and events[0].data["code"] == 404
    im = (await env.api.post("/api/v1/channels", {"name": "tg", "channelType": "im_e", "agentId": env.agent_id,
                                                  "settings": {"botToken": "123:abc"}}, token="alice")).data
    r = await env.api.put(f"/api/v1/channels/{im['id']}", {"rotatePublicToken": True}, token="alice")
    assert r.status == 409 and r.msg == "rotatePublicToken: only a webchat channel has a public token", r.body


@pytest.mark.config(webchat_rate_per_address=3)
async def test_one_address_flooding_a_webchat_gets_429_and_no_model_call(env: ChatEnv) -> None:
    token = (await make_channel(env, "webchat"))["publicToken"]
    for i in range(3):
        events = await env.api.sse("POST", STREAM, {"token": token, "sessionId": "s1", "message": f"hi {i}"})
        assert text_of(events) == f"Echo: hi {i}"
    calls = len(env.llm.requests)
    events = await env.api.sse("POST", STREAM, {"token": token, "sessionId": "s1", "message": "one more"})
    assert [e.event for e in events] == ["error"] and events[0].data["code"] == 429, events
    assert events[0].data["message"].startswith("Too many webchat requests, try again in ")
    r = await env.api.get(CONFIG, params={"token": token})
    assert r.status == 429 and r.body["code"] == 429 and r.body["data"] is None and r.msg.startswith("Too many webchat")
    assert len(env.llm.requests) == calls


@pytest.mark.config(webchat_rate_per_address=2, webchat_rate_per_token=3)
async def test_all_addresses_together_are_capped_per_webchat_token(env: ChatEnv) -> None:
    token = (await make_channel(env, "webchat"))["publicToken"]
    other_token = (await make_channel(env, "webchat"))["publicToken"]
    # A second client address: the loopback network is 127/8, so the client can bind 127.0.0.2.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))) as session:
        other = ApiClient(env.api.base_url, session)
        assert (await env.api.get(CONFIG, params={"token": token})).status == 200
        assert (await env.api.get(CONFIG, params={"token": token})).status == 200
        assert (await env.api.get(CONFIG, params={"token": token})).status == 429  # 127.0.0.1's own cap
        assert (await other.get(CONFIG, params={"token": token})).status == 200  # another address still gets in
        assert (await other.get(CONFIG, params={"token": token})).status == 429  # the token's cap (3) is reached
        assert (await other.get(CONFIG, params={"token": other_token})).status == 200  # another widget is apart


def test_the_window_slides_and_refused_requests_do_not_count() -> None:
    now = [0.0]
    limiter = WebchatLimiter(per_address=2, per_token=0, clock=lambda: now[0])
    limiter.hit(1, "a")
    now[0] = 30.0
    limiter.hit(1, "a")
    with pytest.raises(TooManyRequests, match="try again in 30 s"):
        limiter.hit(1, "a")
    now[0] = 60.5
    limiter.hit(1, "a")  # the first request left the window; the refused one never counted
    with pytest.raises(TooManyRequests):
        limiter.hit(1, "a")
    assert_no_cap = WebchatLimiter(per_address=0, per_token=0, clock=lambda: now[0])
    for _ in range(1000):
        assert_no_cap.hit(1, "a")
