"""Browser and LAN: security headers on the console and API, the Host check against DNS rebinding, the setup token."""
from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.server import PASSWORD, RunningServer


async def test_the_console_is_served_with_a_csp_header_that_forbids_framing(api: ApiClient) -> None:
    r = await api.get("/")
    assert r.status == 200
    csp = r.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "object-src 'none'" in csp
    assert r.headers["X-Frame-Options"] == "DENY" and r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers.get("Referrer-Policy") == "no-referrer"


async def test_the_swagger_page_and_the_api_answers_carry_headers_too(api: ApiClient) -> None:
    page = await api.get("/swagger-ui.html")
    assert page.status == 200
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Frame-Options"] == "DENY"
    status = await api.get("/api/v1/setup/status")
    assert status.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in status.headers["Content-Security-Policy"]
    static = await api.get("/static/index.html")
    assert static.headers.get("X-Frame-Options") == "DENY"


async def test_a_request_for_a_foreign_host_name_is_refused_as_dns_rebinding_would_send_it(api: ApiClient) -> None:
    r = await api.get("/api/v1/setup/status", headers={"Host": "rebind.attacker.example"})
    assert r.status == 400 and "Host" in r.body["msg"]
    assert (await api.get("/", headers={"Host": "rebind.attacker.example:8080"})).status == 400
    for host in ("localhost", "127.0.0.1", "localhost:1234"):
        assert (await api.get("/api/v1/setup/status", headers={"Host": host})).status == 200, host


@pytest.mark.config(allowed_hosts=("agents.home.arpa",))
async def test_allowed_hosts_lets_the_configured_names_in(api: ApiClient) -> None:
    assert (await api.get("/api/v1/setup/status", headers={"Host": "agents.home.arpa"})).status == 200
    assert (await api.get("/api/v1/setup/status", headers={"Host": "other.home.arpa"})).status == 400


def test_a_server_bound_to_all_interfaces_accepts_its_machine_names_by_default() -> None:
    import socket

    from platform_server.config import load_config
    from platform_server.web.hosts import allowed_hosts

    names = allowed_hosts(load_config(None, env={}, overrides={"host": "0.0.0.0"}))
    assert {"localhost", "127.0.0.1", socket.gethostname().lower()} <= names
    assert allowed_hosts(load_config(None, env={}, overrides={"host": "192.168.1.5"})) >= {"192.168.1.5", "localhost"}


async def test_setup_init_from_another_machine_needs_the_setup_token(server: RunningServer, api: ApiClient,
                                                                    caplog: Any) -> None:
    from platform_server.features.setup import service

    remote = {"X-Forwarded-For": "192.168.1.50"}
    body = {"username": "alice", "password": PASSWORD}
    r = await api.post("/api/v1/setup/init", body, headers=remote)
    assert r.status == 403 and "setup token" in r.body["msg"], r.body
    r = await api.post("/api/v1/setup/init", {**body, "setupToken": "wrong"}, headers=remote)
    assert r.status == 403
    token = service.setup_token()
    assert token
    r = await api.post("/api/v1/setup/init", {**body, "setupToken": token}, headers=remote)
    assert r.status == 200, r.body


async def test_setup_init_from_the_loopback_address_needs_no_token(api: ApiClient) -> None:
    r = await api.post("/api/v1/setup/init", {"username": "alice", "password": PASSWORD})
    assert r.status == 200, r.body


async def test_api_answers_are_not_stored_so_they_carry_no_etag_and_always_come_whole(api: ApiClient, people: dict[str, Any]) -> None:
    r = await api.get("/api/v1/agents", token="alice")
    assert r.status == 200 and r.headers["Cache-Control"] == "no-store"
    assert "Etag" not in r.headers  # nothing a client may keep, so nothing to revalidate (and no body hashed)
    again = await api.get("/api/v1/agents", token="alice", headers={"If-None-Match": '"anything"'})
    assert again.status == 200 and again.data == r.data
