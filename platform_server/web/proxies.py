"""Where a request came from: the client's address behind trusted proxies, and whether it is truly local.

The server reads no forwarding header unless the socket peer is a configured trusted proxy
(`trusted_proxies`): anyone else could write `X-Forwarded-For` themselves.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Iterable, Mapping

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Headers that only a proxy (or a client pretending to be one) adds; any of them means "not local".
PROXY_HEADERS = ("X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Server", "X-Real-Ip", "Forwarded", "Via")
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


@functools.lru_cache(maxsize=8)
def parse_networks(values: tuple[str, ...]) -> tuple[Network, ...]:
    """The trusted proxies as networks (an address is a /32 or /128); a bad entry is a ValueError naming it."""
    out: list[Network] = []
    for value in values:
        try:
            out.append(ipaddress.ip_network(value.strip(), strict=False))
        except ValueError:
            raise ValueError(f"trusted_proxies: '{value}' is not an IP address or network") from None
    return tuple(out)


def _ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    value = value.strip()
    if value.startswith("[") and "]" in value:  # [v6]:port
        value = value[1 : value.index("]")]
    elif value.count(":") == 1:  # v4:port
        value = value.split(":", 1)[0]
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        return None


def is_trusted(peer: str, trusted: Iterable[Network]) -> bool:
    ip = _ip(peer)
    return ip is not None and any(ip in net for net in trusted)


def client_address(peer: str, headers: Mapping[str, str], trusted_proxies: tuple[str, ...]) -> str:
    """The client's address: the socket peer, or, when the peer is a trusted proxy, the nearest
    `X-Forwarded-For` hop that is not itself a trusted proxy (the hops before it are the client's word)."""
    trusted = parse_networks(trusted_proxies)
    if not trusted or not is_trusted(peer, trusted):
        return peer
    hops = [h.strip() for h in headers.get("X-Forwarded-For", "").split(",") if h.strip()]
    for hop in reversed(hops):
        ip = _ip(hop)
        if ip is None:
            return peer  # a garbled chain: keep the proxy's own address rather than trust any part of it
        if not any(ip in net for net in trusted):
            return str(ip)
    return str(_ip(hops[0])) if hops else peer


def came_through_proxy(peer: str, headers: Mapping[str, str], trusted_proxies: tuple[str, ...]) -> bool:
    """True when a proxy forwarded the request: the peer is a trusted proxy, or it carries a proxy's header."""
    return is_trusted(peer, parse_networks(trusted_proxies)) or any(h in headers for h in PROXY_HEADERS)


def _loopback_host(host_header: str) -> bool:
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host.rstrip(".") in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_local(peer: str, headers: Mapping[str, str], trusted_proxies: tuple[str, ...]) -> bool:
    """A request from this machine itself, not relayed: a loopback peer, no proxy sign, a loopback Host.

    A reverse proxy on the same machine connects from loopback too; it is told apart by its headers, by
    `trusted_proxies`, or by the public name it passes on in Host (nginx `proxy_set_header Host $host`)."""
    ip = _ip(peer)
    if ip is None or not ip.is_loopback:
        return False
    return not came_through_proxy(peer, headers, trusted_proxies) and _loopback_host(headers.get("Host", ""))
