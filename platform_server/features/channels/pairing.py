"""Channel pairing: a QR code from the channel's gateway, then waiting -> scanned -> confirmed (credentials
written into the channel) or expired / failed. The gateway protocol is in integrations/pairing_gateway.py."""

from __future__ import annotations

import base64
import datetime as dt
import io
import secrets
from typing import TYPE_CHECKING, Any

from platform_server import sealed
from platform_server.blocking import run_blocking
from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.channels import service
from platform_server.features.channels.errors import ChannelError
from platform_server.features.channels.models import Channel, PairingSession
from platform_server.features.channels.platforms import ADAPTERS
from platform_server.features.channels.platforms.weixin import WeixinAdapter
from platform_server.integrations import pairing_gateway
from platform_server.integrations.pairing_gateway import GatewayError
from platform_server.lazy import lazy_import
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, NotFound

if TYPE_CHECKING:
    import segno
else:
    segno = lazy_import("segno")

TERMINAL = ("confirmed", "expired", "failed")


def qr_png_data_url(content: str) -> str:
    """A PNG data URL of a QR code holding `content`."""
    buf = io.BytesIO()
    segno.make(content, error="m").save(buf, kind="png", scale=6, border=4)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _gateway(channel: Channel) -> str:
    url = (channel.settings or {}).get("gatewayUrl")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise BadRequest("settings.gatewayUrl: the channel needs an http(s) gateway URL for pairing")
    return url


def _channel(caller: Caller, channel_type: str, channel_id: int | None) -> Channel:
    if channel_type not in service.IM_TYPES:
        raise BadRequest(f"channelType: must be one of {', '.join(service.IM_TYPES)}")
    if channel_id is None:
        raise BadRequest("channelId: must not be null")
    row = Channel.get_or_none((Channel.id == channel_id) & (Channel.workspace_id == caller.workspace_id))
    if row is None:
        raise NotFound("Channel not found")
    if row.channel_type != channel_type:
        raise BadRequest(f"channelId: the channel is of type {row.channel_type}, not {channel_type}")
    return row


def _to_dict(row: PairingSession, **extra: Any) -> dict[str, Any]:
    return {
        "sessionId": row.session_id,
        "channelId": str(row.channel_id),
        "purpose": row.purpose,
        "status": row.status,
        "error": row.error,
        "expiresAt": iso(row.expires_at),
        **extra,
    }


async def begin(caller: Caller, allow_hosts: tuple[str, ...], channel_type: str, channel_id: int | None, purpose: str) -> dict[str, Any]:
    """Open a pairing session at the channel's gateway and answer its QR code."""
    channel = _channel(caller, channel_type, channel_id)
    try:
        if isinstance(weixin := ADAPTERS.get(channel.channel_type), WeixinAdapter):  # WeChat: its own iLink QR login
            opened = await weixin.login_open(allow_hosts, channel)
        else:
            opened = await pairing_gateway.open_session(_gateway(channel), allow_hosts, channel_type, str(channel.id), purpose)
    except GatewayError as exc:
        raise ChannelError(f"pairing gateway: {exc}")
    image = await run_blocking(qr_png_data_url, opened["qrContent"])
    with database.atomic():
        row = PairingSession.create(
            session_id="ps_" + secrets.token_urlsafe(18),
            workspace_id=caller.workspace_id,
            channel=channel.id,
            purpose=purpose,
            gateway_session=opened["sessionId"],
            expires_at=utcnow() + dt.timedelta(seconds=opened["expiresIn"]),
        )
        audit.record(caller, "CREATE", "CHANNEL_PAIRING", channel.id, f"{purpose} pairing of {channel.name}")
    return _to_dict(row, qrcodeImage=image)


async def status(caller: Caller, allow_hosts: tuple[str, ...], channel_type: str, session_id: str | None, purpose: str) -> dict[str, Any]:
    """Where the pairing stands; a confirmation writes the gateway's credentials into the channel."""
    if not session_id:
        raise BadRequest("sessionId: must not be null")
    row = PairingSession.get_or_none(
        (PairingSession.session_id == session_id) & (PairingSession.workspace_id == caller.workspace_id) & (PairingSession.purpose == purpose)
    )
    if row is None or row.channel.channel_type != channel_type:
        raise NotFound("Pairing session not found")
    if row.status in TERMINAL:
        return _to_dict(row)
    if row.expires_at <= utcnow():
        return _to_dict(_set(row, "expired", "the QR code expired before it was confirmed"))
    try:
        if isinstance(weixin := ADAPTERS.get(row.channel.channel_type), WeixinAdapter):
            seen = await weixin.login_poll(allow_hosts, row.channel, row.gateway_session)
        else:
            seen = await pairing_gateway.poll_session(_gateway(row.channel), allow_hosts, row.gateway_session)
    except GatewayError as exc:
        raise ChannelError(f"pairing gateway: {exc}")
    if seen["status"] == "confirmed":
        _confirm(caller, row, seen["credentials"])
    elif seen["status"] != row.status:
        _set(row, seen["status"], seen["error"])
    return _to_dict(row)


def _set(row: PairingSession, status: str, error: str | None) -> PairingSession:
    row.status, row.error, row.update_time = status, error, utcnow()
    row.save()
    return row


def _confirm(caller: Caller, row: PairingSession, credentials: dict[str, Any]) -> None:
    with database.atomic():
        channel = Channel.get_by_id(row.channel_id)
        settings = dict(channel.settings or {})
        settings["credentials"] = {
            "accountId": str(credentials.get("accountId") or "")[:200],
            "token": sealed.seal(str(credentials["token"])[:2000], service.CREDENTIALS_CONTEXT),
            "pairedAt": iso(utcnow()),
        }
        channel.settings, channel.update_time = settings, utcnow()
        channel.save()
        _set(row, "confirmed", None)
        audit.record(caller, "UPDATE", "CHANNEL", channel.id, f"paired through {row.purpose}")
