"""Plugins: installed Python entry points that add tools, and their per-workspace settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.plugins.service import PluginCatalog


PLUGINS: RuntimeKey[PluginCatalog] = RuntimeKey("plugins")
