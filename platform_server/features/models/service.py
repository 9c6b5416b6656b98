"""Providers and models: the catalog, custom providers, defaults and per-model settings."""

from __future__ import annotations

import os
import re
import urllib.parse
from typing import Any, Iterable, Literal

import peewee
import pydantic

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.models import capabilities
from platform_server.features.models.models import ModelConfig, Provider
from platform_server.features.models.schemas import MODALITIES_PATTERN, PROVIDER_SLUG, REMOTE_URL
from platform_server.ids import NOT_BLANK_RE
from platform_server.integrations.llm.base import PROTOCOLS
from platform_server.integrations.llm.ollama import check_keep_alive
from platform_server.integrations.llm.types import ProviderSettings
from platform_server.integrations.secret_origin import origin_changed
from platform_server.serialize import GIVEN, Fields, flag, ident, typed, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound, is_integer_text

SLUG = re.compile(PROVIDER_SLUG)
MODALITIES_RE = re.compile(MODALITIES_PATTERN)
REMOTE_URL_RE = re.compile(REMOTE_URL)
MODEL_TYPES = ("chat", "embedding")
MODALITIES = ("text", "image")


# ---- shapes ---------------------------------------------------------------


# ModelConfigEntity: never carries a key.
# the original console's names: `provider` for providerId, `name` for displayName
model_to_dict = Fields(
    id=ident("id"),
    providerId=typed("provider_id", str),
    modelName=typed("model_name", str),
    displayName=typed(lambda m: m.display_name or m.model_name, str),
    modelType=typed("model_type", str),
    modalities=typed("modalities", str),  # "text" or "text,image"
    maxInputTokens=typed("max_input_tokens", int | None),
    capabilities=typed(capabilities.of_row, list[str]),  # what a chat model can do: chat, tools, json
    label=typed(capabilities.label_of, str | None),  # a short note for model pickers (the embedded model: a small offline demo)
    isDefault=flag("is_default"),
    enabled=flag("enabled"),
    createTime=when("create_time"),
    provider=typed("provider_id", str),
    name=typed(lambda m: m.display_name or m.model_name, str),
)
ModelView = model_to_dict.view("ModelView")


PROVIDER_FIELDS = Fields(
    id="id",
    name="name",
    protocol="protocol",
    baseUrl="base_url",
    apiKey="api_key",
    keepAlive=lambda p: (p.options or {}).get("keepAlive"),
    numCtx=lambda p: (p.options or {}).get("numCtx"),
    enabled=flag("enabled"),
    builtin=flag("builtin"),
    models=GIVEN,
    extraModels=lambda p: [],
    isLocal=lambda p: p.protocol == "local",
    isCustom=lambda p: not p.builtin,
    configured=GIVEN,
    available=GIVEN,
    liveness=GIVEN,
    # the original console shows Discover and Test connection by these; every protocol here lists its models
    supportModelDiscovery=lambda p: True,
    supportConnectionCheck=lambda p: True,
    requireApiKey=lambda p: p.builtin and p.protocol not in ("local", "ollama"),
    freezeUrl=lambda p: p.protocol == "local",
)


# The provider answers' models: `PROVIDER_FIELDS` reads plain attributes (no per-field wrapper on the serving
# path), so the view states their types here.
ProviderView = PROVIDER_FIELDS.view(
    "ProviderView",
    id=(str, ...),
    name=(str, ...),
    protocol=(str, ...),
    baseUrl=(str, ...),
    apiKey=(str | None, ...),
    keepAlive=(str | int | None, ...),
    numCtx=(int | None, ...),
    models=(list[ModelView], ...),  # type: ignore[valid-type]  # a view derived from model_to_dict
    extraModels=(list[ModelView], pydantic.Field(max_length=0)),  # type: ignore[valid-type]  # always empty
    isLocal=(bool, ...),
    isCustom=(bool, ...),
    configured=(bool, ...),
    available=(bool, ...),
    liveness=(Literal["LIVE", "COOLDOWN", "UNCONFIGURED"], ...),
    supportModelDiscovery=(bool, ...),
    supportConnectionCheck=(bool, ...),
    requireApiKey=(bool, ...),
    freezeUrl=(bool, ...),
)
# `GET /models`: a provider as the original console's selectors read it (`console_provider`).
ConsoleModelView = model_to_dict.view("ConsoleModelView", id=(str, pydantic.Field(description="the model name")), configId=(str, ...))
ConsoleProviderView = pydantic.create_model(
    "ConsoleProviderView",
    __base__=ProviderView,
    models=(list[ConsoleModelView], pydantic.Field(description="the enabled chat models")),  # type: ignore[valid-type]
)


