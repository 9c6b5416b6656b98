"""OAuth sign-in for vendor_a (credential file) and vendor_b (code + PKCE, device flow) against a real OAuth server."""
from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from platform_server.features.oauth.vendor_b import is_loopback
from tests.helpers.client import ApiClient
from tests.helpers.fake_oauth import FakeOAuthServer
from tests.helpers.server import RunningServer, free_port, start_server

CLIENT = "platform-client"


@pytest_asyncio.fixture
async def idp() -> AsyncIterator[FakeOAuthServer]:
    srv = FakeOAuthServer(client_id=CLIENT)
    await srv.start()
    yield srv
    await srv.stop()


def oauth_config(idp: FakeOAuthServer, **extra: Any) -> dict[str, Any]:
    return {
        "oauth_vendor_b_authorize_url": idp.url + "/authorize",
        "oauth_vendor_b_token_url": idp.url + "/token",
        "oauth_vendor_b_device_code_url": idp.url + "/device/code",
        "oauth_vendor_b_revoke_url": idp.url + "/revoke",
        "oauth_vendor_b_client_id": CLIENT,
        "oauth_vendor_b_callback_port": free_port(),
        "oauth_vendor_a_token_url": idp.url + "/token",
        "oauth_vendor_a_client_id": CLIENT,
        **extra,
    }


@pytest_asyncio.fixture
async def oauth_server(idp: FakeOAuthServer, tmp_path: Any, request: pytest.FixtureRequest) -> AsyncIterator[RunningServer]:
    marker = request.node.get_closest_marker("config")
    extra = dict(marker.kwargs) if marker else {}
    running = await start_server(str(tmp_path / "data"), **oauth_config(
        idp, oauth_vendor_a_credentials_path=str(tmp_path / "vendor_a" / "credentials.json"), **extra))
    try:
        yield running
    finally:
        await running.stop()


@pytest_asyncio.fixture
async def oapi(oauth_server: RunningServer) -> ApiClient:
    from tests.helpers.server import create_personas

    await create_personas(oauth_server.client)
    return oauth_server.client


async def provider(api: ApiClient, provider_id: str) -> dict[str, Any]:
    catalog = (await api.get("/api/v1/models/catalog", token="alice")).data
    return next(p for p in catalog if p["id"] == provider_id)


async def test_local_mode_redirects_to_a_loopback_listener_that_completes_the_pkce_exchange(oapi: ApiClient, idp: FakeOAuthServer) -> None:
    r = await oapi.get("/api/v1/oauth/vendor_b/authorize", token="alice")
    assert r.status == 200 and r.data["mode"] == "LOCAL"
    assert "code_challenge=" in r.data["authorizeUrl"] and "code_verifier" not in r.data["authorizeUrl"]
    async with aiohttp.ClientSession() as browser:  # the browser follows the redirect to the listener
        async with browser.get(r.data["authorizeUrl"]) as resp:
            assert resp.status == 200, await resp.text()
            assert "Signed in" in await resp.text()
    status = (await oapi.get("/api/v1/oauth/vendor_b/status", token="alice")).data
    assert status["connected"] is True and status["hasRefreshToken"] is True and status["expired"] is False
    p = await provider(oapi, "vendor_b")
    assert p["apiKey"] in idp.access_tokens and p["enabled"] is True
    raw = (await oapi.get("/api/v1/oauth/vendor_b/status", token="alice")).raw.decode()
    assert p["apiKey"] not in raw and "rt-" not in raw


@pytest.mark.config(oauth_vendor_b_mode="MANUAL_PASTE")
async def test_manual_paste_mode_takes_the_callback_url_and_refuses_unknown_states(oapi: ApiClient, idp: FakeOAuthServer) -> None:
    r = await oapi.get("/api/v1/oauth/vendor_b/authorize", token="alice")
    assert r.data["mode"] == "MANUAL_PASTE"
    async with aiohttp.ClientSession() as browser:
        async with browser.get(r.data["authorizeUrl"], allow_redirects=False) as resp:
            assert resp.status == 302
            callback = resp.headers["Location"]
    forged = callback.replace("state=", "state=forged")
    bad = await oapi.post("/api/v1/oauth/vendor_b/callback-paste", {"callbackUrl": forged}, token="alice")
    assert bad.status == 404 and "state" in bad.msg  # well formed, but it names no sign-in
    r = await oapi.post("/api/v1/oauth/vendor_b/callback-paste", {"callbackUrl": callback}, token="alice")
    assert r.status == 200 and r.data["connected"] is True
    again = await oapi.post("/api/v1/oauth/vendor_b/callback-paste", {"callbackUrl": callback}, token="alice")
    assert again.status == 404  # a state is used once
    assert (await oapi.post("/api/v1/oauth/vendor_b/callback-paste", {"callbackUrl": "http://x/"}, token="alice")).status == 400


