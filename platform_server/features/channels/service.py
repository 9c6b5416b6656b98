"""Channels: CRUD, the signed webhook protocol (inbound and replies), health, webchat sessions."""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import peewee

from platform_server.db import database, iso, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.auth.models import User
from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.models import Channel, InboundMessage
from platform_server.features.channels.platforms import ADAPTERS, outbound
from platform_server.features.channels.platforms import settings as platform_settings
from platform_server.features.channels.platforms.base import Probing
from platform_server.features.workspaces.service import member_role
from platform_server.integrations import secret_origin
from platform_server.lazy import lazy_import
from platform_server.web.context import Caller, Principal
from platform_server.web.errors import BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")

IM_TYPES = ("im_a", "im_b", "im_c", "im_d", "im_e", "im_f", "im_g", "im_h")
TYPES = IM_TYPES + ("webchat",)
CREDENTIALS_CONTEXT = "channel.settings.credentials"  # AES-GCM context of the sealed pairing token


def public_settings(c: Channel) -> dict[str, Any]:
    """The channel's settings without the pairing credentials and platform tokens (write-only, like the secret)."""
    return {k: v for k, v in (c.settings or {}).items() if k not in platform_settings.HIDDEN}


def credentials_of(c: Channel) -> dict[str, Any]:
    creds = (c.settings or {}).get("credentials")
    return creds if isinstance(creds, dict) else {}


def to_dict(c: Channel) -> dict[str, Any]:
    creds = credentials_of(c)
    data = {
        "id": str(c.id),
        "workspaceId": str(c.workspace_id),
        "name": c.name,
        "channelType": c.channel_type,
        "agentId": str(c.agent_id),
        "enabled": c.enabled,
        "replyUrl": c.reply_url,
        "secretSet": bool(c.secret),
        "settings": public_settings(c),
        "paired": bool(creds.get("token")),
        "pairedAccountId": creds.get("accountId") or None,
        "health": c.health,
        "healthCheckedAt": iso(c.health_checked_at),
        "lastInboundAt": iso(c.last_inbound_at),
        "lastOutboundAt": iso(c.last_outbound_at),
        "lastError": c.last_error,
        "createTime": iso(c.create_time),
        "updateTime": iso(c.update_time),
        "webhookUrl": webhook_url(c),
    }
    if c.channel_type in ADAPTERS:
        data["secretSettingsSet"] = platform_settings.set_keys(c)
    if c.channel_type == "webchat":
        data["publicToken"] = c.public_token  # embedded in the public widget: not a secret
    return data


def webhook_url(c: Channel) -> str | None:
    """The path to paste into the platform (platforms call it without our ids, so the channel id is in the query)."""
    if c.channel_type in ADAPTERS:
        return f"/api/v1/channels/webhook/{c.channel_type}?channelId={c.id}"
    return f"/api/v1/channels/webhook/{c.channel_type}" if c.channel_type in IM_TYPES else None


def _get(caller: Caller, channel_id: int) -> Channel:
    row = Channel.get_or_none((Channel.id == channel_id) & (Channel.workspace_id == caller.workspace_id))
    if row is None:
        raise NotFound("Channel not found")
    return row


def _mine(caller: Caller) -> peewee.ModelSelect[Channel]:
    return Channel.select().where(Channel.workspace_id == caller.workspace_id).order_by(Channel.id)


def list_for(caller: Caller, channel_type: str | None = None) -> list[dict[str, Any]]:
    q = _mine(caller)
    if channel_type is not None:
        if channel_type not in TYPES:
            raise BadRequest(f"channelType: must be one of {', '.join(TYPES)}")
        q = q.where(Channel.channel_type == channel_type)
    return [to_dict(c) for c in q]


def get(caller: Caller, channel_id: int) -> dict[str, Any]:
    return to_dict(_get(caller, channel_id))


