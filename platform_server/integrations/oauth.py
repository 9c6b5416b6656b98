"""OAuth 2.0 client calls: token endpoint grants (code + PKCE, refresh, device code), device authorization, revoke."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def _timeout() -> aiohttp.ClientTimeout:
    """The token endpoint's time limits (built per call: aiohttp is imported on first use)."""
    return aiohttp.ClientTimeout(total=20, connect=10)


class OAuthError(Exception):
    """An OAuth endpoint answered an error (`error` is the RFC 6749 code when there is one)."""

    def __init__(self, error: str, description: str = "", status: int | None = None) -> None:
        super().__init__(f"{error}: {description}" if description else error)
        self.error = error
        self.description = description
        self.status = status


@dataclass
class TokenSet:
    access_token: str
    refresh_token: str | None
    expires_at: float | None  # epoch seconds
    scope: str | None
    token_type: str


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


async def post_form(url: str, data: dict[str, str]) -> dict[str, Any]:
    """POST application/x-www-form-urlencoded and return the JSON answer, or raise OAuthError."""
    try:
        async with aiohttp.ClientSession(timeout=_timeout()) as session:
            async with session.post(url, data=data, headers={"Accept": "application/json"}) as resp:
                raw = await resp.content.read(1_000_000)
                status = resp.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise OAuthError("unreachable", f"{url}: {type(exc).__name__} {exc}".strip()) from None
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    if status >= 400 or "error" in body:
        raise OAuthError(str(body.get("error") or f"http_{status}"), str(body.get("error_description") or ""), status)
    return body


def token_set(body: dict[str, Any], previous_refresh: str | None = None) -> TokenSet:
    """A TokenSet from a token endpoint answer (a refresh answer may omit the refresh token)."""
    access = body.get("access_token")
    if not isinstance(access, str) or not access:
        raise OAuthError("invalid_response", "no access_token in the token response")
    expires_in = body.get("expires_in")
    expires_at = time.time() + float(expires_in) if isinstance(expires_in, (int, float)) else None
    refresh = body.get("refresh_token") if isinstance(body.get("refresh_token"), str) else previous_refresh
    return TokenSet(access, refresh, expires_at, body.get("scope"), str(body.get("token_type") or "Bearer"))


async def exchange_code(token_url: str, client_id: str, code: str, verifier: str, redirect_uri: str) -> TokenSet:
    body = await post_form(
        token_url,
        {
            "grant_type": "authorization_code",
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
            "client_id": client_id,
        },
    )
    return token_set(body)


async def refresh(token_url: str, client_id: str, refresh_token: str) -> TokenSet:
    body = await post_form(token_url, {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": client_id})
    return token_set(body, refresh_token)


async def device_authorize(device_url: str, client_id: str, scope: str) -> dict[str, Any]:
    """RFC 8628 section 3.1: device_code, user_code, verification_uri, expires_in, interval."""
    body = await post_form(device_url, {"client_id": client_id, "scope": scope})
    for key in ("device_code", "user_code", "verification_uri"):
        if not isinstance(body.get(key), str):
            raise OAuthError("invalid_response", f"no {key} in the device authorization response")
    return body


async def device_token(token_url: str, client_id: str, device_code: str) -> TokenSet:
    """One poll (RFC 8628 section 3.4); raises OAuthError authorization_pending / slow_down / ... until approved."""
    body = await post_form(token_url, {"grant_type": DEVICE_GRANT, "device_code": device_code, "client_id": client_id})
    return token_set(body)


async def revoke(revoke_url: str, client_id: str, token: str, hint: str) -> None:
    """RFC 7009 token revocation."""
    await post_form(revoke_url, {"token": token, "token_type_hint": hint, "client_id": client_id})
