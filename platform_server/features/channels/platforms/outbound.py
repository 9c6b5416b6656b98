"""Outbound HTTP to a platform's API: one session pinned to the channel's vetted API base URL (SSRF rules)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.models import Channel
from platform_server.features.channels.platforms.base import PlatformAdapter, base_url
from platform_server.integrations import net_guard
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")


@asynccontextmanager
async def session_for(allow_hosts: tuple[str, ...], adapter: PlatformAdapter, channel: Channel) -> AsyncIterator[aiohttp.ClientSession]:
    """A client session that reaches only the channel's API host (admin-configured like provider URLs, vetted each time)."""
    try:
        target = await net_guard.vet_url(base_url(adapter, channel), allow_hosts)
    except net_guard.BlockedUrl as exc:
        raise ChannelError(f"apiBaseUrl: {exc}")
    async with aiohttp.ClientSession(connector=net_guard.pinned_connector(target), timeout=aiohttp.ClientTimeout(total=20)) as session:
        yield session


async def call_json(session: aiohttp.ClientSession, method: str, url: str, **kwargs: Any) -> tuple[int, Any]:
    """(status, decoded JSON or None) of one API call; unreachable -> ChannelError."""
    try:
        async with session.request(method, url, allow_redirects=False, **kwargs) as r:
            raw = await r.read()
            try:
                data = json.loads(raw) if raw else None
            except ValueError:
                data = None
            return r.status, data
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise ChannelError(f"platform API unreachable: {type(exc).__name__}: {exc}")
