"""SSRF guard for outbound requests to user-supplied URLs.

`vet_url` resolves a URL's host and refuses loopback, private, shared (CGNAT), link-local,
unique-local, multicast, unspecified, reserved and cloud-metadata addresses, including
IPv4-mapped / NAT64 / 6to4 / Teredo IPv6 forms and legacy numeric IPv4 spellings
(`2130706433`, `0x7f.1`, `127.1`, `0177.0.0.1`). `fetch` follows redirects by hand, vets
every hop, and pins each connection to the vetted addresses (a resolver that only answers
those), so a DNS answer that changes between the check and the connect cannot bypass it.
Hosts in `allow_hosts` (exact, case-insensitive match) skip the address check.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Union

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
    import yarl

    from platform_server.integrations import pinned_resolver
else:
    aiohttp = lazy_import("aiohttp")
    yarl = lazy_import("yarl")
    pinned_resolver = lazy_import("platform_server.integrations.pinned_resolver")

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data"})

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network
_BLOCKED_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "shared (CGNAT)"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "reserved"),
    (_V4("192.0.2.0/24"), "reserved"),
    (_V4("192.88.99.0/24"), "reserved"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "reserved"),
    (_V4("198.51.100.0/24"), "reserved"),
    (_V4("203.0.113.0/24"), "reserved"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),
)
_METADATA_IPS = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})
_NAT64 = _V6("64:ff9b::/96")
_NAT64_LOCAL = _V6("64:ff9b:1::/48")


class BlockedUrl(Exception):
    """A URL refused by the guard; the message is meant for humans (and tool results)."""


@dataclass
class VettedTarget:
    """A URL whose host resolved only to acceptable addresses."""

    url: yarl.URL
    host: str
    port: int
    addresses: list[tuple[str, int]]  # (ip text, socket family)


@dataclass
class FetchResult:
    url: str  # final URL after redirects
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool
    redirects: list[str] = field(default_factory=list)


def parse_ipv4_legacy(host: str) -> ipaddress.IPv4Address | None:
    """Parse an IPv4 host the way inet_aton does (1-4 parts; decimal, 0x hex or 0-octal), else None."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        if not part:
            return None
        try:
            if part[:2].lower() == "0x":
                value = int(part[2:], 16) if len(part) > 2 else 0
            elif len(part) > 1 and part[0] == "0":
                value = int(part[1:], 8)
            else:
                value = int(part, 10) if part.isdigit() else -1
        except ValueError:
            return None
        if value < 0:
            return None
        values.append(value)
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = 0
    for v in head:
        number = number * 256 + v
    number = number * 256 ** (4 - len(head)) + last
    return ipaddress.IPv4Address(number)


def parse_ip_host(host: str) -> IPAddress | None:
    """The address a host names literally (standard IPv4/IPv6 or a legacy numeric IPv4 form), else None."""
    text = host.strip().strip("[]")
    if text.endswith("."):
        text = text[:-1]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    if "%" in text:
        try:
            return ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return None
    return parse_ipv4_legacy(text)