def provider_to_dict(p: Provider, models: Iterable[ModelConfig], pool_state: str | None = None) -> dict[str, Any]:
    """ProviderInfoDTO: includes the API key (global-admin routes only).

    `pool_state` (the LLM pool's state of the provider) adds the liveness fields the original
    console reads: `available`, `liveness` (LIVE, COOLDOWN, UNCONFIGURED), `isLocal`, `isCustom`.
    """
    rows = list(models)
    usable = bool(p.enabled) and any(m.enabled and m.model_type == "chat" for m in rows)
    configured = p.protocol in ("local", "ollama") or not p.builtin or bool(p.api_key)  # a local Ollama takes no key
    available = usable and configured
    liveness = "UNCONFIGURED" if not available else "COOLDOWN" if pool_state == "cooldown" else "LIVE"
    return PROVIDER_FIELDS(p, models=[model_to_dict(m) for m in rows], configured=configured, available=available, liveness=liveness)


def _ordered_models() -> peewee.ModelSelect[ModelConfig]:
    return (
        ModelConfig.select(ModelConfig, Provider)
        .join(Provider)
        .order_by(Provider.sort_order, Provider.id, ModelConfig.model_type, ModelConfig.create_time, ModelConfig.id)
    )


def console_provider(entry: dict[str, Any]) -> dict[str, Any]:
    """ProviderInfoDTO as the original console's selectors read it: `models` are the enabled chat models,
    each identified by its model name (`id`; the stored id stays as `configId`), so the chat footer, the
    active mark and the conversation's model all use the name. Embedding models are not chat options."""
    models = [{**m, "id": m["modelName"], "configId": m["id"]} for m in entry["models"] if m["modelType"] == "chat" and m["enabled"]]
    return {**entry, "models": models}


