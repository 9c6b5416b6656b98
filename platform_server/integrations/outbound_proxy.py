"""The global outbound proxy (Settings -> Proxy): whether a request to a URL goes through an HTTP proxy.

The settings area hands `use()` a function that answers the stored setting `{enabled, url, nonProxyHosts}`
(cached, refreshed when it changes); the model providers' transport asks `for_url(url)` before each request.
`nonProxyHosts` is the original console's bypass list: host patterns with `*`, separated by `|` (or commas),
e.g. `localhost|127.*|*.local`. Only HTTP(S) proxies: aiohttp speaks no SOCKS.
"""

from __future__ import annotations

import fnmatch
import re
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping
from urllib.parse import urlsplit

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")

Source = Callable[[], Mapping[str, Any]]
MAX_PATTERNS = 100
_source: Source | None = None


def use(source: Source | None) -> None:
    """Where the setting is read from (None: no proxy, e.g. before the settings area started)."""
    global _source
    _source = source


def check_url(url: str) -> str:
    """The proxy URL, validated: `http://` or `https://` with a host (credentials allowed); ValueError otherwise."""
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme.lower().startswith("socks"):
        raise ValueError("SOCKS proxies are not supported here: give an HTTP proxy (http://host:port)")
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:7890")
    try:
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        raise ValueError("has an invalid port")
    return text


def patterns(text: str) -> list[str]:
    """The bypass list's host patterns (lower case)."""
    found = [p.strip().lower() for p in re.split(r"[|,\s]+", text or "") if p.strip()]
    if len(found) > MAX_PATTERNS:
        raise ValueError(f"at most {MAX_PATTERNS} host patterns")
    return found


def bypassed(host: str, non_proxy_hosts: str) -> bool:
    name = host.lower().strip("[]")
    return any(fnmatch.fnmatchcase(name, p) for p in patterns(non_proxy_hosts))


def for_url(url: str) -> str | None:
    """The proxy a request to `url` goes through, or None (no proxy set, switched off, or the host bypasses it)."""
    cfg = _source() if _source is not None else None
    if not cfg or not cfg.get("enabled") or not cfg.get("url"):
        return None
    host = urlsplit(url).hostname or ""
    return None if bypassed(host, str(cfg.get("nonProxyHosts") or "")) else str(cfg["url"])


async def probe(proxy_url: str, target: str, timeout_s: float) -> dict[str, Any]:
    """`{ok, latencyMs, error}`: one GET of `target` through the proxy (what Settings -> Proxy -> Test shows)."""
    started = time.monotonic()
    try:
        proxy = check_url(proxy_url)
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
            async with session.get(target, proxy=proxy, allow_redirects=False) as resp:
                await resp.read()
                status = resp.status
    except (ValueError, aiohttp.ClientError, OSError, TimeoutError) as exc:
        return {"ok": False, "latencyMs": round((time.monotonic() - started) * 1000), "error": str(exc) or type(exc).__name__}
    latency = round((time.monotonic() - started) * 1000)
    if status >= 400:
        return {"ok": False, "latencyMs": latency, "error": f"HTTP {status} from {target} through the proxy"}
    return {"ok": True, "latencyMs": latency, "error": None}
