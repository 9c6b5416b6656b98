"""Request bodies of the Models, LLM runtime and provider routes."""

from __future__ import annotations

from typing import Annotated

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, RootModel
from pydantic.json_schema import JsonDict

from platform_server.ids import NOT_BLANK_PATTERN, WHITESPACE
from platform_server.serialize import View
from platform_server.web.bodies import explained
from platform_server.web.secret_fields import RemovableSecret

KeepAlive = Annotated[str, Field(max_length=40)] | int | None  # a Go duration ("5m", "-1") or whole seconds

# What the service checks, stated for the document (models.service, models.capabilities, integrations.llm.ollama)
PROVIDER_SLUG = r"^[a-z0-9][a-z0-9._-]*$"
REMOTE_PROTOCOLS = ["openai", "anthropic", "openai-compatible", "anthropic-messages"]  # the last two: the original console's names
# an http(s) URL with a host and no credentials (service.check_base_url)
REMOTE_URL = f"^[Hh][Tt][Tt][Pp][Ss]?://[^{WHITESPACE}/?#@:\\[\\]\\x00-\\x1f]+(:[0-9]{{1,5}})?([/?#][^{WHITESPACE}\\x00-\\x1f]*)?$"
# what an update's baseUrl may be: an http(s) URL (remote protocols), or empty or an absolute path (the local
# protocol's GGUF file or folder); which of them the provider takes follows its protocol, a state: a 409
BASE_URL = f"^(|{REMOTE_URL[1:-1]}|/[^\\x00-\\x1f]*)$"
MODALITIES_PATTERN = r"^( *(text|image) *(, *(text|image) *)*)?$"  # empty: text
_NO_SETTING: JsonDict = {"keepAlive": {"type": "string", "enum": ["", None], "nullable": True}, "numCtx": {"nullable": True, "enum": [None]}}
_KEEP_ALIVE: JsonDict = {
    "anyOf": [
        {"type": "string", "maxLength": 40, "pattern": r"^(|-?[0-9]+|0|[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|ms|s|m|h))+)$"},
        {"type": "integer"},
    ],
    "nullable": True,
}
# The protocol decides what baseUrl must be and whether the Ollama settings apply (absent protocol: openai)
_BY_PROTOCOL: JsonDict = {
    "oneOf": [
        {
            "required": ["baseUrl"],
            "properties": {
                "protocol": {"type": "string", "enum": [*REMOTE_PROTOCOLS]},
                "baseUrl": {"type": "string", "pattern": REMOTE_URL},
                **_NO_SETTING,
            },
        },
        {
            "required": ["protocol", "baseUrl"],
            "properties": {
                "protocol": {"type": "string", "enum": ["ollama"]},
                "baseUrl": {"type": "string", "pattern": REMOTE_URL},
                "keepAlive": _KEEP_ALIVE,
            },
        },
        # a GGUF file or folder on the server (a missing one is a 404), or empty for the shipped model
        {"required": ["protocol"], "properties": {"protocol": {"type": "string", "enum": ["local"]}, **_NO_SETTING}},
    ]
}


class CustomProviderCreate(BaseModel):
    model_config = ConfigDict(json_schema_extra=_BY_PROTOCOL)
    # id / defaultBaseUrl: the original console's names
    providerId: str = Field(
        min_length=1, max_length=64, validation_alias=AliasChoices("providerId", "id"), json_schema_extra={"pattern": PROVIDER_SLUG}
    )
    name: str = Field(min_length=1, max_length=100)
    baseUrl: str = Field(default="", max_length=2000, validation_alias=AliasChoices("baseUrl", "defaultBaseUrl"))
    apiKey: RemovableSecret = Field(default=None, max_length=8000)
    protocol: str = Field(default="openai", json_schema_extra={"enum": [*REMOTE_PROTOCOLS, "ollama", "local"]})
    # Ollama's request settings (protocol ollama only): how long a model stays loaded, and its context length
    keepAlive: KeepAlive = None
    numCtx: int | None = Field(default=None, ge=256, le=2_097_152)


class ProviderConfigUpdate(BaseModel):
    baseUrl: str | None = Field(default=None, max_length=2000, pattern=explained(BASE_URL, "must be an http or https URL, or a path"))
    apiKey: RemovableSecret = Field(default=None, max_length=8000)
    name: str | None = Field(default=None, min_length=1, max_length=100)
    protocol: str | None = Field(default=None, json_schema_extra={"enum": [*REMOTE_PROTOCOLS, "ollama", "local", None]})
    keepAlive: KeepAlive = Field(default=None, json_schema_extra=_KEEP_ALIVE)  # null clears (the server's default)
    numCtx: int | None = Field(default=None, ge=256, le=2_097_152)  # null clears (the platform's default)