def list_providers(enabled_only: bool, pool_states: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Providers with their models (only enabled providers when asked)."""
    q = Provider.select().order_by(Provider.sort_order, Provider.id)
    if enabled_only:
        q = q.where(Provider.enabled == True)  # noqa: E712
    providers = list(q)
    by_provider: dict[str, list[ModelConfig]] = {p.id: [] for p in providers}
    for m in _ordered_models():
        if m.provider_id in by_provider:
            by_provider[m.provider_id].append(m)
    states = pool_states or {}
    return [provider_to_dict(p, by_provider[p.id], states.get(p.id)) for p in providers]


def provider_options() -> list[dict[str, Any]]:
    """Enabled providers as `{id, name}` only: safe for any workspace viewer."""
    q = Provider.select().where(Provider.enabled == True).order_by(Provider.sort_order, Provider.id)  # noqa: E712
    return [{"id": p.id, "name": p.name} for p in q]


def enabled_models(model_type: str | None = None, modality: str | None = None) -> list[ModelConfig]:
    """Enabled models of enabled providers, optionally of one type and supporting one modality."""
    q = _ordered_models().where((ModelConfig.enabled == True) & (Provider.enabled == True))  # noqa: E712
    if model_type:
        q = q.where(ModelConfig.model_type == model_type)
    rows = list(q)
    if modality:
        rows = [m for m in rows if modality in _split_modalities(m.modalities)]
    return rows


def _split_modalities(value: str) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


# ---- lookups --------------------------------------------------------------


def get_provider(provider_id: str) -> Provider:
    p = Provider.get_or_none(Provider.id == provider_id)
    if p is None:
        raise NotFound(f"Provider not found: {provider_id}")
    return p


def provider_name(provider_id: str) -> str:
    """What people read for a provider (its name; the id when the row is gone)."""
    row = Provider.get_or_none(Provider.id == provider_id)
    return row.name if row is not None else provider_id


def get_model_row(model_id: int) -> ModelConfig:
    m = ModelConfig.get_or_none(ModelConfig.id == model_id)
    if m is None:
        raise NotFound("Model not found")
    return m


def default_model(model_type: str = "chat") -> ModelConfig | None:
    """The usable default of a type (enabled model of an enabled provider), or None."""
    rows = enabled_models(model_type)
    return next((m for m in rows if m.is_default), None)


def ensure_defaults() -> None:
    """Keep exactly one usable default per model type when any usable model exists."""
    with database.atomic():
        for model_type in MODEL_TYPES:
            usable = enabled_models(model_type)
            current = next((m for m in usable if m.is_default), None)
            if current is None and usable:
                current = usable[0]
            keep = current.id if current else 0
            ModelConfig.update(is_default=False).where(
                (ModelConfig.model_type == model_type) & (ModelConfig.is_default == True) & (ModelConfig.id != keep)  # noqa: E712
            ).execute()
            if current is not None and not current.is_default:
                ModelConfig.update(is_default=True).where(ModelConfig.id == keep).execute()


# ---- validation -----------------------------------------------------------


def check_base_url(protocol: str, base_url: str) -> str:
    """An http(s) URL for remote protocols; for `local`, empty or an existing GGUF file or folder.

    Provider URLs are set by global admins only, so LAN and loopback hosts are allowed on purpose.
    """
    base_url = (base_url or "").strip()
    if protocol == "local":
        if base_url and not os.path.exists(base_url):  # a fact of the machine, not of the request's shape
            raise NotFound("baseUrl: no such file or folder for the local protocol")
        return base_url
    parsed = urllib.parse.urlparse(base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname or not REMOTE_URL_RE.fullmatch(base_url):
        raise BadRequest("baseUrl: must be an http or https URL")
    if parsed.username or parsed.password:
        raise BadRequest("baseUrl: must not contain credentials (use apiKey)")
    return base_url.rstrip("/")


SETTING_FIELDS = ("keepAlive", "numCtx")


def provider_settings(p: Provider) -> ProviderSettings | None:
    """The request settings an Ollama provider's calls carry (None for other protocols)."""
    if p.protocol != "ollama":
        return None
    options = p.options or {}
    return ProviderSettings(keep_alive=options.get("keepAlive"), num_ctx=options.get("numCtx"))


def merge_settings(protocol: str, current: dict[str, Any] | None, changes: dict[str, Any]) -> dict[str, Any] | None:
    """A provider's options after `changes` (a null value clears one); only the ollama protocol takes any."""
    merged = {k: v for k, v in (current or {}).items() if k in SETTING_FIELDS}
    for key in SETTING_FIELDS:
        if key not in changes:
            continue
        value = changes[key]
        if value is None or value == "":
            merged.pop(key, None)
            continue
        if protocol != "ollama":
            raise BadRequest(f"{key}: only a provider of the ollama protocol takes it")
        if key == "keepAlive":
            try:
                value = check_keep_alive(value)
            except ValueError as exc:
                raise BadRequest(f"keepAlive: {exc}") from None
        merged[key] = value
    return merged or None


# The original console's protocol names for the two wire protocols spoken here.
PROTOCOL_ALIASES = {"openai-compatible": "openai", "anthropic-messages": "anthropic"}


def check_protocol(protocol: str) -> str:
    protocol = PROTOCOL_ALIASES.get(protocol, protocol)
    if protocol not in PROTOCOLS:
        raise BadRequest(f"protocol: must be one of {', '.join(PROTOCOLS)}")
    return protocol


def check_modalities(value: str | None) -> str:
    parts = _split_modalities(value or "text")
    bad = [p for p in parts if p not in MODALITIES]
    if bad or not parts or not MODALITIES_RE.fullmatch(value or ""):  # schemas.MODALITIES_PATTERN
        raise BadRequest(f"modalities: must be a comma-separated subset of {', '.join(MODALITIES)}")
    return ",".join(m for m in MODALITIES if m in parts)


def check_model_type(value: str | None) -> str:
    value = "chat" if value is None else value  # an empty value is not one of the enum
    if value not in MODEL_TYPES:
        raise BadRequest(f"modelType: must be one of {', '.join(MODEL_TYPES)}")
    return value


def _check_local_model(provider: Provider, model_name: str, model_type: str) -> None:
    """A local chat model other than the shipped one is a GGUF file named by path."""
    if provider.protocol != "local" or model_type != "chat":
        return
    if ("/" in model_name or model_name.endswith(".gguf")) and not (model_name.endswith(".gguf") and os.path.isfile(model_name)):
        raise NotFound("modelName: a local model must be an existing .gguf file path")  # the machine's files decide


# ---- providers ------------------------------------------------------------


def create_custom_provider(
    caller: Caller, provider_id: str, name: str, base_url: str, api_key: str | None, protocol: str, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Create an enabled custom provider."""
    if not SLUG.match(provider_id):
        raise BadRequest("providerId: must match [a-z0-9][a-z0-9._-]*")
    protocol = check_protocol(protocol)
    base_url = check_base_url(protocol, base_url)
    options = merge_settings(protocol, None, settings or {})
    with database.atomic():
        if Provider.get_or_none(Provider.id == provider_id) is not None:
            raise Conflict(f"providerId: provider '{provider_id}' already exists")
        p = Provider.create(
            id=provider_id,
            name=name,
            protocol=protocol,
            base_url=base_url,
            api_key=api_key or None,
            options=options,
            enabled=True,
            builtin=False,
            sort_order=100,
        )
        audit.record(caller, "CREATE", "MODEL_PROVIDER", provider_id, f"custom provider {provider_id} ({protocol})")
    return provider_to_dict(p, [])


def delete_custom_provider(caller: Caller, provider_id: str) -> None:
    """Delete a custom provider and its models; built-in providers stay."""
    with database.atomic():
        p = get_provider(provider_id)
        if p.builtin:
            raise Conflict("A built-in provider cannot be deleted (disable it instead)")
        ModelConfig.delete().where(ModelConfig.provider == provider_id).execute()
        p.delete_instance()
        ensure_defaults()
        audit.record(caller, "DELETE", "MODEL_PROVIDER", provider_id, f"custom provider {provider_id}")


def set_provider_enabled(caller: Caller, provider_id: str, enabled: bool) -> dict[str, Any]:
    """Enable or disable a provider; disabling the default's provider moves the default elsewhere."""
    with database.atomic():
        p = get_provider(provider_id)
        p.enabled = enabled
        p.update_time = utcnow()
        p.save()
        ensure_defaults()
        audit.record(caller, "UPDATE", "MODEL_PROVIDER", provider_id, ("enabled " if enabled else "disabled ") + provider_id)
    return provider_info(provider_id)


def provider_info(provider_id: str) -> dict[str, Any]:
    p = get_provider(provider_id)
    models = _ordered_models().where(ModelConfig.provider == provider_id)
    return provider_to_dict(p, models)


def update_config(
    caller: Caller,
    provider_id: str,
    base_url: str | None,
    api_key: str | None,
    name: str | None,
    protocol: str | None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Change a provider's endpoint, key (empty string clears it), name, protocol (custom only) or Ollama settings.

    The body's shape is checked before (ProviderConfigUpdate states it); what the provider is decides the rest, so
    those refusals are 409s: a built-in's protocol, a baseUrl of the wrong kind for the protocol (a URL for remote
    ones, a path for `local`), Ollama settings for another protocol."""
    with database.atomic():
        p = get_provider(provider_id)
        changed: list[str] = []
        protocol = None if protocol is None else check_protocol(protocol)  # the documented enum first: a 400
        if protocol is not None and protocol != p.protocol:
            if p.builtin:
                raise Conflict("protocol: a built-in provider's protocol cannot change")
            p.protocol = protocol
            changed.append("protocol")
        if p.protocol != "ollama" and any(v not in (None, "") for v in (settings or {}).values()):
            raise Conflict(f"{next(k for k, v in (settings or {}).items() if v not in (None, ''))}: only a provider of the ollama protocol takes it")
        if base_url is not None:
            try:
                new_url = check_base_url(p.protocol, base_url)
            except BadRequest as exc:  # well formed (the pattern held), the wrong kind for this provider's protocol
                raise Conflict(f"{exc.msg} for a provider of the {p.protocol} protocol") from None
            if api_key is None and p.api_key and origin_changed(p.base_url, new_url):
                p.api_key = None  # a key given for one server is not sent to another (integrations.secret_origin)
                changed.append("apiKey dropped")
            p.base_url = new_url
            changed.append("baseUrl")
        elif "protocol" in changed:
            try:
                p.base_url = check_base_url(p.protocol, p.base_url)
            except BadRequest as exc:  # the stored URL, not the request, does not fit the new protocol
                raise Conflict(f"{exc.msg} for a provider of the {p.protocol} protocol (send one with the protocol)") from None
        if api_key is not None:
            p.api_key = api_key.strip() or None
            changed.append("apiKey")
        if name is not None:
            p.name = name
            changed.append("name")
        if settings or "protocol" in changed:  # a provider leaving the ollama protocol keeps no Ollama settings
            p.options = merge_settings(p.protocol, p.options if p.protocol == "ollama" else None, settings or {})
            changed.extend(k for k in SETTING_FIELDS if k in (settings or {}))
        p.update_time = utcnow()
        p.save()
        audit.record(caller, "UPDATE", "MODEL_PROVIDER", provider_id, "config: " + ", ".join(changed or ["nothing"]))
    return provider_info(provider_id)


def set_api_key(provider_id: str, api_key: str | None, enable: bool) -> None:
    """Store credentials obtained elsewhere (OAuth) as a provider's key; audited by the caller's service."""
    p = get_provider(provider_id)
    p.api_key = api_key or None
    if enable:
        p.enabled = True
    p.update_time = utcnow()
    p.save()
    ensure_defaults()


# ---- models ---------------------------------------------------------------


def add_model(
    caller: Caller,
    provider_id: str,
    model_name: str,
    display_name: str | None = None,
    model_type: str | None = None,
    modalities: str | None = None,
    max_input_tokens: int | None = None,
    enabled: bool = True,
    caps: list[str] | None = None,
) -> dict[str, Any]:
    """Add a model to a provider (the first usable model of a type becomes its default)."""
    model_type = check_model_type(model_type)
    stored_caps = capabilities.check(caps) or ""
    modalities = check_modalities(modalities)
    if not NOT_BLANK_RE.search(model_name):  # schemas: NOT_BLANK_PATTERN
        raise BadRequest("modelName: must not be blank")
    model_name = model_name.strip()
    with database.atomic():
        p = get_provider(provider_id)
        _check_local_model(p, model_name, model_type)
        exists = ModelConfig.get_or_none(
            (ModelConfig.provider == provider_id) & (ModelConfig.model_name == model_name) & (ModelConfig.model_type == model_type)
        )
        if exists is not None:
            raise Conflict(f"modelName: '{model_name}' already exists for provider {provider_id}")
        m = ModelConfig.create(
            provider=provider_id,
            model_name=model_name,
            display_name=display_name or model_name,
            model_type=model_type,
            modalities=modalities,
            max_input_tokens=max_input_tokens if max_input_tokens and max_input_tokens > 0 else None,
            enabled=enabled,
            capabilities=stored_caps,
        )
        ensure_defaults()
        audit.record(caller, "CREATE", "MODEL", m.id, f"{provider_id}/{model_name} ({model_type})")
    return model_to_dict(get_model_row(m.id))


def remove_model_by_name(caller: Caller, provider_id: str, model_name: str) -> None:
    """Remove a provider's model(s) named model_name."""
    with database.atomic():
        get_provider(provider_id)
        rows = list(ModelConfig.select().where((ModelConfig.provider == provider_id) & (ModelConfig.model_name == model_name)))
        if not rows and model_name.isascii() and model_name.isdigit() and len(model_name) <= 18:  # the original console names the model by its id
            rows = list(ModelConfig.select().where((ModelConfig.provider == provider_id) & (ModelConfig.id == int(model_name))))
        if not rows:
            raise NotFound("Model not found")
        for m in rows:
            m.delete_instance()
            audit.record(caller, "DELETE", "MODEL", m.id, f"{provider_id}/{model_name}")
        ensure_defaults()


def delete_model(caller: Caller, model_id: int) -> None:
    with database.atomic():
        m = get_model_row(model_id)
        m.delete_instance()
        ensure_defaults()
        audit.record(caller, "DELETE", "MODEL", model_id, f"{m.provider_id}/{m.model_name}")


def update_model(caller: Caller, model_id: int, changes: dict[str, Any]) -> dict[str, Any]:
    """Sparse update of displayName, modalities, maxInputTokens (<= 0 clears), enabled and capabilities."""
    with database.atomic():
        m = get_model_row(model_id)
        if changes.get("capabilities") is not None:
            m.capabilities = capabilities.check(changes["capabilities"]) or ""
        if "displayName" in changes and changes["displayName"] is not None:
            m.display_name = changes["displayName"]
        if "modalities" in changes and changes["modalities"] is not None:
            m.modalities = check_modalities(changes["modalities"])
        if "maxInputTokens" in changes:
            value = changes["maxInputTokens"]
            m.max_input_tokens = value if value is not None and value > 0 else None
        if "enabled" in changes and changes["enabled"] is not None:
            m.enabled = bool(changes["enabled"])
        m.save()
        ensure_defaults()
        audit.record(caller, "UPDATE", "MODEL", model_id, f"{m.provider_id}/{m.model_name}: " + ", ".join(sorted(changes)))
    return model_to_dict(get_model_row(model_id))


def set_default(caller: Caller, model_id: int) -> dict[str, Any]:
    """Make a model the default of its type (the global default chat model, or embedding model)."""
    with database.atomic():
        m = get_model_row(model_id)
        if not m.enabled or not m.provider.enabled:
            raise Conflict("Only an enabled model of an enabled provider can be the default")  # their state refuses it
        ModelConfig.update(is_default=False).where((ModelConfig.model_type == m.model_type) & (ModelConfig.id != m.id)).execute()
        ModelConfig.update(is_default=True).where(ModelConfig.id == m.id).execute()
        audit.record(caller, "UPDATE", "MODEL", model_id, f"default {m.model_type} model {m.provider_id}/{m.model_name}")
    return model_to_dict(get_model_row(model_id))


def set_default_embedding(caller: Caller, model_id: int) -> dict[str, Any]:
    m = get_model_row(model_id)
    if m.model_type != "embedding":
        raise Conflict("modelId: not an embedding model")  # what the named model is: a 409
    return set_default(caller, model_id)


def find_model(provider_id: str, model_name: str, model_type: str = "chat") -> ModelConfig | None:
    return ModelConfig.get_or_none(
        (ModelConfig.provider == provider_id) & (ModelConfig.model_name == model_name) & (ModelConfig.model_type == model_type)
    )


def model_name_of(provider_id: str, name_or_id: str | None) -> str | None:
    """A model name, given its name or (as the original console sends it) its id."""
    if name_or_id and is_integer_text(name_or_id) and len(name_or_id) <= 18:  # ASCII: isdigit() passes '²'
        row = ModelConfig.get_or_none((ModelConfig.id == int(name_or_id)) & (ModelConfig.provider == provider_id))
        if row is not None:
            return str(row.model_name)
    return name_or_id


def active() -> dict[str, Any]:
    """`{activeLlm: {provider, modelName}}` from the default chat model (null when none)."""
    m = default_model("chat")
    if m is None:
        return {"activeLlm": None}
    # providerId/model: the original console's names for the same two values
    return {"activeLlm": {"provider": m.provider_id, "modelName": m.model_name, "providerId": m.provider_id, "model": m.model_name}}


def set_active(caller: Caller, provider_id: str, model_name: str) -> dict[str, Any]:
    """Make (provider, modelName) the default chat model."""
    get_provider(provider_id)
    m = find_model(provider_id, model_name)
    if m is None and is_integer_text(model_name) and len(model_name) <= 18:  # the original console sends the model's id here
        m = ModelConfig.get_or_none((ModelConfig.id == int(model_name)) & (ModelConfig.provider == provider_id))
    if m is None:
        raise NotFound(f"Model not found: {provider_id}/{model_name}")
    set_default(caller, m.id)
    return active()


def set_context_window(caller: Caller, provider_id: str, model_id: int, max_input_tokens: int | None) -> dict[str, Any]:
    """Set a model's maxInputTokens; null or non-positive clears the override."""
    m = get_model_row(model_id)
    if m.provider_id != provider_id:
        raise NotFound("Model not found for this provider")
    return update_model(caller, model_id, {"maxInputTokens": max_input_tokens})


def models_of(provider_id: str) -> list[ModelConfig]:
    return list(ModelConfig.select().where(ModelConfig.provider == provider_id).order_by(ModelConfig.create_time, ModelConfig.id))
