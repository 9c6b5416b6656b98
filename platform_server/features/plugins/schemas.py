"""Request bodies of the plugins routes."""

from __future__ import annotations

from typing import Any

from pydantic import RootModel


class PluginConfig(RootModel[dict[str, Any]]):
    pass