def check_draft(caller: Caller, draft: dict[str, Any]) -> dict[str, Any]:
    """Validate a channel config (agent of the workspace, type, reply URL); returns the cleaned fields."""

    kind = draft.get("channelType")
    if kind not in TYPES:
        raise BadRequest(f"channelType: must be one of {', '.join(TYPES)}")
    agent_id = draft.get("agentId")
    if (
        not str(agent_id or "").isdigit()
        or not Agent.select().where((Agent.id == int(str(agent_id))) & (Agent.workspace_id == caller.workspace_id)).exists()
    ):
        raise NotFound("agentId: no such agent in this workspace")
    reply_url = draft.get("replyUrl")
    if kind in ADAPTERS:  # answers go to the platform's own send API (settings.apiBaseUrl); a reply URL is only a pairing gateway
        if reply_url is not None and not (isinstance(reply_url, str) and reply_url.startswith(("http://", "https://"))):
            raise BadRequest("replyUrl: must be an http(s) URL")
        return {"channel_type": kind, "agent_id": int(str(agent_id)), "reply_url": reply_url or None}
    if kind in IM_TYPES and not (isinstance(reply_url, str) and reply_url.startswith(("http://", "https://"))):
        raise BadRequest("replyUrl: an http(s) URL where replies are posted is required for messaging channels")
    return {"channel_type": kind, "agent_id": int(str(agent_id)), "reply_url": reply_url if kind in IM_TYPES else None}


def create(caller: Caller, name: str, draft: dict[str, Any], secret: str | None, settings: dict[str, Any], enabled: bool) -> dict[str, Any]:
    """Create a channel; the generated secret is returned once when none was given."""
    fields = check_draft(caller, draft)
    check_settings(settings)
    secret_value = secret or secrets.token_urlsafe(32)
    row = Channel(
        workspace_id=caller.workspace_id,
        owner_user_id=caller.user_id,
        name=name,
        secret=secret_value,
        public_token=new_public_token(),
        settings=stored_settings(fields["channel_type"], settings, None),
        enabled=enabled,
        **fields,
    )
    audit.save(caller, "CREATE", "CHANNEL", row, f"{row.channel_type} channel {name}")
    data = to_dict(row)
    if secret is None:
        data["secret"] = secret_value  # shown once so the platform side can be configured
    return data


def stored_settings(kind: str, given: dict[str, Any], existing: dict[str, Any] | None) -> dict[str, Any]:
    """What is stored of the given settings: a platform's tokens sealed (kept when not given again), no pairing credentials."""
    adapter = ADAPTERS.get(kind)
    if adapter is not None:
        return platform_settings.merge(adapter, given, existing)
    return {k: v for k, v in given.items() if k not in platform_settings.HIDDEN}


def new_public_token() -> str:
    return "wc_" + secrets.token_urlsafe(24)


def toggle(caller: Caller, channel_id: int, enabled: bool | None) -> dict[str, Any]:
    """Enable or disable; None (no body, no `?enabled=`) flips it, as every other toggle of the API does."""
    if enabled is None:
        enabled = not _get(caller, channel_id).enabled
    return update(caller, channel_id, {"enabled": enabled})


def update(caller: Caller, channel_id: int, changes: dict[str, Any]) -> dict[str, Any]:
    """A sparse update. What the stored type refuses (a platform's settings, a reply URL, a token rotation) is a 409:
    an update names no type, so the document states these rules on the create only (schemas.ChannelCreate)."""
    row = _get(caller, channel_id)
    rotate = bool(changes.pop("rotatePublicToken", False))
    if rotate and row.channel_type != "webchat":
        raise Conflict("rotatePublicToken: only a webchat channel has a public token")
    if changes.get("settings") is not None:
        check_settings(changes["settings"])
    draft = {"channelType": row.channel_type, "agentId": changes.get("agentId", row.agent_id), "replyUrl": changes.get("replyUrl", row.reply_url)}
    with _type_decides():
        fields = check_draft(caller, draft)
        given = changes["settings"] if "settings" in changes else None
        settings = stored_settings(row.channel_type, given, row.settings) if given is not None else None
    with database.atomic():
        # The pairing token is sent as a bearer token to the reply URL: it stays only while the URL's
        # origin does (integrations.secret_origin); it cannot be typed again, so the channel is paired again.
        kept = secret_origin.kept(credentials_of(row), row.reply_url, fields["reply_url"])
        row.agent_id, row.reply_url = fields["agent_id"], fields["reply_url"]
        # Pairing credentials are never set through the API: the given settings replace the rest only.
        row.settings = settings if settings is not None else {k: v for k, v in (row.settings or {}).items() if k != "credentials"}
        if kept:
            row.settings["credentials"] = kept
        for key, attr in (("name", "name"), ("enabled", "enabled"), ("secret", "secret")):
            if key in changes:
                setattr(row, attr, changes[key])
        if rotate:  # a leaked widget token is replaced; pages embedding the old one get 404 from now on
            row.public_token = new_public_token()
        row.update_time = utcnow()
        row.save()
        audit.record(caller, "UPDATE", "CHANNEL", row.id, ", ".join(sorted([*changes, *(["publicToken rotated"] if rotate else [])])))
    return to_dict(row)


