"""A platform channel's settings: the adapter's fields checked, secret ones sealed at rest and never shown again."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from platform_server import sealed
from platform_server.features.channels.models import Channel
from platform_server.features.channels.platforms import ADAPTERS
from platform_server.features.channels.platforms.base import PlatformAdapter
from platform_server.ids import NOT_BLANK_RE
from platform_server.integrations import secret_origin
from platform_server.web.errors import BadRequest

SECRETS_CONTEXT = "channel.settings.secrets"  # AES-GCM context of the platform tokens under settings["secrets"]
HIDDEN = ("credentials", "secrets")  # never in an API answer
URL_KEYS = ("apiBaseUrl", "authBaseUrl")  # the hosts a platform's tokens are sent to


@runtime_checkable
class SettingsChecking(Protocol):
    def check_settings(self, given: dict[str, Any]) -> None:
        """Raise BadRequest for a given value the platform cannot use (a key of the wrong form...)."""
        ...


def _url(adapter: PlatformAdapter, settings: dict[str, Any], key: str) -> str | None:
    """The URL a setting names, its default when not set (what the tokens are sent to)."""
    if settings.get(key):
        return str(settings[key])
    default = adapter.default_base_url if key == "apiBaseUrl" else next((f.default for f in adapter.fields if f.key == key), None)
    return default


def merge(adapter: PlatformAdapter, given: dict[str, Any], existing: dict[str, Any] | None) -> dict[str, Any]:
    """The settings to store: given public values, secret fields sealed into `secrets` (kept when not given again)."""
    secret_keys = {f.key for f in adapter.fields if f.secret}
    stored = {k: v for k, v in given.items() if k not in HIDDEN and k not in secret_keys}
    if isinstance(adapter, SettingsChecking):
        adapter.check_settings(given)
    secrets = dict((existing or {}).get("secrets") or {})
    # A token was entered for one API server: pointing the channel at another origin drops the stored tokens
    # (integrations/secret_origin), so only tokens typed again in this request are sent to the new server.
    if existing is not None and any(secret_origin.origin_changed(_url(adapter, existing, k), _url(adapter, stored, k)) for k in URL_KEYS):
        secrets = {}
    for key in secret_keys:
        value = given.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not NOT_BLANK_RE.search(value) or len(value) > 4000:  # the document's rule
            raise BadRequest(f"settings.{key}: must be a non-blank string")
        secrets[key] = sealed.seal(value.strip(), SECRETS_CONTEXT)
    for url_key in URL_KEYS:
        base = stored.get(url_key)
        if base is not None and not (isinstance(base, str) and base.startswith(("http://", "https://")) and len(base) <= 2000):
            raise BadRequest(f"settings.{url_key}: must be an http(s) URL")
    for f in adapter.fields:
        have = secrets.get(f.key) if f.secret else stored.get(f.key)
        if f.required and not have:
            raise BadRequest(f"settings.{f.key}: required for {adapter.label} ({f.label})")
        if not f.secret and have is not None and not (isinstance(have, str) and len(have) <= 2000):
            raise BadRequest(f"settings.{f.key}: must be a string")
        if f.choices and have is not None and have not in f.choices:
            raise BadRequest(f"settings.{f.key}: must be one of {', '.join(f.choices)}")
    if secrets:
        stored["secrets"] = secrets
    return stored


def secret_of(channel: Channel, key: str) -> str:
    """A sealed platform token of the channel ("" when not set)."""
    value = ((channel.settings or {}).get("secrets") or {}).get(key)
    return sealed.unseal(value, SECRETS_CONTEXT) if isinstance(value, str) else ""


def setting_of(channel: Channel, key: str) -> str:
    value = (channel.settings or {}).get(key)
    return value if isinstance(value, str) else ""


def set_keys(channel: Channel) -> list[str]:
    """Which secret fields are set (shown instead of their values)."""
    return sorted(((channel.settings or {}).get("secrets") or {}).keys())


def describe(kind: str) -> dict[str, Any] | None:
    """What the console shows for a channel type: name, fields, help, whether a secret is generated."""
    adapter = ADAPTERS.get(kind)
    if adapter is None:
        return None
    fields = [f.to_dict() for f in adapter.fields]
    fields.append(
        {
            "key": "apiBaseUrl",
            "label": "API base URL",
            "secret": False,
            "required": False,
            "default": adapter.default_base_url,
            "help": "Only for a self-hosted gateway or a test server; the platform's public API otherwise.",
        }
    )
    return {
        "channelType": kind,
        "label": adapter.label,
        "help": adapter.help,
        "fields": fields,
        "secretLabel": adapter.secret_label,
        "webhookPath": f"/api/v1/channels/webhook/{kind}?channelId={{id}}",
    }
