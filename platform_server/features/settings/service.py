"""System settings with defaults, the public language, the sidecar config and feature flags."""

from __future__ import annotations

import copy
import functools
import zoneinfo
from typing import Any, Iterable

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.settings.models import FeatureFlag, Setting
from platform_server.integrations import outbound_proxy
from platform_server.memo import memo_on
from platform_server.platform import Flag
from platform_server.serialize import Fields, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, NotFound

LANGUAGES = ("en-US", "zh-CN")
DEFAULT_SIDECAR = {"enabled": False, "provider": None, "modelName": None}

# Media settings: which provider (an OpenAI-compatible one) serves speech and images.
DEFAULT_SPEECH = {"provider": None, "sttModel": "whisper-1", "ttsModel": "tts-1", "voice": "alloy"}
DEFAULT_IMAGES = {"provider": None, "model": "gpt-image-1", "size": "1024x1024"}
# Job-style generation providers of the video_generate, music_generate and model3d_generate tools.
DEFAULT_MEDIA_JOBS = {
    "video": {"provider": None, "model": "video-1"},
    "music": {"provider": None, "model": "music-1"},
    "model3d": {"provider": None, "model": "model3d-1"},
}

DEFAULTS: dict[str, Any] = {
    "language": "en-US",
    "siteName": "Agent Platform",
    "timezone": "UTC",
    "welcomeMessage": "",
    "sidecar": DEFAULT_SIDECAR,
    "speech": DEFAULT_SPEECH,
    "images": DEFAULT_IMAGES,
    **DEFAULT_MEDIA_JOBS,
}

# Display preferences the original console stores here and reads back at start (its chat view
# honours them); kept as plain booleans.
CONSOLE_PREFERENCES: dict[str, bool] = {"streamEnabled": True, "debugMode": False, "showThinking": True, "thinkingFull": True}
DEFAULTS.update(CONSOLE_PREFERENCES)

# The original console's flat names for values kept here in nested objects: flat key -> (setting, field).
FLAT_ALIASES: dict[str, tuple[str, str]] = {
    "ttsDefaultVoice": ("speech", "voice"),
    "sttOpenAiCompatProviderId": ("speech", "provider"),
    "sttOpenAiCompatModel": ("speech", "sttModel"),
    "imageProvider": ("images", "provider"),
}

# Keys the original console's settings pages send for features this server does not have
# (web search, music, video, 3D, vendor keys) or that it answers as derived facts: accepted and
# ignored, never stored (README, API notes). Any other unknown key is still a 400.
CONSOLE_IGNORED = frozenset(
    {
        "workspaceStorageRoot",
        "searchEnabled",
        "searchProvider",
        "searchFallbackEnabled",
        "serperBaseUrl",
        "serperApiKey",
        "serperApiKeyMasked",
        "tavilyBaseUrl",
        "tavilyApiKey",
        "tavilyApiKeyMasked",
        "duckduckgoEnabled",
        "searxngBaseUrl",
        "weixinoaAppId",
        "weixinoaAppSecret",
        "weixinoaAppSecretMasked",
        "ttsEnabled",
        "ttsProvider",
        "ttsFallbackEnabled",
        "ttsAutoMode",
        "ttsSpeed",
        "sttEnabled",
        "sttProvider",
        "sttFallbackEnabled",
        "imageEnabled",
        "imageFallbackEnabled",
        "zhipuApiKey",
        "zhipuApiKeyMasked",
        "zhipuBaseUrl",
        "falApiKey",
        "falApiKeyMasked",
        "videoEnabled",
        "videoProvider",
        "videoFallbackEnabled",
        "klingAccessKey",
        "klingAccessKeyMasked",
        "klingSecretKey",
        "klingSecretKeyMasked",
        "runwayApiKey",
        "runwayApiKeyMasked",
        "minimaxApiKey",
        "minimaxApiKeyMasked",
        "minimaxRegion",
        "musicEnabled",
        "musicProvider",
        "musicFallbackEnabled",
        "model3dEnabled",
        "model3dProvider",
        "model3dFallbackEnabled",
    }
)

# The global outbound proxy (integrations/outbound_proxy.py), kept apart from the settings `GET /settings` lists.
PROXY_KEY = "outboundProxy"
DEFAULT_PROXY = {"enabled": False, "url": "", "nonProxyHosts": ""}

