"""Request bodies of the settings routes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, RootModel
from pydantic.json_schema import JsonDict

from platform_server.features.settings import service
from platform_server.ids import WHITESPACE
from platform_server.serialize import View
from platform_server.web.bodies import explained

# An enabled sidecar names its provider and model (service._validate_sidecar): stated as "disabled, or both given"
SIDECAR_NEEDS_MODEL: JsonDict = {
    "anyOf": [
        {"properties": {"enabled": {"type": "boolean", "enum": [False]}}},
        {
            "required": ["provider", "modelName"],
            "properties": {"provider": {"type": "string", "minLength": 1}, "modelName": {"type": "string", "minLength": 1}},
        },
    ]
}
# A media setting's field: 1-200 characters, or null for the default (service._validate_strings)
Short = Annotated[str | None, Field(min_length=1, max_length=200)]


class SidecarRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra=SIDECAR_NEEDS_MODEL)

    enabled: bool = False
    provider: str | None = Field(default=None, max_length=100)
    modelName: str | None = Field(default=None, max_length=200)


class SidecarSetting(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=SIDECAR_NEEDS_MODEL)

    # absent fields take the defaults (service._validate_sidecar merges with DEFAULT_SIDECAR)
    enabled: bool = False
    provider: str | None = Field(default=None, max_length=200)
    modelName: str | None = Field(default=None, max_length=200)


class SpeechSetting(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    provider: Short = None
    sttModel: Short = None
    ttsModel: Short = None
    voice: Short = None


class ImageSetting(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    provider: Short = None
    model: Short = None
    size: Short = None


class MediaJobSetting(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    provider: Short = None
    model: Short = None


def _console_keys(schema: JsonDict) -> None:
    """The original console's keys this server accepts and ignores (service.CONSOLE_IGNORED), listed so that the
    body's keys are exactly the ones the server takes: any other key is an unknown setting (400)."""
    props = schema.setdefault("properties", {})
    assert isinstance(props, dict)  # pydantic writes the model's properties first
    for prop in props.values():  # an absent key leaves the setting as it is: no default to state
        if isinstance(prop, dict):
            prop.pop("default", None)
    for key in sorted(service.CONSOLE_IGNORED):
        props[key] = {"description": "the original console's; accepted and ignored"}
    schema["additionalProperties"] = False


class SettingsUpdate(BaseModel):
    """Some settings: each key a known setting (service.DEFAULTS), a console alias, or an ignored console key."""

    model_config = ConfigDict(extra="allow", strict=True, json_schema_extra=_console_keys)

    # Non-null values; the defaults only stand for "absent" (the key's setting stays as it is) and are not documented
    language: Literal["en-US", "zh-CN"] = "en-US"
    siteName: str = Field(default="", max_length=2000)
    timezone: str = Field(default="UTC", json_schema_extra={"enum": list[JsonValue](sorted(service.time_zones()))})
    welcomeMessage: str = Field(default="", max_length=2000)
    sidecar: SidecarSetting = Field(default_factory=SidecarSetting)
    speech: SpeechSetting = Field(default_factory=SpeechSetting)
    images: ImageSetting = Field(default_factory=ImageSetting)
    video: MediaJobSetting = Field(default_factory=MediaJobSetting)
    music: MediaJobSetting = Field(default_factory=MediaJobSetting)
    model3d: MediaJobSetting = Field(default_factory=MediaJobSetting)
    streamEnabled: bool = True
    debugMode: bool = False
    showThinking: bool = True
    thinkingFull: bool = True
    # the original console's flat names of speech and image fields (service.FLAT_ALIASES); "" or null: the default
    ttsDefaultVoice: str | None = Field(default=None, max_length=200)
    sttOpenAiCompatProviderId: str | None = Field(default=None, max_length=200)
    sttOpenAiCompatModel: str | None = Field(default=None, max_length=200)
    imageProvider: str | None = Field(default=None, max_length=200)


class LanguageRequest(BaseModel):
    language: Literal["en-US", "zh-CN"]


class FlagRequest(BaseModel):
    enabled: bool | None = Field(default=None, description="Absent: flip (as every toggle; the body is optional)")


# An HTTP(S) proxy URL with a host name or IPv4 address (an IPv6 literal's own rules are more than a pattern should
# carry), optional credentials, a port of 0-65535 and a path (outbound_proxy.check_url), or "" for none; the pattern
# is the rule both ways: the server refuses what it does not match. The spaces are named (ids.WHITESPACE): `\s` is
# another set to ECMA (U+FEFF), to pydantic's regex (U+0085) and to strip()
PROXY_URL_PATTERN = explained(
    f"^(|[hH][tT][tT][pP][sS]?://([^{WHITESPACE}/?#@\\[\\]]+@)?[A-Za-z0-9._~-]+"
    f"(:([0-9]{{1,4}}|[1-5][0-9]{{4}}|6[0-4][0-9]{{3}}|65[0-4][0-9]{{2}}|655[0-2][0-9]|6553[0-5]))?(/[^{WHITESPACE}]*)?)$",
    "must be an http:// or https:// URL with a host and a port of 0-65535, e.g. http://127.0.0.1:7890 (SOCKS proxies are not supported)",
)


class ProxyRequest(BaseModel):
    # the original console's Settings -> Proxy form; an enabled proxy needs its URL
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"properties": {"enabled": {"type": "boolean", "enum": [False]}}},
                {"required": ["url"], "properties": {"url": {"minLength": 1}}},
            ]
        }
    )

    enabled: bool = False
    url: str = Field(default="", max_length=2000, pattern=PROXY_URL_PATTERN)
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
