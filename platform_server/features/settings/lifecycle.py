"""Start: model provider calls read the outbound proxy setting from here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.settings import service
from platform_server.integrations import outbound_proxy

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    outbound_proxy.use(service.get_proxy)


async def stop(platform: Platform) -> None:
    outbound_proxy.use(None)
