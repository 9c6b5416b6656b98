"""Request bodies of the settings routes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

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


class SpeechSettingsView(View):
    provider: str | None = Field(description="an OpenAI-compatible provider id; null: the local engines")
    sttModel: str
    ttsModel: str
    voice: str


class ImageSettingsView(View):
    provider: str | None
    model: str
    size: str


class MediaJobSettingsView(View):
    provider: str | None
    model: str


class SettingsView(View):
    """Every setting (defaults filled in) and the original console's flat, read-only names for the same values.
    Keys stored by other means than this API (none in a normal install) come along as they are."""

    model_config = ConfigDict(extra="allow")

    language: Literal["en-US", "zh-CN"]
    siteName: str
    timezone: str
    welcomeMessage: str
    sidecar: SidecarView
    speech: SpeechSettingsView
    images: ImageSettingsView
    video: MediaJobSettingsView
    music: MediaJobSettingsView
    model3d: MediaJobSettingsView
    streamEnabled: bool
    debugMode: bool
    showThinking: bool
    thinkingFull: bool
    ttsDefaultVoice: str | None
    sttOpenAiCompatProviderId: str | None
    sttOpenAiCompatModel: str | None
    imageProvider: str | None
    ttsEnabled: bool
    sttEnabled: bool
    imageEnabled: bool
    searchEnabled: bool
    searchProvider: str | None


class LanguageView(RootModel[Literal["en-US", "zh-CN"]]):
    """The system language, a plain string."""


class ProxyView(View):
    enabled: bool
    url: str
    nonProxyHosts: str


class ProxyProbeView(View):
    ok: bool
    latencyMs: int
    error: str | None


class FeatureFlagView(View):
    key: str
    enabled: bool
    description: str
    updateTime: str | None
    flagKey: str = Field(description="same as key (the original console's name)")
