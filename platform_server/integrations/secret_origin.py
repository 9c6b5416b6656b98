"""Write-only secrets stay with the origin they were given for.

A stored secret (a header, an API key, a pairing token) was entered for one server. When a later
update points the same object at another origin (scheme, host or port), the stored value is
dropped: only a value supplied again in that same request goes to the new server. A mask sent
back ("keep what is stored") keeps nothing across an origin change.
"""

from __future__ import annotations

from typing import TypeVar
from urllib.parse import urlsplit

V = TypeVar("V")

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def origin(url: str | None) -> tuple[str, str, int | None] | None:
    """(scheme, host, port) of a URL, with the scheme's default port filled in; None for no URL."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ("", url.strip().lower(), None)  # an unparsable URL only equals itself
    scheme = parts.scheme.lower()
    return (scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme))


def origin_changed(old_url: str | None, new_url: str | None) -> bool:
    """True when a secret stored for old_url must not follow the object to new_url."""
    return new_url is not None and origin(old_url) != origin(new_url)


def kept(stored: V, old_url: str | None, new_url: str | None) -> V | None:
    """The stored secret while the origin stays; None (dropped) when the object moves elsewhere."""
    return None if origin_changed(old_url, new_url) else stored


def carry(
    given: dict[str, str] | None, stored: dict[str, str], mask: str, old_url: str | None, new_url: str | None
) -> tuple[dict[str, str] | None, dict[str, str]]:
    """(the values given, the stored values a mask may keep) for an update of a header/env map.

    Same origin: unchanged. Another origin: nothing stored is kept, and a masked value (which asked
    to keep the stored one) is left out, so only values typed again in this request are sent there."""
    if not origin_changed(old_url, new_url):
        return given, dict(stored)
    return (None if given is None else {k: v for k, v in given.items() if v != mask}), {}
