"""vendor_b: authorization code + PKCE (LOCAL redirect listener or MANUAL_PASTE), device flow, refresh, revoke."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import socket
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.ioloop import IOLoop

from platform_server.config import Config
from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.models import service as models
from platform_server.features.oauth.models import OAuthCredential
from platform_server.features.oauth.vendor_a import iso_ts
from platform_server.integrations import oauth
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound

log = logging.getLogger(__name__)

VENDOR = "vendor_b"
SESSION_TTL_S = 600.0
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "ip6-localhost"})
CALLBACK_PATH = "/auth/callback"


@dataclass
class AuthSession:
    verifier: str
    redirect_uri: str
    mode: str
    expires_at: float
    caller: Caller | None


@dataclass
class DeviceSession:
    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_at: float
    interval: float
    next_poll_at: float
    caller: Caller | None


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def _to_epoch(value: dt.datetime | None) -> float | None:
    return None if value is None else value.replace(tzinfo=dt.timezone.utc).timestamp()


def _from_epoch(ts: float | None) -> dt.datetime | None:
    return None if ts is None else dt.datetime.fromtimestamp(ts, dt.timezone.utc).replace(tzinfo=None)


class CallbackHandler(tornado.web.RequestHandler):
    """The LOCAL-mode redirect target on the loopback listener: finishes the code exchange."""

    def initialize(self, owner: "VendorB") -> None:
        self.owner = owner

    async def get(self) -> None:
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        try:
            await self.owner.complete(self.get_query_argument("code", ""), self.get_query_argument("state", ""), self.get_query_argument("error", ""))
        except BadRequest as exc:
            self.set_status(400)
            self.finish(f"Sign-in failed: {exc.msg}\n")
            return
        self.finish("Signed in. You can close this window.\n")


class VendorB:
    """OAuth state of vendor_b: pending sessions in memory, the tokens in the database."""

    def __init__(self, config: Config, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.auth: dict[str, AuthSession] = {}
        self.devices: dict[str, DeviceSession] = {}
        self.last_error: str | None = None
        self.last_refresh: float | None = None
        self._listener: tornado.httpserver.HTTPServer | None = None
        self._listener_timer: object | None = None

    # ---- configuration ----------------------------------------------------

    def _need(self, *names: str) -> None:
        missing = [n for n in names if not getattr(self.config, n)]
        if missing:
            raise Conflict(f"vendor_b OAuth is not configured (set {', '.join(missing)})")

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.config.oauth_vendor_b_callback_port}{CALLBACK_PATH}"

    def mode(self) -> str:
        """LOCAL when the server is bound to a loopback host (the browser runs here), else MANUAL_PASTE."""
        forced = self.config.oauth_vendor_b_mode.upper()
        if forced in ("LOCAL", "MANUAL_PASTE"):
            return forced
        return "LOCAL" if is_loopback(self.config.host) else "MANUAL_PASTE"

    def _prune(self) -> None:
        now = self.clock()
        for store in (self.auth, self.devices):
            for key in [k for k, s in store.items() if s.expires_at <= now]:
                del store[key]

    # ---- authorization code + PKCE -----------------------------------------

    def authorize(self, caller: Caller) -> dict[str, Any]:
        """A fresh authorization URL; LOCAL mode also starts the loopback redirect listener."""
        self._need("oauth_vendor_b_authorize_url", "oauth_vendor_b_token_url", "oauth_vendor_b_client_id")
        self._prune()
        mode = self.mode()
        if mode == "LOCAL" and not self._start_listener():
            mode = "MANUAL_PASTE"  # the port is taken: the user pastes the redirect instead
        verifier, challenge = oauth.pkce_pair()
        state = secrets.token_urlsafe(24)
        expires = self.clock() + SESSION_TTL_S
        self.auth[state] = AuthSession(verifier, self.redirect_uri, mode, expires, caller)
        query = urllib.parse.urlencode(
            {
                "response_type": "code",
                "client_id": self.config.oauth_vendor_b_client_id,
                "redirect_uri": self.redirect_uri,
                "scope": self.config.oauth_vendor_b_scope,
                "state": state,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
        url = self.config.oauth_vendor_b_authorize_url
        return {
            "mode": mode,
            "authorizeUrl": url + ("&" if "?" in url else "?") + query,
            "state": state,
            "redirectUri": self.redirect_uri,
            "expiresAt": iso_ts(expires),
        }

    async def callback_paste(self, caller: Caller, callback_url: str) -> dict[str, Any]:
        """MANUAL_PASTE: the URL the browser was redirected to carries code and state."""
        text = callback_url.strip()
        query = text.split("?", 1)[-1].split("#", 1)[0]  # after the first '?', before '#' (schemas.CALLBACK_URL_PATTERN)
        params = urllib.parse.parse_qs(query)
        code, state, error = (params.get(k, [""])[0] for k in ("code", "state", "error"))
        if not state or not (code or error):
            raise BadRequest("callbackUrl: must contain the code and state parameters")
        return await self.complete(code, state, error, caller)

    async def complete(self, code: str, state: str, error: str = "", caller: Caller | None = None) -> dict[str, Any]:
        self._prune()
        session = self.auth.pop(state, None)
        if session is None:
            raise NotFound("Unknown or expired OAuth state; start the sign-in again")  # names no sign-in (any more)
        if error:
            raise BadRequest(f"Authorization was not granted: {error}")
        if not code:
            raise BadRequest("callbackUrl: no authorization code")
        try:
            tokens = await oauth.exchange_code(
                self.config.oauth_vendor_b_token_url, self.config.oauth_vendor_b_client_id, code, session.verifier, session.redirect_uri
            )
        except oauth.OAuthError as exc:
            self.last_error = str(exc)
            raise BadRequest(f"Token exchange failed: {exc}") from None
        self._store(caller or session.caller, tokens, "authorization code")
        if not self.auth:
            self._stop_listener()
        return self.status()

    def _start_listener(self) -> bool:
        if self._listener is None:
            try:
                sockets = tornado.netutil.bind_sockets(self.config.oauth_vendor_b_callback_port, "127.0.0.1", family=socket.AF_INET)
            except OSError as exc:
                log.warning("vendor_b callback port %s unavailable: %s", self.config.oauth_vendor_b_callback_port, exc)
                return False
            app = tornado.web.Application([(CALLBACK_PATH, CallbackHandler, {"owner": self})])
            self._listener = tornado.httpserver.HTTPServer(app)
            self._listener.add_sockets(sockets)
        loop = IOLoop.current()
        if self._listener_timer is not None:
            loop.remove_timeout(self._listener_timer)
        self._listener_timer = loop.call_later(SESSION_TTL_S, self._stop_listener)
        return True

    def _stop_listener(self) -> None:
        if self._listener_timer is not None:
            IOLoop.current().remove_timeout(self._listener_timer)
            self._listener_timer = None
        if self._listener is not None:
            self._listener.stop()
            self._listener = None

    # ---- device flow (RFC 8628) -------------------------------------------

    async def device_start(self, caller: Caller) -> dict[str, Any]:
        self._need("oauth_vendor_b_device_code_url", "oauth_vendor_b_token_url", "oauth_vendor_b_client_id")
        self._prune()
        try:
            body = await oauth.device_authorize(
                self.config.oauth_vendor_b_device_code_url, self.config.oauth_vendor_b_client_id, self.config.oauth_vendor_b_scope
            )
        except oauth.OAuthError as exc:
            self.last_error = str(exc)
            raise BadRequest(f"Device authorization failed: {exc}") from None
        now = self.clock()
        raw_interval = body.get("interval")
        interval = float(raw_interval) if isinstance(raw_interval, (int, float)) and raw_interval >= 0 else 5.0
        session_id = secrets.token_urlsafe(16)
        session = DeviceSession(
            body["device_code"],
            body["user_code"],
            body["verification_uri"],
            body.get("verification_uri_complete"),
            now + float(body.get("expires_in") or SESSION_TTL_S),
            interval,
            now + interval,
            caller,
        )
        self.devices[session_id] = session
        return {
            "sessionId": session_id,
            "userCode": session.user_code,
            "verificationUri": session.verification_uri,
            "verificationUriComplete": session.verification_uri_complete,
            "interval": int(interval),
            "expiresAt": iso_ts(session.expires_at),
        }

    def _device(self, session_id: str | None) -> tuple[str, DeviceSession]:
        self._prune()
        if session_id is None and self.devices:
            session_id = list(self.devices)[-1]
        session = self.devices.get(session_id or "")
        if session is None:
            raise NotFound("Device session not found or expired")
        return session_id or "", session

    async def device_poll(self, caller: Caller, session_id: str | None) -> dict[str, Any]:
        """One poll: PENDING (also when polled before the interval), SUCCESS, DENIED or EXPIRED."""
        sid, session = self._device(session_id)
        now = self.clock()
        if now < session.next_poll_at:
            return {
                "status": "PENDING",
                "sessionId": sid,
                "interval": int(session.interval),
                "retryAfterSeconds": round(session.next_poll_at - now, 1),
            }
        try:
            tokens = await oauth.device_token(self.config.oauth_vendor_b_token_url, self.config.oauth_vendor_b_client_id, session.device_code)
        except oauth.OAuthError as exc:
            if exc.error == "slow_down":
                session.interval += 5  # RFC 8628 section 3.5
            if exc.error in ("authorization_pending", "slow_down"):
                session.next_poll_at = self.clock() + session.interval
                return {"status": "PENDING", "sessionId": sid, "interval": int(session.interval), "retryAfterSeconds": session.interval}
            self.devices.pop(sid, None)
            status = {"access_denied": "DENIED", "expired_token": "EXPIRED"}.get(exc.error, "FAILED")
            self.last_error = str(exc)
            return {"status": status, "sessionId": sid, "error": exc.error, "message": str(exc)}
        self.devices.pop(sid, None)
        self._store(caller, tokens, "device flow")
        return {"status": "SUCCESS", "sessionId": sid, **self.status()}

    def device_cancel(self, session_id: str | None) -> dict[str, Any]:
        sid, _ = self._device(session_id)
        del self.devices[sid]
        return {"sessionId": sid, "cancelled": True}

    # ---- tokens ------------------------------------------------------------

    def _store(self, caller: Caller | None, tokens: oauth.TokenSet, how: str) -> None:
        with database.atomic():
            OAuthCredential.insert(
                vendor=VENDOR,
                access_token=tokens.access_token,
                refresh_token=tokens.refresh_token,
                expires_at=_from_epoch(tokens.expires_at),
                scope=tokens.scope,
                token_type=tokens.token_type,
                update_time=utcnow(),
            ).on_conflict(  # an upsert both engines speak (SQLite's REPLACE is not PostgreSQL's)
                conflict_target=[OAuthCredential.vendor],
                preserve=[f for f in OAuthCredential._meta.sorted_fields if f.name != "vendor"],
            ).execute()
            models.set_api_key(VENDOR, tokens.access_token, enable=True)
            audit.record(caller, "UPDATE", "OAUTH_CREDENTIAL", VENDOR, f"vendor_b tokens obtained ({how})")
        self.last_error = None

    async def refresh(self, caller: Caller | None) -> dict[str, Any]:
        """Use the refresh token now."""
        self._need("oauth_vendor_b_token_url", "oauth_vendor_b_client_id")
        cred = OAuthCredential.get_or_none(OAuthCredential.vendor == VENDOR)
        if cred is None:  # what is stored decides, not the request (which has no body): a 409, as `_need`'s
            raise Conflict("vendor_b is not connected")
        if not cred.refresh_token:
            raise Conflict("vendor_b has no refresh token; sign in again")
        try:
            tokens = await oauth.refresh(self.config.oauth_vendor_b_token_url, self.config.oauth_vendor_b_client_id, cred.refresh_token)
        except oauth.OAuthError as exc:
            self.last_error = f"refresh failed: {exc}"
            raise BadRequest(f"Refresh failed: {exc}") from None
        self._store(caller, tokens, "refresh")
        self.last_refresh = self.clock()
        return self.status()

    async def refresh_if_near_expiry(self) -> None:
        cred = OAuthCredential.get_or_none(OAuthCredential.vendor == VENDOR)
        expires = _to_epoch(cred.expires_at) if cred else None
        if cred is None or not cred.refresh_token or expires is None or not self.config.oauth_vendor_b_token_url:
            return
        if expires - self.clock() <= self.config.oauth_refresh_margin_s:
            try:
                await self.refresh(None)
            except BadRequest as exc:
                log.warning("vendor_b automatic refresh failed: %s", exc.msg)

    async def revoke(self, caller: Caller) -> dict[str, Any]:
        """Revoke at the vendor when it offers an endpoint (best effort) and clear the credentials."""
        cred = OAuthCredential.get_or_none(OAuthCredential.vendor == VENDOR)
        if cred is not None and self.config.oauth_vendor_b_revoke_url:
            for token, hint in ((cred.refresh_token, "refresh_token"), (cred.access_token, "access_token")):
                if token:
                    try:
                        await oauth.revoke(self.config.oauth_vendor_b_revoke_url, self.config.oauth_vendor_b_client_id, token, hint)
                    except oauth.OAuthError as exc:
                        log.warning("vendor_b revoke of the %s failed: %s", hint, exc)
        with database.atomic():
            OAuthCredential.delete().where(OAuthCredential.vendor == VENDOR).execute()
            provider = models.get_provider(VENDOR)
            if provider.api_key or provider.enabled:
                provider.api_key = None
                provider.enabled = False
                provider.save()
                models.ensure_defaults()
            audit.record(caller, "DELETE", "OAUTH_CREDENTIAL", VENDOR, "vendor_b credentials cleared")
        return self.status()

    def status(self) -> dict[str, Any]:
        """Connection state (never the tokens)."""
        self._prune()
        cred = OAuthCredential.get_or_none(OAuthCredential.vendor == VENDOR)
        expires = _to_epoch(cred.expires_at) if cred else None
        return {
            "providerId": VENDOR,
            "providerName": models.provider_name(VENDOR),
            "configured": bool(self.config.oauth_vendor_b_token_url and self.config.oauth_vendor_b_client_id),
            "connected": cred is not None,
            "mode": self.mode(),
            "expiresAt": iso_ts(expires),
            "expired": bool(expires is not None and expires <= self.clock()),
            "hasRefreshToken": bool(cred and cred.refresh_token),
            "scope": cred.scope if cred else None,
            "pendingDeviceSessions": len(self.devices),
            "lastRefreshTime": iso_ts(self.last_refresh),
            "lastError": self.last_error,
        }

    async def close(self) -> None:
        self._stop_listener()