def classify_ip(ip: IPAddress) -> str | None:
    """Why an address must not be reached (e.g. "loopback"), or None when it is a public address."""
    if ip in _METADATA_IPS:
        return "cloud metadata"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(ip.compressed.split("%", 1)[0])
        if ip.ipv4_mapped is not None:
            return classify_ip(ip.ipv4_mapped)
        if ip in _NAT64:
            return classify_ip(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        if ip in _NAT64_LOCAL:
            return "local-use NAT64"
        if ip.sixtofour is not None:
            return classify_ip(ip.sixtofour)
        if ip.teredo is not None:
            return classify_ip(ip.teredo[1])
        if ip.is_unspecified:
            return "unspecified"
        if ip.is_loopback:
            return "loopback"
        if ip.is_link_local or ip in _V6("fec0::/10"):
            return "link-local"
        if ip.is_multicast:
            return "multicast"
        if ip in _V6("fc00::/7"):
            return "unique-local"
        if ip in _V6("::/96"):
            return "IPv4-compatible (reserved)"
        if ip.is_reserved or ip.is_private or not ip.is_global:
            return "reserved"
        return None
    for network, reason in _BLOCKED_V4:
        if ip in network:
            return reason
    if ip.is_multicast or ip.is_reserved or ip.is_private or not ip.is_global:
        return "reserved"
    return None


def _normalize_host(host: str) -> str:
    text = host.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return text[:-1] if text.endswith(".") else text


def host_allowed(host: str, allow_hosts: Iterable[str]) -> bool:
    """Exact (case-insensitive) match against the admin's allow list."""
    wanted = _normalize_host(host)
    return any(wanted == _normalize_host(h) for h in allow_hosts if h.strip())


async def vet_url(url: str | yarl.URL, allow_hosts: Iterable[str] = ()) -> VettedTarget:
    """Check scheme and host, resolve it, and refuse any non-public address (raises BlockedUrl)."""
    try:
        parsed = url if isinstance(url, yarl.URL) else yarl.URL(str(url).strip())
    except (ValueError, TypeError) as exc:
        raise BlockedUrl(f"Invalid URL: {exc}") from None
    if parsed.scheme not in ("http", "https"):
        raise BlockedUrl("Only http and https URLs are allowed")
    host = parsed.host
    if not host:
        raise BlockedUrl("URL has no host")
    try:
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
    except ValueError:
        raise BlockedUrl("Invalid port") from None
    allowed = host_allowed(host, allow_hosts)
    name = _normalize_host(host)
    literal = parse_ip_host(name)
    if literal is not None:
        reason = classify_ip(literal)
        if reason and not allowed:
            raise BlockedUrl(f"Refused: {host} is a {reason} address")
        family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        canonical = parsed.with_host(str(literal)) if literal.version == 4 else parsed
        return VettedTarget(canonical, str(literal), port, [(str(literal), family)])
    if not allowed and (name in METADATA_HOSTS or name == "localhost" or name.endswith(".localhost")):
        raise BlockedUrl(f"Refused: {host} is an internal host name")
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise BlockedUrl(f"Cannot resolve host {host}: {exc}") from None
    addresses: list[tuple[str, int]] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        ip_text = str(sockaddr[0])
        ip = ipaddress.ip_address(ip_text.split("%", 1)[0])
        reason = classify_ip(ip)
        if reason and not allowed:
            raise BlockedUrl(f"Refused: {host} resolves to a {reason} address ({ip})")
        if (ip_text, family) not in addresses:
            addresses.append((ip_text, family))
    if not addresses:
        raise BlockedUrl(f"Cannot resolve host {host}")
    return VettedTarget(parsed, name, port, addresses)


def pinned_connector(target: VettedTarget) -> aiohttp.TCPConnector:
    """A connector that reaches only the vetted addresses of `target` (no DNS cache, one connection per request)."""
    return aiohttp.TCPConnector(resolver=pinned_resolver.PinnedResolver(target), use_dns_cache=False, force_close=True)


async def _read_capped(response: aiohttp.ClientResponse, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await response.content.read(65536)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            return b"".join(chunks)[:max_bytes], True


async def fetch(
    url: str,
    *,
    allow_hosts: Iterable[str] = (),
    max_bytes: int = 2 * 1024 * 1024,
    timeout_s: float = 20.0,
    max_redirects: int = 5,
    headers: dict[str, str] | None = None,
) -> FetchResult:
    """GET a URL with the guard on every redirect hop; raises BlockedUrl, aiohttp errors or TimeoutError.

    `headers` (credentials of a datasource, say) go to the URL's own origin only: a redirect to
    another scheme, host or port is followed without them, as browsers do with Authorization.
    """
    allow = tuple(allow_hosts)
    current = str(url)
    redirects: list[str] = []
    base_headers = {"User-Agent": "platform-server web_fetch", "Accept": "text/html,text/plain,*/*;q=0.8"}
    origin: tuple[str, str, int] | None = None
    async with asyncio.timeout(timeout_s):
        while True:
            try:
                target = await vet_url(current, allow)
            except BlockedUrl as exc:
                raise BlockedUrl(f"Redirect to {current}: {exc}" if redirects else str(exc)) from None
            hop = (target.url.scheme, target.host, target.port)
            origin = origin or hop
            request_headers = {**base_headers, **(headers or {})} if hop == origin else dict(base_headers)
            connector = pinned_connector(target)
            async with aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False) as session:
                async with session.get(target.url, allow_redirects=False, headers=request_headers) as response:
                    location = response.headers.get("Location")
                    if response.status in REDIRECT_STATUSES and location:
                        if len(redirects) >= max_redirects:
                            raise BlockedUrl(f"Too many redirects (more than {max_redirects})")
                        try:
                            current = str(response.url.join(yarl.URL(location)))
                        except ValueError:
                            raise BlockedUrl(f"Invalid redirect location: {location}") from None
                        redirects.append(current)
                        continue
                    body, truncated = await _read_capped(response, max_bytes)
                    return FetchResult(
                        url=str(response.url),
                        status=response.status,
                        content_type=response.content_type or "",
                        charset=response.charset,
                        body=body,
                        truncated=truncated,
                        redirects=redirects,
                    )
