"""OAuth sign-in for two model vendors; the tokens become the API key of the vendor's provider."""

from __future__ import annotations

from platform_server.features.oauth import OAUTH
from platform_server.features.oauth.schemas import (
    CallbackPaste,
    DeviceCancelView,
    DevicePollView,
    DeviceSessionRef,
    DeviceStartView,
    VendorAStatusView,
    VendorBAuthorizeView,
    VendorBStatusView,
)
from platform_server.features.oauth.service import OAuthService
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route


class _OAuth(ApiHandler):
    tags = ("OAuth",)

    @property
    def oauth(self) -> OAuthService:
        return self.platform.runtime(OAUTH)


class VendorAStatusHandler(_OAuth):
    answers = {"GET": one(VendorAStatusView)}
    access = {"GET": GLOBAL_ADMIN}

    async def get(self) -> None:
        """Status of the vendor_a credential read from local disk (never the tokens)."""
        self.ok(await self.oauth.vendor_a.status())


class VendorAReloadHandler(_OAuth):
    answers = {"POST": one(VendorAStatusView)}
    access = {"POST": GLOBAL_ADMIN}

    async def post(self) -> None:
        """Re-read the credential file, refresh when near expiry, and use it as the provider key."""
        self.ok(await self.oauth.vendor_a.sync(self.require_caller()))


class VendorBAuthorizeHandler(_OAuth):
    answers = {"GET": one(VendorBAuthorizeView)}
    access = {"GET": GLOBAL_ADMIN}

    def get(self) -> None:
        """An authorization URL with PKCE; mode LOCAL (loopback redirect listener) or MANUAL_PASTE."""
        self.ok(self.oauth.vendor_b.authorize(self.require_caller()))


class VendorBCallbackPasteHandler(_OAuth):
    answers = {"POST": one(VendorBStatusView)}
    access = {"POST": GLOBAL_ADMIN}
    body_models = {"POST": CallbackPaste}

    async def post(self) -> None:
        """Finish MANUAL_PASTE sign-in with the browser's callback URL."""
        req = self.body(CallbackPaste)
        self.ok(await self.oauth.vendor_b.callback_paste(self.require_caller(), req.callbackUrl))


class VendorBDeviceStartHandler(_OAuth):
    answers = {"POST": one(DeviceStartView)}
    access = {"POST": GLOBAL_ADMIN}

    async def post(self) -> None:
        """Start the device flow: a user code and the verification URL."""
        self.ok(await self.oauth.vendor_b.device_start(self.require_caller()))


class VendorBDevicePollHandler(_OAuth):
    answers = {"POST": one(DevicePollView)}
    access = {"POST": GLOBAL_ADMIN}
    body_models = {"POST": DeviceSessionRef}

    async def post(self) -> None:
        """Poll a device session: PENDING, SUCCESS, DENIED, EXPIRED or FAILED."""
        req = self.body(DeviceSessionRef)
        self.ok(await self.oauth.vendor_b.device_poll(self.require_caller(), req.sessionId))


class VendorBDeviceCancelHandler(_OAuth):
    answers = {"POST": one(DeviceCancelView)}
    access = {"POST": GLOBAL_ADMIN}
    body_models = {"POST": DeviceSessionRef}

    def post(self) -> None:
        """Cancel a pending device session."""
        req = self.body(DeviceSessionRef)
        self.ok(self.oauth.vendor_b.device_cancel(req.sessionId))


class VendorBRefreshHandler(_OAuth):
    answers = {"POST": one(VendorBStatusView)}
    access = {"POST": GLOBAL_ADMIN}

    async def post(self) -> None:
        """Refresh the vendor_b token now."""
        self.ok(await self.oauth.vendor_b.refresh(self.require_caller()))


class VendorBRevokeHandler(_OAuth):
    answers = {"DELETE": one(VendorBStatusView)}
    access = {"DELETE": GLOBAL_ADMIN}

    async def delete(self) -> None:
        """Revoke (when the vendor offers it) and clear the vendor_b credentials."""
        self.ok(await self.oauth.vendor_b.revoke(self.require_caller()))


class VendorBStatusHandler(_OAuth):
    answers = {"GET": one(VendorBStatusView)}
    access = {"GET": GLOBAL_ADMIN}

    def get(self) -> None:
        """vendor_b connection status (never the tokens)."""
        self.ok(self.oauth.vendor_b.status())


ROUTES = [
    route("/api/v1/oauth/vendor_a/status", VendorAStatusHandler),
    route("/api/v1/oauth/vendor_a/reload", VendorAReloadHandler),
    route("/api/v1/oauth/vendor_b/authorize", VendorBAuthorizeHandler),
    route("/api/v1/oauth/vendor_b/callback-paste", VendorBCallbackPasteHandler),
    route("/api/v1/oauth/vendor_b/device/start", VendorBDeviceStartHandler),
    route("/api/v1/oauth/vendor_b/device/poll", VendorBDevicePollHandler),
    route("/api/v1/oauth/vendor_b/device/cancel", VendorBDeviceCancelHandler),
    route("/api/v1/oauth/vendor_b/refresh", VendorBRefreshHandler),
    route("/api/v1/oauth/vendor_b/revoke", VendorBRevokeHandler),
    route("/api/v1/oauth/vendor_b/status", VendorBStatusHandler),
]
