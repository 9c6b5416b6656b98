"""Discover plugins and register the tools of the enabled ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.plugins import PLUGINS
from platform_server.features.plugins.service import PluginCatalog
from platform_server.features.tools import TOOLS

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    catalog = PluginCatalog(platform.runtime(TOOLS))
    catalog.discover()
    for name in catalog.plugins:
        catalog.apply(name)
    platform.set_runtime(PLUGINS, catalog)