@contextlib.contextmanager
def _type_decides() -> Iterator[None]:
    """A 400 of the stored channel type's rules as the 409 it is for an update (the body cannot know the type)."""
    try:
        yield
    except BadRequest as exc:
        raise Conflict(exc.msg) from exc


def delete(caller: Caller, channel_id: int) -> None:
    row = _get(caller, channel_id)
    with database.atomic():
        row.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "CHANNEL", channel_id, row.name)


# ---- outbound ---------------------------------------------------------------------------


async def check_health(config: Any, channel: Channel) -> dict[str, Any]:
    """A messaging platform's own credential check (webchat: healthy when enabled)."""
    started = time.monotonic()
    adapter = ADAPTERS.get(channel.channel_type)
    if channel.channel_type == "webchat":
        ok, message = channel.enabled, "webchat is served by this server" if channel.enabled else "disabled"
    else:  # the platform's own API answers for the credentials
        assert adapter is not None  # (every channel type but webchat has one)
        try:
            async with outbound.session_for(config.web_fetch_allow_hosts, adapter, channel) as session:
                message = await adapter.probe(session, channel) if isinstance(adapter, Probing) else "API base URL allowed"
            ok = True
        except ChannelError as exc:
            ok, message = False, exc.msg
    Channel.update(health="healthy" if ok else "unhealthy", health_checked_at=utcnow(), last_error=None if ok else message).where(
        Channel.id == channel.id
    ).execute()
    return {
        "channelId": str(channel.id),
        "healthy": ok,
        "message": message,
        "latencyMs": int((time.monotonic() - started) * 1000),
        # the original console's names: status UP or DOWN (it shows UP as connected), detail
        "status": "UP" if ok else "DOWN",
        "detail": message,
    }


# ---- inbound ----------------------------------------------------------------------------


def inbound_channel(channel_type: str, channel_id: int) -> Channel | None:
    """The channel, or None (the caller then fails the signature check like any unsigned call)."""
    return Channel.get_or_none((Channel.id == channel_id) & (Channel.channel_type == channel_type))


def first_sight(channel: Channel, message_id: str, body: bytes = b"") -> bool:
    """Record a message id (a hash of the signed body when there is none); False when already seen (a retry)."""
    if not message_id:
        message_id = "sha256:" + hashlib.sha256(body).hexdigest()
    try:
        with database.atomic():
            InboundMessage.create(channel=channel.id, message_id=message_id)
        return True
    except peewee.IntegrityError:
        return False


def may_approve(channel: Channel, sender_id: str) -> bool:
    """Whether this sender's `/approve` or `/deny` decides a pending call (settings.approverIds; none by default)."""
    approvers = (channel.settings or {}).get("approverIds") or []
    return isinstance(approvers, list) and sender_id in [str(a) for a in approvers]


def check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """`approverIds`, when given, is a list of sender ids (strings)."""
    approvers = settings.get("approverIds")
    if approvers is not None and (
        not isinstance(approvers, list) or len(approvers) > 100 or not all(isinstance(a, str) and 0 < len(a) <= 128 for a in approvers)
    ):
        raise BadRequest("settings.approverIds: must be a list of at most 100 sender ids")
    return settings


def owner_caller(channel: Channel) -> Caller:
    """The channel owner acting in the channel's workspace (their current role)."""

    user = User.get_or_none((User.id == channel.owner_user_id) & (User.deleted == False))  # noqa: E712
    if user is None or not user.enabled:
        raise ChannelError("The channel owner can no longer act")
    role = "owner" if user.role == "admin" else member_role(user.id, channel.workspace_id)
    if role is None:
        raise ChannelError("The channel owner lost access to the workspace")
    return Caller(Principal(user.id, user.username, user.role, "channel"), channel.workspace_id, role)


def status(channels: list[Channel]) -> dict[str, Any]:
    by_type: dict[str, dict[str, int]] = {}
    for c in channels:
        entry = by_type.setdefault(c.channel_type, {"total": 0, "enabled": 0, "healthy": 0, "unhealthy": 0})
        entry["total"] += 1
        entry["enabled"] += int(c.enabled)
        entry["healthy"] += int(c.health == "healthy")
        entry["unhealthy"] += int(c.health == "unhealthy")
    return {
        "channels": len(channels),
        "byType": by_type,
        "lastInboundAt": iso(max((c.last_inbound_at for c in channels if c.last_inbound_at), default=None)),
        "lastOutboundAt": iso(max((c.last_outbound_at for c in channels if c.last_outbound_at), default=None)),
    }