class ProviderModelCreate(BaseModel):
    # id / name: the original console's names for the model name and its display name
    modelName: str = Field(
        min_length=1, max_length=500, validation_alias=AliasChoices("modelName", "id"), json_schema_extra={"pattern": NOT_BLANK_PATTERN}
    )
    displayName: str | None = Field(default=None, max_length=200, validation_alias=AliasChoices("displayName", "name"))
    modelType: str | None = Field(default="chat", json_schema_extra={"enum": ["chat", "embedding", None]})  # null: chat
    modalities: str | None = Field(default=None, json_schema_extra={"pattern": MODALITIES_PATTERN})  # comma-separated
    maxInputTokens: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)  # 0 or less: the model's own window
    enabled: bool = True
    # chat, tools, json (chat always: a chat model can chat); null: the protocol's default
    capabilities: list[str] | None = Field(
        default=None, max_length=3, json_schema_extra={"items": {"type": "string", "enum": ["chat", "tools", "json"]}}
    )


class ModelCreate(ProviderModelCreate):
    providerId: str = Field(min_length=1, max_length=200)


class ModelUpdate(BaseModel):
    """A sparse update, each field with the rules of ProviderModelCreate's (the service checks the same)."""

    displayName: str | None = Field(default=None, max_length=200)
    modalities: str | None = Field(default=None, json_schema_extra={"pattern": MODALITIES_PATTERN})
    # strict: "5" or 5.0 is no integer (the document says integer), int64 as the column
    maxInputTokens: int | None = Field(default=None, strict=True, ge=-(2**63), le=2**63 - 1)
    enabled: bool | None = None
    capabilities: list[str] | None = Field(
        default=None, max_length=3, json_schema_extra={"items": {"type": "string", "enum": ["chat", "tools", "json"]}}
    )


class ActiveModel(BaseModel):
    # providerId/model: the original console's names (decisions.md, compatibility)
    model_config = ConfigDict(populate_by_name=True)
    provider: str = Field(min_length=1, max_length=200, validation_alias=AliasChoices("provider", "providerId"))
    modelName: str = Field(min_length=1, max_length=500, validation_alias=AliasChoices("modelName", "model"))


class ContextWindow(BaseModel):
    modelId: int
    maxInputTokens: int | None = None


class EmbeddingDefault(BaseModel):
    modelId: int


class EmbeddingTest(BaseModel):
    text: str = Field(default="The quick brown fox jumps over the lazy dog.", min_length=1, max_length=2000)


class ModelTest(BaseModel):
    modelName: str | None = Field(default=None, max_length=500)


class DiscoverApply(BaseModel):
    # modelIds: the original console's name for the same list
    model_config = ConfigDict(populate_by_name=True)
    modelNames: list[str] | None = Field(default=None, max_length=1000, validation_alias=AliasChoices("modelNames", "modelIds"))


class ProviderOptionView(View):
    id: str
    name: str


class ActiveLlmView(View):
    provider: str
    modelName: str
    providerId: str = Field(description="same as provider (the original console's name)")
    model: str = Field(description="same as modelName (the original console's name)")


class ActiveModelView(View):
    activeLlm: ActiveLlmView | None = Field(description="the default chat model; null when none")


class DefaultEmbeddingIdView(RootModel[str | None]):
    """The default embedding model's id; null when none."""


class ProviderProbeView(View):
    """A real one-token call to the provider (or its model list when it has no chat model)."""

    success: bool
    providerId: str
    modelName: str | None
    message: str
    latencyMs: int
    content: str | None = Field(default=None, description="the model's reply, after a successful call")
    modelCount: int | None = Field(default=None, description="models listed, when the probe listed them")
    status: int | None = Field(default=None, description="the provider's HTTP status, after a failure")


class EmbeddingProbeView(View):
    modelId: str
    providerId: str
    modelName: str
    success: bool
    message: str
    dimensions: int
    preview: list[float] = Field(description="the first values of the vector")
    latencyMs: int


class DiscoveredModelView(View):
    id: str = Field(description="the model name")
    name: str
    modelName: str
    modelType: str
    modalities: str
    maxInputTokens: int | None
    capabilities: list[str] | None = Field(description="as the provider states them (Ollama); null when it does not")
    added: bool = Field(description="already configured")


class DiscoveryView(View):
    discoveredModels: list[DiscoveredModelView]
    newModels: list[DiscoveredModelView]
    totalDiscovered: int
    newCount: int