# Each flag gates its feature everywhere: the routes answer 403 `Feature <key> is disabled`
# (routing.gated), its background loops skip, its agent tools are not offered (ToolDefinition.feature).


@functools.cache
def time_zones() -> frozenset[str]:
    """The IANA time zones this machine knows."""
    return frozenset(zoneinfo.available_timezones())


def _validate(key: str, value: Any) -> Any:
    if key not in DEFAULTS:
        raise BadRequest(f"{key}: unknown setting")
    if key == "language" and value not in LANGUAGES:
        raise BadRequest(f"language: must be one of {', '.join(LANGUAGES)}")
    if key == "timezone" and value not in time_zones():  # the document's enum (a key ZoneInfo would also load)
        raise BadRequest("timezone: unknown IANA time zone")
    if key in CONSOLE_PREFERENCES and not isinstance(value, bool):
        raise BadRequest(f"{key}: must be a boolean")
    if key in ("siteName", "welcomeMessage") and (not isinstance(value, str) or len(value) > 2000):
        raise BadRequest(f"{key}: must be a string of at most 2000 characters")
    if key == "sidecar":
        return _validate_sidecar(value)
    if key in ("speech", "images"):
        return _validate_strings(key, value, DEFAULT_SPEECH if key == "speech" else DEFAULT_IMAGES)
    if key in DEFAULT_MEDIA_JOBS:
        return _validate_strings(key, value, DEFAULT_MEDIA_JOBS[key])
    return value


