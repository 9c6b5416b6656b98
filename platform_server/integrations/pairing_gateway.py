"""The generic channel pairing protocol, spoken to a channel's gateway (see README "Channel pairing").

    POST {gateway}/pairing/sessions       {channelType, channelId, purpose}
         -> {sessionId, qrContent, expiresIn}
    GET  {gateway}/pairing/sessions/{id}
         -> {status: waiting|scanned|confirmed|expired|failed, credentials?: {accountId, token}, error?}

Every call is SSRF-guarded and pinned to the vetted address.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from platform_server.integrations import net_guard
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")

STATUSES = ("waiting", "scanned", "confirmed", "expired", "failed")


def _timeout() -> aiohttp.ClientTimeout:
    """A gateway call's time limits (built per call: aiohttp is imported on first use)."""
    return aiohttp.ClientTimeout(total=15, sock_connect=5)


class GatewayError(Exception):
    """The gateway could not be reached or answered outside the protocol."""


async def _call(method: str, url: str, allow_hosts: tuple[str, ...], body: dict[str, Any] | None) -> dict[str, Any]:
    try:
        target = await net_guard.vet_url(url, allow_hosts)
    except net_guard.BlockedUrl as exc:
        raise GatewayError(str(exc))
    connector = net_guard.pinned_connector(target)
    try:
        async with aiohttp.ClientSession(connector=connector, timeout=_timeout()) as s:
            async with s.request(method, target.url, json=body, allow_redirects=False) as r:
                if r.status >= 400:
                    raise GatewayError(f"gateway answered HTTP {r.status}")
                data = await r.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        raise GatewayError(f"gateway unreachable or not JSON: {type(exc).__name__}")
    if not isinstance(data, dict):
        raise GatewayError("gateway answer is not a JSON object")
    return data


async def open_session(gateway_url: str, allow_hosts: tuple[str, ...], channel_type: str, channel_id: str, purpose: str) -> dict[str, Any]:
    """Ask the gateway for a pairing session: `{sessionId, qrContent, expiresIn}`."""
    data = await _call(
        "POST", gateway_url.rstrip("/") + "/pairing/sessions", allow_hosts, {"channelType": channel_type, "channelId": channel_id, "purpose": purpose}
    )
    session_id, content, expires = data.get("sessionId"), data.get("qrContent"), data.get("expiresIn")
    if not isinstance(session_id, str) or not session_id or len(session_id) > 200:
        raise GatewayError("gateway answer has no sessionId")
    if not isinstance(content, str) or not 0 < len(content) <= 2000:
        raise GatewayError("gateway answer has no qrContent")
    if not isinstance(expires, (int, float)) or isinstance(expires, bool) or not 0 < expires <= 3600:
        raise GatewayError("gateway answer has no expiresIn (1-3600 s)")
    return {"sessionId": session_id, "qrContent": content, "expiresIn": float(expires)}


async def poll_session(gateway_url: str, allow_hosts: tuple[str, ...], session_id: str) -> dict[str, Any]:
    """The gateway's view of a session: `{status, credentials?, error?}`."""
    data = await _call("GET", gateway_url.rstrip("/") + "/pairing/sessions/" + quote(session_id, safe=""), allow_hosts, None)
    status = data.get("status")
    if status not in STATUSES:
        raise GatewayError(f"gateway status must be one of {', '.join(STATUSES)}")
    credentials = data.get("credentials")
    if status == "confirmed" and not (isinstance(credentials, dict) and isinstance(credentials.get("token"), str)):
        raise GatewayError("a confirmed session must carry credentials.token")
    return {"status": status, "credentials": credentials if status == "confirmed" else None, "error": str(data.get("error") or "")[:300] or None}
