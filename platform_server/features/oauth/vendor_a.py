"""vendor_a: a credential file another tool keeps on local disk; read, report, refresh near expiry."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

from platform_server.blocking import run_blocking
from platform_server.config import Config
from platform_server.db import database
from platform_server.features.audit import service as audit
from platform_server.features.models import service as models
from platform_server.integrations import oauth
from platform_server.web.context import Caller

log = logging.getLogger(__name__)

VENDOR = "vendor_a"
ACCESS_KEYS = ("accessToken", "access_token")
REFRESH_KEYS = ("refreshToken", "refresh_token")
EXPIRY_KEYS = ("expiresAt", "expires_at")


@dataclass
class FileCredential:
    doc: dict[str, Any]  # the whole file
    holder: dict[str, Any]  # the object holding the token fields (top level or one level down)
    access_token: str
    refresh_token: str | None
    expires_at: float | None  # epoch seconds
    expiry_in_ms: bool  # how the file writes expiresAt


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((obj[k] for k in keys if k in obj), None)


def _parse_expiry(value: Any) -> tuple[float | None, bool]:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (value / 1000.0, True) if value > 1e11 else (float(value), False)
    if isinstance(value, str) and value.strip():
        text = value.strip()
        if text.isdigit():
            return _parse_expiry(int(text))
        try:
            parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None, True
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.timezone.utc)
        return parsed.timestamp(), False
    return None, True


def parse_credential(doc: Any) -> FileCredential | None:
    """Find the access token at the top level or in one nested object (e.g. `{"vendorOauth": {...}}`)."""
    if not isinstance(doc, dict):
        return None
    holders = [doc] + [v for v in doc.values() if isinstance(v, dict)]
    for holder in holders:
        access = _first(holder, ACCESS_KEYS)
        if isinstance(access, str) and access:
            refresh = _first(holder, REFRESH_KEYS)
            expires_at, in_ms = _parse_expiry(_first(holder, EXPIRY_KEYS))
            return FileCredential(doc, holder, access, refresh if isinstance(refresh, str) and refresh else None, expires_at, in_ms)
    return None


def read_file(path: str) -> tuple[FileCredential | None, str | None]:
    """The credential in the file, or (None, why not)."""
    try:
        with open(path, encoding="utf-8") as fh:
            if os.fstat(fh.fileno()).st_size > 1_000_000:
                return None, "credential file is too large"
            doc = json.load(fh)
    except FileNotFoundError:
        return None, "credential file not found"
    except (OSError, ValueError) as exc:
        return None, f"credential file unreadable: {type(exc).__name__}"
    cred = parse_credential(doc)
    return (cred, None) if cred else (None, "no access token in the credential file")


def write_file(path: str, cred: FileCredential, tokens: oauth.TokenSet) -> None:
    """Write refreshed tokens back in the file's own layout (atomic replace, mode 0600)."""
    holder = cred.holder
    holder[next((k for k in ACCESS_KEYS if k in holder), "accessToken")] = tokens.access_token
    if tokens.refresh_token:
        holder[next((k for k in REFRESH_KEYS if k in holder), "refreshToken")] = tokens.refresh_token
    if tokens.expires_at is not None:
        key = next((k for k in EXPIRY_KEYS if k in holder), "expiresAt")
        holder[key] = int(tokens.expires_at * 1000) if cred.expiry_in_ms else int(tokens.expires_at)
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".credentials-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(cred.doc, fh, indent=2)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def iso_ts(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


class VendorA:
    """Reads the credential file, refreshes it near expiry and keeps the provider's key in step."""

    def __init__(self, config: Config, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.last_error: str | None = None
        self.last_refresh: float | None = None

    @property
    def path(self) -> str:
        return os.path.abspath(os.path.expanduser(self.config.oauth_vendor_a_credentials_path))

    def _status(self, cred: FileCredential | None, why: str | None) -> dict[str, Any]:
        now = self.clock()
        expires = cred.expires_at if cred else None
        return {
            "providerId": VENDOR,
            "providerName": models.provider_name(VENDOR),
            "path": self.path,
            "found": cred is not None,
            "expiresAt": iso_ts(expires),
            "expired": bool(expires is not None and expires <= now),
            "nearExpiry": bool(expires is not None and expires - now <= self.config.oauth_refresh_margin_s),
            "hasRefreshToken": bool(cred and cred.refresh_token),
            "refreshConfigured": bool(self.config.oauth_vendor_a_token_url),
            "subscriptionType": cred.holder.get("subscriptionType") if cred else None,
            "lastRefreshTime": iso_ts(self.last_refresh),
            "lastError": why if cred is None and why != "credential file not found" else self.last_error,
        }

    async def status(self) -> dict[str, Any]:
        """What the credential file holds (never the tokens)."""
        cred, why = await run_blocking(read_file, self.path)
        return self._status(cred, why)

    async def sync(self, caller: Caller | None) -> dict[str, Any]:
        """Re-read the file, refresh when near expiry, and make the token the provider's key."""
        path = self.path
        cred, why = await run_blocking(read_file, path)
        if cred is None:
            return self._status(None, why)
        near = cred.expires_at is not None and cred.expires_at - self.clock() <= self.config.oauth_refresh_margin_s
        if near and cred.refresh_token and self.config.oauth_vendor_a_token_url:
            try:
                tokens = await oauth.refresh(self.config.oauth_vendor_a_token_url, self.config.oauth_vendor_a_client_id, cred.refresh_token)
                await run_blocking(write_file, path, cred, tokens)
                cred, why = await run_blocking(read_file, path)
                self.last_refresh = self.clock()
                self.last_error = None
            except (oauth.OAuthError, OSError) as exc:
                self.last_error = f"refresh failed: {exc}"
                log.warning("vendor_a refresh failed: %s", exc)
        if cred is not None and not (cred.expires_at is not None and cred.expires_at <= self.clock()):
            self._apply(caller, cred.access_token)
        return self._status(cred, why)

    @staticmethod
    def _apply(caller: Caller | None, token: str) -> None:
        with database.atomic():
            provider = models.get_provider(VENDOR)
            if provider.api_key == token and provider.enabled:
                return
            models.set_api_key(VENDOR, token, enable=True)
            audit.record(caller, "UPDATE", "OAUTH_CREDENTIAL", VENDOR, "vendor_a credentials loaded from disk")
