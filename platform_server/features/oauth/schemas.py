"""Request bodies of the oauth routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from platform_server.serialize import View

# The URL the browser was sent back to (or its query alone): a non-empty `state` and a non-empty `code` (or `error`)
# among its query parameters, in either order; vendor_b.callback_paste reads it so
_PARAM = "[^#&?]*&"  # after the first '?' (the query), no other one: the server splits there
CALLBACK_URL_PATTERN = (
    f"^([^?#]*\\?)?({_PARAM})*(state=[^&#?]+&({_PARAM})*(code|error)=[^&#?]+|(code|error)=[^&#?]+&({_PARAM})*state=[^&#?]+)(&[^#?]*)?(#[^?]*)?$"
)


class CallbackPaste(BaseModel):
    callbackUrl: str = Field(min_length=1, max_length=8000, json_schema_extra={"pattern": CALLBACK_URL_PATTERN})


class DeviceSessionRef(BaseModel):
    sessionId: str | None = Field(default=None, max_length=200)


class VendorAStatusView(View):
    """What the vendor_a credential file holds (never the tokens)."""

    providerId: str
    providerName: str
    path: str
    found: bool
    expiresAt: str | None
    expired: bool
    nearExpiry: bool
    hasRefreshToken: bool
    refreshConfigured: bool
    subscriptionType: str | None
    lastRefreshTime: str | None
    lastError: str | None


class VendorBStatusView(View):
    """The vendor_b sign-in state (never the tokens)."""

    providerId: str
    providerName: str
    configured: bool
    connected: bool
    mode: str
    expiresAt: str | None
    expired: bool
    hasRefreshToken: bool
    scope: str | None
    pendingDeviceSessions: int
    lastRefreshTime: str | None
    lastError: str | None


class VendorBAuthorizeView(View):
    mode: str
    authorizeUrl: str = Field(description="open it in a browser to sign in (PKCE)")
    state: str
    redirectUri: str
    expiresAt: str | None


class DeviceStartView(View):
    """An RFC 8628 device authorization: show `userCode` and `verificationUri`, then poll."""

    sessionId: str
    userCode: str
    verificationUri: str
    verificationUriComplete: str | None
    interval: int
    expiresAt: str | None


class DevicePollView(View):
    """One poll: PENDING (with when to poll again), SUCCESS (with the sign-in state), DENIED, EXPIRED or FAILED (with why)."""

    status: Literal["PENDING", "SUCCESS", "DENIED", "EXPIRED", "FAILED"]
    sessionId: str
    interval: int | None = None
    retryAfterSeconds: float | None = None
    error: str | None = None
    message: str | None = None
    providerId: str | None = None
    providerName: str | None = None
    configured: bool | None = None
    connected: bool | None = None
    mode: str | None = None
    expiresAt: str | None = None
    expired: bool | None = None
    hasRefreshToken: bool | None = None
    scope: str | None = None
    pendingDeviceSessions: int | None = None
    lastRefreshTime: str | None = None
    lastError: str | None = None


class DeviceCancelView(View):
    sessionId: str
    cancelled: bool
