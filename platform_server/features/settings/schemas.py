"""Request bodies of the settings routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, RootModel

from platform_server.serialize import View


class SettingsUpdate(RootModel[dict[str, Any]]):
    pass


class LanguageRequest(BaseModel):
    language: Literal["en-US", "zh-CN"]


class SidecarRequest(BaseModel):
    enabled: bool = False
    provider: str | None = Field(default=None, max_length=100)
    modelName: str | None = Field(default=None, max_length=200)


class FlagRequest(BaseModel):
    enabled: bool


class ProxyRequest(BaseModel):
    # the original console's Settings -> Proxy form
    enabled: bool = False
    url: str = Field(default="", max_length=2000)
    nonProxyHosts: str = Field(default="", max_length=4000)


class ProxyTestRequest(BaseModel):
    url: str = Field(min_length=1, max_length=2000)


class SidecarView(View):
    """The sidecar model configuration (`settings.sidecar`): a second model for modalities the main one lacks."""

    enabled: bool
    provider: str | None
    modelName: str | None
