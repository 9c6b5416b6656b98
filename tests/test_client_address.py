"""Where a request comes from: proxies never make a client "local", and login lockouts are per (username, address)."""
from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from platform_server.config import Config
from platform_server.features.auth.service import LoginLimiter
from platform_server.web import proxies
from tests.helpers.client import ApiClient
from tests.helpers.server import PASSWORD

INIT = "/api/v1/setup/init"
ADMIN = {"username": "alice", "password": PASSWORD}


async def login(api: ApiClient, username: str, password: str, address: str | None = None) -> Any:
    headers = {"X-Forwarded-For": address} if address else None
    return await api.post("/api/v1/auth/login", {"username": username, "password": password}, headers=headers)


# ---- setup/init: "local" means this machine, not a proxy on it --------------------------------------------


@pytest.mark.parametrize("header", [{"X-Forwarded-Host": "agents.example"}, {"Via": "1.1 caddy"},
                                    {"X-Forwarded-Proto": "https"}, {"X-Real-IP": "203.0.113.9"}])
async def test_setup_init_relayed_by_a_proxy_that_sends_no_x_forwarded_for_needs_the_setup_token(
        api: ApiClient, header: dict[str, str]) -> None:
    r = await api.post(INIT, ADMIN, headers=header)
    assert r.status == 403 and r.body["code"] == 403 and "setup token" in r.body["msg"], r.body
    assert (await api.get("/api/v1/setup/status")).data["hasAdmin"] is False


@pytest.mark.config(allowed_hosts=("agents.example",))
async def test_setup_init_with_a_public_host_name_passed_on_by_a_proxy_is_not_local(api: ApiClient) -> None:
    from platform_server.features.setup import service

    # nginx `proxy_pass` + `proxy_set_header Host $host` adds no header at all: only Host tells.
    r = await api.post(INIT, ADMIN, headers={"Host": "agents.example"})
    assert r.status == 403, r.body
    r = await api.post(INIT, {**ADMIN, "setupToken": service.setup_token()}, headers={"Host": "agents.example"})
    assert r.status == 200, r.body


@pytest.mark.config(trusted_proxies=("127.0.0.1",))
async def test_setup_init_from_a_trusted_proxys_address_is_never_local_even_without_headers(api: ApiClient) -> None:
    r = await api.post(INIT, ADMIN)
    assert r.status == 403, r.body


def test_a_bad_trusted_proxy_entry_stops_the_start() -> None:
    with pytest.raises(ValueError, match="trusted_proxies: 'proxy.lan'"):
        proxies.parse_networks(("10.0.0.0/8", "proxy.lan"))


def test_the_client_address_is_the_nearest_untrusted_forwarded_hop_and_only_behind_a_trusted_proxy() -> None:
    headers = {"X-Forwarded-For": "6.6.6.6, 198.51.100.7, 10.0.0.3"}
    assert proxies.client_address("10.0.0.2", headers, ("10.0.0.0/24",)) == "198.51.100.7"
    assert proxies.client_address("192.0.2.1", headers, ("10.0.0.0/24",)) == "192.0.2.1"  # not a trusted peer
    assert proxies.client_address("10.0.0.2", headers, ()) == "10.0.0.2"  # default: no header is believed
    assert proxies.client_address("10.0.0.2", {}, ("10.0.0.0/24",)) == "10.0.0.2"


# ---- login lockout: per (username, client address) --------------------------------------------------------


@pytest.mark.config(trusted_proxies=("127.0.0.1",))
async def test_a_strangers_five_bad_logins_do_not_lock_the_admin_out_from_her_own_address(api: ApiClient) -> None:
    from platform_server.features.setup import service

    stranger, alice_home = "203.0.113.5", "198.51.100.7"
    # Behind a trusted proxy nothing is local: setup takes the token, as it would in production.
    assert (await api.post(INIT, {**ADMIN, "setupToken": service.setup_token()})).status == 200
    for _ in range(5):
        assert (await login(api, "alice", "guess-123456", stranger)).status == 401
    locked = await login(api, "alice", PASSWORD, stranger)
    assert locked.status == 429 and locked.body == {"code": 429, "msg": "Too many failed login attempts, try again later", "data": None}
    ok = await login(api, "alice", PASSWORD, alice_home)
    assert ok.status == 200 and ok.data["role"] == "admin", ok.body
    assert (await login(api, "alice", PASSWORD, stranger)).status == 429  # the stranger's address stays locked


async def test_bad_logins_from_another_machine_do_not_lock_the_admin_out_without_any_proxy(api: ApiClient, people: dict) -> None:
    # The stranger's socket comes from 127.0.0.2 (the loopback network is 127/8), alice's from 127.0.0.1.
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=("127.0.0.2", 0))) as session:
        stranger = ApiClient(api.base_url, session)
        for _ in range(5):
            assert (await login(stranger, "alice", "guess-123456")).status == 401
        assert (await login(stranger, "alice", PASSWORD)).status == 429
    assert (await login(api, "alice", PASSWORD)).status == 200


async def test_a_forged_x_forwarded_for_does_not_escape_the_lockout_without_trusted_proxies(api: ApiClient, people: dict) -> None:
    for i in range(5):
        assert (await login(api, "bob", "guess-123456", f"203.0.113.{i}")).status == 401
    assert (await login(api, "bob", PASSWORD, "198.51.100.99")).status == 429


def test_guessing_one_username_from_many_addresses_is_slowed_and_the_right_password_resets_it() -> None:
    config = Config()
    limiter = LoginLimiter(config.login_max_failures_per_user, config.login_max_failures_per_address, config.login_lockout_seconds)
    assert limiter.slowdown("alice") == 0
    for i in range(4):
        limiter.failed("alice", f"10.0.0.{i}")
    assert limiter.slowdown("alice") == 0
    waits = []
    for i in range(4, 12):
        limiter.failed("alice", f"10.0.0.{i}")
        limiter.check("alice", "192.168.1.1")  # never a lockout of the username itself
        waits.append(limiter.slowdown("alice"))
    assert waits == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0]
    assert limiter.slowdown("bob") == 0
    limiter.succeeded("alice", "192.168.1.1")
    assert limiter.slowdown("alice") == 0