async def test_the_pasted_callback_url_follows_the_documented_pattern(oapi: ApiClient, idp: FakeOAuthServer) -> None:
    """The document's pattern: a non-empty state and code (or error) in the query, after the first '?'; the server
    reads the same query (a value with '://' once made it parse the text as a URL and find no query at all)."""
    import re

    schema = (await oapi.get("/v3/api-docs")).body["components"]["schemas"]["CallbackPaste"]
    pattern = re.compile(schema["properties"]["callbackUrl"]["pattern"])
    for text, ok in (("http://localhost/cb?code=a&state=b", True), ("state=b&x=1&error=denied", True),
                     ("x=http://y&state=b&code=a", True), ("?code=a", False), ("http://x/", False), ("state=b&code=", False)):
        assert bool(pattern.search(text)) is ok, text
        r = await oapi.post("/api/v1/oauth/vendor_b/callback-paste", {"callbackUrl": text}, token="alice")
        assert r.status == (404 if ok else 400), (text, r.body)


async def test_the_device_flow_polls_pending_then_succeeds_and_can_be_cancelled_or_denied(oapi: ApiClient, idp: FakeOAuthServer) -> None:
    r = await oapi.post("/api/v1/oauth/vendor_b/device/start", token="alice")
    assert r.status == 200 and r.data["userCode"] and r.data["verificationUri"].startswith(idp.url)
    sid = r.data["sessionId"]
    r = await oapi.post("/api/v1/oauth/vendor_b/device/poll", {"sessionId": sid}, token="alice")
    assert r.data["status"] == "PENDING"
    idp.approve(next(d.user_code for d in idp.devices.values()))
    r = await oapi.post("/api/v1/oauth/vendor_b/device/poll", {"sessionId": sid}, token="alice")
    assert r.data["status"] == "SUCCESS" and r.data["connected"] is True
    assert (await provider(oapi, "vendor_b"))["apiKey"] in idp.access_tokens
    assert (await oapi.post("/api/v1/oauth/vendor_b/device/poll", {"sessionId": sid}, token="alice")).status == 404

    sid = (await oapi.post("/api/v1/oauth/vendor_b/device/start", token="alice")).data["sessionId"]
    r = await oapi.post("/api/v1/oauth/vendor_b/device/cancel", {"sessionId": sid}, token="alice")
    assert r.data == {"sessionId": sid, "cancelled": True}
    assert (await oapi.post("/api/v1/oauth/vendor_b/device/poll", {"sessionId": sid}, token="alice")).status == 404

    r = await oapi.post("/api/v1/oauth/vendor_b/device/start", token="alice")
    idp.approve(r.data["userCode"], ok=False)
    r = await oapi.post("/api/v1/oauth/vendor_b/device/poll", {"sessionId": r.data["sessionId"]}, token="alice")
    assert r.data["status"] == "DENIED"


@pytest.mark.config(oauth_vendor_b_mode="MANUAL_PASTE")
async def test_device_polls_respect_the_interval_and_slow_down(oapi: ApiClient, oauth_server: RunningServer, idp: FakeOAuthServer) -> None:
    idp.device_interval, idp.enforce_interval = 5, True
    vb = oauth_server.platform.services.oauth.vendor_b
    now = [time.time()]
    vb.clock = lambda: now[0]
    r = await oapi.post("/api/v1/oauth/vendor_b/device/start", token="alice")
    sid = r.data["sessionId"]
    polls = len(idp.grants)
    r = await oapi.post("/api/v1/oauth/vendor_b/device/poll", {"sessionId": sid}, token="alice")
    assert r.data["status"] == "PENDING" and len(idp.grants) == polls  # too early: the server is not asked
    now[0] += 5
    r = await oapi.post("/api/v1/oauth/vendor_b/device/poll", {"sessionId": sid}, token="alice")
    assert r.data["status"] == "PENDING" and len(idp.grants) == polls + 1
    assert r.data["interval"] == 10  # slow_down adds 5 seconds (the fake saw a poll within its interval)


