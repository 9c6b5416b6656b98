"""Request bodies and answers of the plugins routes."""

from __future__ import annotations

from typing import Any

from pydantic import Field, JsonValue, RootModel

from platform_server.serialize import View


class PluginConfig(RootModel[dict[str, Any]]):
    pass


class PluginView(View):
    """A plugin (`service.to_dict`). `config` and `configSchema` are free-form: the values an admin set (secrets
    masked) and the rules the plugin's author declared per key (`type`, `minimum`, `maximum`, `enum`, `default`,
    `writeOnly`)."""

    name: str
    version: str
    description: str
    source: str = Field(description="where it was loaded from")
    enabled: bool
    config: dict[str, JsonValue]
    configSchema: dict[str, dict[str, JsonValue]]
    tools: list[str] = Field(description="names of the tools it registered")
    updateTime: str | None
