"""Discover plugins and register the tools of the enabled ones."""
from __future__ import annotations

from typing import Any

from platform_server.features.plugins.service import PluginCatalog


async def start(platform: Any) -> None:
    catalog = PluginCatalog(platform.services["tools"])
    catalog.discover()
    for name in catalog.plugins:
        catalog.apply(name)
    platform.services["plugins"] = catalog