async def test_refresh_rotates_the_token_and_revoke_clears_it_at_the_vendor_and_here(oapi: ApiClient, oauth_server: RunningServer, idp: FakeOAuthServer) -> None:
    r = await oapi.post("/api/v1/oauth/vendor_b/refresh", token="alice")
    assert r.status == 409 and r.msg == "vendor_b is not connected", r.body  # the stored state, not the request
    sid = (await oapi.post("/api/v1/oauth/vendor_b/device/start", token="alice")).data["sessionId"]
    idp.approve(next(d.user_code for d in idp.devices.values()))
    await oapi.post("/api/v1/oauth/vendor_b/device/poll", {"sessionId": sid}, token="alice")
    first = (await provider(oapi, "vendor_b"))["apiKey"]
    r = await oapi.post("/api/v1/oauth/vendor_b/refresh", token="alice")
    assert r.status == 200 and r.data["lastRefreshTime"] is not None
    second = (await provider(oapi, "vendor_b"))["apiKey"]
    assert second != first and idp.grants[-1] == "refresh_token"

    idp.expires_in = 60  # within the 300 s margin: the periodic check refreshes it
    await oapi.post("/api/v1/oauth/vendor_b/refresh", token="alice")
    third = (await provider(oapi, "vendor_b"))["apiKey"]
    await oauth_server.platform.services.oauth.tick()
    assert (await provider(oapi, "vendor_b"))["apiKey"] not in (second, third)

    r = await oapi.delete("/api/v1/oauth/vendor_b/revoke", token="alice")
    assert r.status == 200 and r.data["connected"] is False
    assert len(idp.revoked) == 2
    p = await provider(oapi, "vendor_b")
    assert p["apiKey"] is None and p["enabled"] is False


async def test_vendor_a_reads_the_credential_file_and_refreshes_it_near_expiry(oapi: ApiClient, oauth_server: RunningServer, idp: FakeOAuthServer) -> None:
    path = oauth_server.config.oauth_vendor_a_credentials_path
    r = await oapi.get("/api/v1/oauth/vendor_a/status", token="alice")
    assert r.status == 200 and r.data["found"] is False and r.data["path"] == path
    os.makedirs(os.path.dirname(path))
    idp.refresh_tokens.add("rt-on-disk")
    soon_ms = int((time.time() + 60) * 1000)
    with open(path, "w") as fh:
        json.dump({"vendorOauth": {"accessToken": "at-on-disk", "refreshToken": "rt-on-disk", "expiresAt": soon_ms,
                                   "subscriptionType": "pro"}, "other": 1}, fh)
    r = await oapi.get("/api/v1/oauth/vendor_a/status", token="alice")
    assert r.data["found"] is True and r.data["nearExpiry"] is True and r.data["subscriptionType"] == "pro"
    assert "at-on-disk" not in r.raw.decode() and "rt-on-disk" not in r.raw.decode()
    r = await oapi.post("/api/v1/oauth/vendor_a/reload", token="alice")
    assert r.status == 200 and r.data["nearExpiry"] is False and r.data["lastRefreshTime"] is not None
    with open(path) as fh:
        saved = json.load(fh)
    assert saved["other"] == 1 and saved["vendorOauth"]["accessToken"] in idp.access_tokens
    assert saved["vendorOauth"]["expiresAt"] > soon_ms  # still milliseconds
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    p = await provider(oapi, "vendor_a")
    assert p["apiKey"] == saved["vendorOauth"]["accessToken"] and p["enabled"] is True


async def test_oauth_routes_are_for_global_admins_only(oapi: ApiClient) -> None:
    calls = [("GET", "/api/v1/oauth/vendor_a/status"), ("POST", "/api/v1/oauth/vendor_a/reload"),
             ("GET", "/api/v1/oauth/vendor_b/authorize"), ("POST", "/api/v1/oauth/vendor_b/device/start"),
             ("DELETE", "/api/v1/oauth/vendor_b/revoke"), ("GET", "/api/v1/oauth/vendor_b/status")]
    for method, path in calls:
        assert (await oapi.request(method, path, token="bob")).status == 403, path


async def test_an_unconfigured_vendor_b_answers_409(api: ApiClient, people: dict) -> None:
    # The server's configuration is missing, not anything in the request: a conflict with its state
    r = await api.get("/api/v1/oauth/vendor_b/authorize", token="alice")
    assert r.status == 409 and "not configured" in r.msg
    assert (await api.get("/api/v1/oauth/vendor_b/status", token="alice")).data["configured"] is False


def test_loopback_hosts_choose_local_mode() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.10")


async def test_the_vendors_carry_a_name_people_read_and_old_installs_are_renamed(oapi: ApiClient) -> None:
    from platform_server.db import database
    from platform_server.features.models.models import MIGRATIONS, Provider

    for vendor, name in (("vendor_a", "Anthropic account"), ("vendor_b", "OpenAI account")):
        status = await oapi.get(f"/api/v1/oauth/{vendor}/status", token="alice")
        assert status.data["providerId"] == vendor and status.data["providerName"] == name
    rename = dict(MIGRATIONS)["models_0005_vendor_names"]
    Provider.update(name="Vendor B (OAuth)").where(Provider.id == "vendor_b").execute()  # as seeded before
    Provider.update(name="My Claude").where(Provider.id == "vendor_a").execute()  # an admin's own name
    rename(database.obj)
    catalog = {p["id"]: p["name"] for p in (await oapi.get("/api/v1/models/catalog", token="alice")).data}
    assert catalog["vendor_b"] == "OpenAI account" and catalog["vendor_a"] == "My Claude"
