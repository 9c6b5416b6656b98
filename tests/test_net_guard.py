"""The SSRF guard: address classification, numeric host forms, URL vetting and connection pinning."""
from __future__ import annotations

import ipaddress
import json
import socket

import pytest
import tornado.httpserver
import tornado.netutil
import tornado.web

from platform_server.integrations import net_guard
from platform_server.integrations.net_guard import BlockedUrl, classify_ip, parse_ip_host, vet_url
from platform_server.integrations.pinned_resolver import PinnedResolver

BLOCKED_ADDRESSES = [
    "127.0.0.1", "127.8.9.10", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
    "100.64.0.1", "100.127.255.254", "169.254.169.254", "169.254.1.1", "224.0.0.1", "239.255.255.250",
    "240.0.0.1", "255.255.255.255", "192.0.0.8", "198.18.0.1",
    "::1", "::", "fe80::1", "fe80::1%1", "fc00::1", "fd12:3456::1", "fd00:ec2::254", "ff02::1", "fec0::1",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::7f00:1", "64:ff9b::a00:1",
    "64:ff9b:1::1", "2002:7f00:1::1", "2002:c0a8:101::1", "::127.0.0.1", "2001:db8::1",
]
PUBLIC_ADDRESSES = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "64:ff9b::808:808", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", BLOCKED_ADDRESSES)
def test_non_public_addresses_are_classified_as_blocked(address: str) -> None:
    assert classify_ip(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", PUBLIC_ADDRESSES)
def test_public_addresses_are_allowed(address: str) -> None:
    assert classify_ip(ipaddress.ip_address(address)) is None


def test_metadata_and_loopback_reasons_are_named() -> None:
    assert classify_ip(ipaddress.ip_address("169.254.169.254")) == "cloud metadata"
    assert classify_ip(ipaddress.ip_address("::ffff:127.0.0.1")) == "loopback"
    assert classify_ip(ipaddress.ip_address("100.64.0.1")) == "shared (CGNAT)"


@pytest.mark.parametrize(
    "host, expected",
    [
        ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("127.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"), ("10.1", "10.0.0.1"), ("192.168.257", "192.168.1.1"), ("[::1]", "::1"),
        ("127.0.0.1.", "127.0.0.1"), ("017700000001", "127.0.0.1"),
    ],
)
def test_legacy_numeric_ipv4_forms_are_parsed_like_inet_aton(host: str, expected: str) -> None:
    assert parse_ip_host(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize("host", ["example.com", "1e5", "08.0.0.1", "256.256.256.256.1", "a.b", "0x"])
def test_names_are_not_mistaken_for_addresses(host: str) -> None:
    parsed = parse_ip_host(host)
    assert parsed is None or str(parsed) == "0.0.0.0"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/", "http://2130706433/", "http://0x7f.1/", "http://127.1/", "http://0177.0.0.1/",
        "http://[::ffff:127.0.0.1]/", "http://[::1]:8080/", "http://[64:ff9b::7f00:1]/", "http://10.0.0.1/",
        "http://100.64.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/", "http://localhost:8080/", "http://LOCALHOST./",
        "http://foo.localhost/", "http://0.0.0.0/", "http://[fe80::1]/", "http://user@127.0.0.1/",
        "ftp://8.8.8.8/", "file:///etc/passwd", "gopher://8.8.8.8/", "http:///nohost", "not a url",
    ],
)
async def test_vet_url_refuses_internal_targets_and_other_schemes(url: str) -> None:
    with pytest.raises(BlockedUrl):
        await vet_url(url)


async def test_vet_url_accepts_a_public_address_and_canonicalises_numeric_hosts() -> None:
    target = await vet_url("https://8.8.8.8/dns")
    assert target.addresses == [("8.8.8.8", socket.AF_INET)] and target.port == 443
    numeric = await vet_url("http://134744072/x")  # 8.8.8.8 as one number
    assert numeric.url.host == "8.8.8.8" and numeric.addresses[0][0] == "8.8.8.8"


async def test_allow_list_lets_an_exact_host_through() -> None:
    target = await vet_url("http://127.0.0.1:9/", allow_hosts=("127.0.0.1",))
    assert target.addresses == [("127.0.0.1", socket.AF_INET)]
    with pytest.raises(BlockedUrl):
        await vet_url("http://127.0.0.2:9/", allow_hosts=("127.0.0.1",))
    with pytest.raises(BlockedUrl):
        await vet_url("http://localhost:9/", allow_hosts=("127.0.0.1",))


async def test_hostnames_resolving_to_internal_addresses_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    async def fake_getaddrinfo(host, port, **kwargs):  # type: ignore[no-untyped-def]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
                (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::ffff:10.0.0.5", port, 0, 0))]

    import asyncio

    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "getaddrinfo", fake_getaddrinfo)
    with pytest.raises(BlockedUrl, match="private"):
        await vet_url("http://mixed.example.test/")


async def test_pinned_resolver_answers_only_the_vetted_addresses(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    answers = [("93.184.216.34", 0)]

    async def fake_getaddrinfo(host, port, **kwargs):  # type: ignore[no-untyped-def]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[0][0], port))]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", fake_getaddrinfo)
    target = await vet_url("http://rebind.example.test/")
    answers[0] = ("127.0.0.1", 0)  # the DNS answer changes after the check
    resolver = PinnedResolver(target)
    resolved = await resolver.resolve("rebind.example.test", 80)
    assert [r["host"] for r in resolved] == ["93.184.216.34"]
    with pytest.raises(OSError):
        await resolver.resolve("other.example.test", 80)


class _Redirect(tornado.web.RequestHandler):
    def get(self) -> None:
        self.redirect(self.settings["to"] + self.get_query_argument("then", ""))


class _Headers(tornado.web.RequestHandler):
    def get(self) -> None:
        self.finish(json.dumps({k.lower(): v for k, v in self.request.headers.items()}))


def _serve(**settings: str) -> tuple[tornado.httpserver.HTTPServer, str]:
    app = tornado.web.Application([(r"/redirect", _Redirect), (r"/headers", _Headers)], **settings)
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", family=socket.AF_INET)
    server = tornado.httpserver.HTTPServer(app)
    server.add_sockets(sockets)
    return server, f"http://127.0.0.1:{sockets[0].getsockname()[1]}"


async def test_fetch_sends_the_callers_headers_to_the_urls_origin_only() -> None:
    other, other_url = _serve()
    first, first_url = _serve(to="")  # same-origin redirects are relative
    away, away_url = _serve(to=other_url)
    secret = {"Authorization": "Bearer s3cret", "X-Api-Key": "k3y"}
    try:
        same = await net_guard.fetch(first_url + "/redirect?then=/headers", allow_hosts=("127.0.0.1",), headers=secret)
        assert json.loads(same.body)["authorization"] == "Bearer s3cret" and same.redirects
        moved = await net_guard.fetch(away_url + "/redirect?then=/headers", allow_hosts=("127.0.0.1",), headers=secret)
        seen = json.loads(moved.body)
        assert moved.url.startswith(other_url) and "authorization" not in seen and "x-api-key" not in seen
        assert seen["user-agent"].startswith("platform-server")
    finally:
        for srv in (other, first, away):
            srv.stop()
