"""Channel pairing against a local gateway: QR-code authorization, app registration and its refusals."""
from __future__ import annotations

import asyncio
import base64
from typing import Any, AsyncIterator

import pytest

from platform_server.features.channels.pairing import qr_png_data_url
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_gateway import FakeGateway
from tests.helpers.server import RunningServer
from tests.test_secrets_at_rest import raw_bytes

LOCAL = pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))


@pytest.fixture
async def gateway() -> AsyncIterator[FakeGateway]:
    gw = FakeGateway()
    yield gw
    gw.stop()


# What each platform asks for (a channel of a platform type is created with its fields).
PLATFORM_SETTINGS: dict[str, dict[str, str]] = {
    "im_a": {"appKey": "ding-app-key"},
    "im_h": {"appId": "102000001", "appSecret": "qq-app-secret"},
    "im_c": {"appId": "cli_x", "appSecret": "lark-secret", "verificationToken": "vt"},
    "im_f": {"token": "tk", "encodingAESKey": "a" * 43},
}


async def gateway_channel(env: ChatEnv, gateway: FakeGateway, kind: str) -> dict[str, Any]:
    body = {"name": f"paired {kind}", "channelType": kind, "agentId": env.agent_id,
            "replyUrl": gateway.url + "/reply", "settings": {"gatewayUrl": gateway.url, **PLATFORM_SETTINGS.get(kind, {})}}
    r = await env.api.post("/api/v1/channels", body, token="alice")
    assert r.status == 200, r.body
    return r.data


@LOCAL
async def test_qr_pairing_reaches_confirmed_and_keeps_the_credentials_sealed(
        env: ChatEnv, gateway: FakeGateway, server: RunningServer) -> None:
    channel = await gateway_channel(env, gateway, "im_h")
    r = await env.api.post("/api/v1/channels/qrcode/im_h/begin", {"channelId": channel["id"]}, token="alice")
    assert r.status == 200, r.body
    begun = r.data
    assert begun["status"] == "waiting" and begun["sessionId"].startswith("ps_") and begun["expiresAt"]
    png = base64.b64decode(begun["qrcodeImage"].removeprefix("data:image/png;base64,"))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    gw_sid = list(gateway.sessions)[-1]
    assert begun["qrcodeImage"] == qr_png_data_url(f"pair://gateway/{gw_sid}")
    assert gateway.opened == [{"channelType": "im_h", "channelId": channel["id"], "purpose": "qrcode"}]
    status_url = f"/api/v1/channels/qrcode/im_h/status?sessionId={begun['sessionId']}"
    assert (await env.api.get(status_url, token="alice")).data["status"] == "waiting"
    gateway.advance("scanned")
    assert (await env.api.get(status_url, token="alice")).data["status"] == "scanned"
    gateway.advance("confirmed", credentials={"accountId": "bot-42", "token": "paired-token-xyz"})
    done = (await env.api.get(status_url, token="alice")).data
    assert done["status"] == "confirmed"
    shown = (await env.api.get(f"/api/v1/channels/{channel['id']}", token="alice")).data
    assert shown["paired"] is True and shown["pairedAccountId"] == "bot-42"
    assert "paired-token-xyz" not in str(shown) and shown["settings"] == {"gatewayUrl": gateway.url, "appId": "102000001"}
    assert b"paired-token-xyz" not in raw_bytes(server)  # sealed at rest
    # The credentials survive a settings update.
    r = await env.api.put(f"/api/v1/channels/{channel['id']}", {"settings": {"gatewayUrl": gateway.url, "appId": "102000001", "x": 1}},
                          token="alice")
    assert r.data["paired"] is True


@LOCAL
async def test_app_registration_follows_the_same_protocol(
        env: ChatEnv, gateway: FakeGateway) -> None:
    for kind in ("im_a", "im_c"):
        channel = await gateway_channel(env, gateway, kind)
        base = f"/api/v1/channels/webhook/{kind}/register"
        begun = (await env.api.post(base + "/begin", {"channelId": channel["id"]}, token="alice")).data
        gateway.advance("failed", error="the user declined")
        r = await env.api.get(f"{base}/status?sessionId={begun['sessionId']}", token="alice")
        assert r.data["status"] == "failed" and r.data["error"] == "the user declined"
        assert gateway.opened[-1]["purpose"] == "register"


@LOCAL
async def test_pairing_refuses_bad_input_and_expires(env: ChatEnv, gateway: FakeGateway) -> None:
    channel = await gateway_channel(env, gateway, "im_h")
    cases = [
        ("/api/v1/channels/qrcode/im_zz/begin", {"channelId": channel["id"]}, 400),
        ("/api/v1/channels/qrcode/im_a/begin", {"channelId": channel["id"]}, 400),  # wrong type
        ("/api/v1/channels/qrcode/im_h/begin", {"channelId": "abc"}, 400),
        ("/api/v1/channels/qrcode/im_h/begin", {"channelId": "123"}, 404),
    ]
    for path, body, status in cases:
        r = await env.api.post(path, body, token="alice")
        assert r.status == status, (path, body, r.body)
    assert (await env.api.post("/api/v1/channels/qrcode/im_h/begin", {"channelId": channel["id"]},
                               token="bob")).status == 403
    no_gateway = await env.api.post("/api/v1/channels", {"name": "n", "channelType": "im_f", "agentId": env.agent_id,
                                                         "settings": PLATFORM_SETTINGS["im_f"]}, token="alice")
    r = await env.api.post("/api/v1/channels/qrcode/im_f/begin", {"channelId": no_gateway.data["id"]}, token="alice")
    assert r.status == 400 and "gatewayUrl" in r.msg
    assert (await env.api.get("/api/v1/channels/qrcode/im_h/status?sessionId=ps_nope", token="alice")).status == 404
    assert (await env.api.get("/api/v1/channels/qrcode/im_h/status", token="alice")).status == 400
    gateway.expires_in = 0.05
    begun = (await env.api.post("/api/v1/channels/qrcode/im_h/begin", {"channelId": channel["id"]},
                                token="alice")).data
    await asyncio.sleep(0.1)
    gateway.advance("confirmed", credentials={"token": "late"})
    r = await env.api.get(f"/api/v1/channels/qrcode/im_h/status?sessionId={begun['sessionId']}", token="alice")
    assert r.data["status"] == "expired"
    assert (await env.api.get(f"/api/v1/channels/{channel['id']}", token="alice")).data["paired"] is False
    dave = await env.api.get(f"/api/v1/channels/qrcode/im_h/status?sessionId={begun['sessionId']}", token="dave",
                             workspace=env.people["dave"]["workspace"])
    assert dave.status == 404


async def test_a_gateway_on_a_private_address_is_refused(env: ChatEnv, gateway: FakeGateway) -> None:
    channel = await gateway_channel(env, gateway, "im_h")
    r = await env.api.post("/api/v1/channels/qrcode/im_h/begin", {"channelId": channel["id"]}, token="alice")
    assert r.status >= 400 and "pairing gateway" in r.msg and gateway.opened == []