def _validate_strings(key: str, value: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """An object whose fields are all optional short strings (null clears to the default)."""
    if not isinstance(value, dict) or set(value) - set(defaults):
        raise BadRequest(f"{key}: must be an object with {', '.join(defaults)}")
    clean = dict(defaults)
    for name, item in value.items():
        if item is not None and (not isinstance(item, str) or not 0 < len(item) <= 200):
            raise BadRequest(f"{key}.{name}: must be a string of 1-200 characters")
        clean[name] = item if item is not None else defaults[name]
    return clean


def _validate_sidecar(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) - set(DEFAULT_SIDECAR):
        raise BadRequest("sidecar: must be an object with enabled, provider, modelName")
    clean = {**DEFAULT_SIDECAR, **value}
    if not isinstance(clean["enabled"], bool):
        raise BadRequest("sidecar.enabled: must be a boolean")
    for name in ("provider", "modelName"):
        if clean[name] is not None and (not isinstance(clean[name], str) or len(clean[name]) > 200):
            raise BadRequest(f"sidecar.{name}: must be a string of at most 200 characters")
    if clean["enabled"] and not (clean["provider"] and clean["modelName"]):
        raise BadRequest("provider: required with modelName when the sidecar is enabled")
    return clean


def seed_config_defaults(language: str, timezone: str) -> None:
    """A fresh install takes its language and time zone from the configuration (checked at start)."""
    try:
        clean = {"language": _validate("language", language), "timezone": _validate("timezone", timezone)}
    except BadRequest as exc:
        raise SystemExit(f"invalid configuration: {exc.msg}")
    for key, value in clean.items():
        Setting.insert(key=key, value=value, update_time=utcnow()).on_conflict_ignore().execute()


def get_all() -> dict[str, Any]:
    """Every setting, plus the original console's flat names for the same values (derived, read-only)."""
    values = dict(DEFAULTS)
    for row in Setting.select():
        if row.key != PROXY_KEY:  # its own global-admin route: the URL may hold the proxy's password
            values[row.key] = row.value
    for flat, (key, field) in FLAT_ALIASES.items():
        values[flat] = (values.get(key) or {}).get(field)
    speech = bool((values.get("speech") or {}).get("provider"))
    values.update(
        ttsEnabled=speech,
        sttEnabled=speech,
        imageEnabled=bool((values.get("images") or {}).get("provider")),
        searchEnabled=False,
        searchProvider=None,
    )
    return values


def _fold_console_keys(changes: dict[str, Any]) -> dict[str, Any]:
    """Translate the original console's flat names into nested settings; drop its ignored keys."""
    folded: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in changes.items():
        if key in FLAT_ALIASES:
            setting, field = FLAT_ALIASES[key]
            nested.setdefault(setting, {})[field] = value or None
        elif key not in CONSOLE_IGNORED:
            folded[key] = value
    for setting, fields in nested.items():
        current = folded.get(setting)
        base: dict[str, Any] = current if isinstance(current, dict) else dict(get(setting) or {})
        folded[setting] = {**base, **fields}
    return folded


def get(key: str) -> Any:
    value = _stored(key)
    return copy.deepcopy(value) if isinstance(value, (dict, list)) else value  # the cached value stays as stored


@memo_on(Setting)
def _stored(key: str) -> Any:
    row = Setting.get_or_none(Setting.key == key)
    return DEFAULTS.get(key) if row is None else row.value


def save(caller: Caller | None, changes: dict[str, Any]) -> dict[str, Any]:
    """Save some settings (validated first: nothing is half-written)."""
    clean = {k: _validate(k, v) for k, v in _fold_console_keys(changes).items()}
    with database.atomic():
        for key, value in clean.items():
            Setting.insert(key=key, value=value, update_time=utcnow()).on_conflict(  # an upsert both engines speak (REPLACE is SQLite's)
                conflict_target=[Setting.key], preserve=[Setting.value, Setting.update_time]
            ).execute()
        if clean:
            audit.record(caller, "UPDATE", "SETTINGS", None, "settings: " + ", ".join(sorted(clean)))
    return get_all()


def get_proxy() -> dict[str, Any]:
    """`{enabled, url, nonProxyHosts}` (cached until it changes: model calls read it per request)."""
    value = _stored(PROXY_KEY)
    return dict(value) if isinstance(value, dict) else dict(DEFAULT_PROXY)


def save_proxy(caller: Caller, enabled: bool, url: str, non_proxy_hosts: str) -> dict[str, Any]:
    """Set the outbound proxy; an enabled one needs a valid HTTP(S) URL (a disabled one keeps what was typed)."""
    url = url.strip()
    try:
        if enabled or url:
            url = outbound_proxy.check_url(url)
    except ValueError as exc:
        raise BadRequest(f"url: {exc}")
    try:
        outbound_proxy.patterns(non_proxy_hosts)
    except ValueError as exc:
        raise BadRequest(f"nonProxyHosts: {exc}")
    value = {"enabled": enabled, "url": url, "nonProxyHosts": non_proxy_hosts.strip()}
    with database.atomic():
        Setting.insert(key=PROXY_KEY, value=value, update_time=utcnow()).on_conflict_replace().execute()
        audit.record(caller, "UPDATE", "SETTINGS", None, f"outbound proxy {'on' if enabled else 'off'}")
    return value


def save_sidecar(caller: Caller, enabled: bool, provider: str | None, model_name: str | None) -> dict[str, Any]:
    value = {"enabled": enabled, "provider": provider, "modelName": model_name}
    return save(caller, {"sidecar": value})["sidecar"]


def seed_flags(flags: Iterable[Flag]) -> None:
    """Insert the flags the areas declare (their `FLAGS`) with their defaults; a stored value is kept."""
    for flag_ in flags:
        FeatureFlag.insert(key=flag_.key, enabled=flag_.default, description=flag_.description).on_conflict_ignore().execute()


# flagKey: the original console's name for key
flag_to_dict = Fields(
    key="key",
    enabled="enabled",
    description="description",
    updateTime=when("update_time"),
    flagKey="key",
)


def list_flags() -> list[dict[str, Any]]:
    return [flag_to_dict(f) for f in FeatureFlag.select().order_by(FeatureFlag.key)]


@memo_on(FeatureFlag)
def flag_enabled(key: str) -> bool:
    """Whether a feature flag is on (an unknown key is off)."""
    row = FeatureFlag.get_or_none(FeatureFlag.key == key)
    return bool(row and row.enabled)


is_enabled = flag_enabled


def set_flag(caller: Caller, key: str, enabled: bool | None) -> dict[str, Any]:
    """Turn a flag on or off; no value flips it (as every toggle: the body is optional)."""
    with database.atomic():
        flag = FeatureFlag.get_or_none(FeatureFlag.key == key)
        if flag is None:
            raise NotFound("Feature flag not found")
        enabled = (not flag.enabled) if enabled is None else enabled
        flag.enabled = enabled
        flag.update_time = utcnow()
        flag.save()
        audit.record(caller, "UPDATE", "FEATURE_FLAG", key, f"{key} -> {enabled}")
    return flag_to_dict(flag)
