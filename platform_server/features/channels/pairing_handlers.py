"""Channel pairing routes: QR-code authorization, app registration (im_a, im_c) and the im_g login QR code."""

from __future__ import annotations

from typing import Any

from platform_server.features.channels import CHANNELS, pairing
from platform_server.features.channels.schemas import PairingBegin, PairingStartView, PairingView
from platform_server.web.base import ApiHandler
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route

TAGS = ("Channels",)
SESSION_QUERY = [{"name": "sessionId", "in": "query", "required": True, "schema": {"type": "string"}}]
CHANNEL_QUERY = [{"name": "channelId", "in": "query", "required": True, "schema": {"type": "string"}}]


class PairingBase(ApiHandler):
    tags = TAGS
    purpose = "qrcode"
    fixed_type = ""

    @property
    def allow_hosts(self) -> tuple[str, ...]:
        return tuple(self.config.web_fetch_allow_hosts)

    async def begin(self, channel_type: str, channel_id: int | None) -> None:
        self.ok(await pairing.begin(self.require_caller(), self.allow_hosts, channel_type, channel_id, self.purpose))

    async def status(self, channel_type: str) -> None:
        session_id = self.get_query_argument("sessionId", "") or None
        result = await pairing.status(self.require_caller(), self.allow_hosts, channel_type, session_id, self.purpose)
        if result["status"] == "confirmed":  # new credentials (a WeChat bot token): its gateway restarts with them now
            self.platform.runtime(CHANNELS).reconcile_soon()
        self.ok(result)


class QrBeginHandler(PairingBase):
    answers = {"POST": one(PairingStartView)}
    access = {"POST": "admin"}
    body_models = {"POST": PairingBegin}

    async def post(self, channelType: str) -> None:
        """Start QR-code pairing of a channel with its gateway: `{sessionId, qrcodeImage, expiresAt, status}`."""
        await self.begin(channelType, int(self.body(PairingBegin).channelId))


class QrStatusHandler(PairingBase):
    answers = {"GET": one(PairingView)}
    access = {"GET": "admin"}
    query_params = {"GET": SESSION_QUERY}

    async def get(self, channelType: str) -> None:
        """Pairing status: waiting, scanned, confirmed (credentials saved in the channel), expired or failed."""
        await self.status(channelType)


class RegisterBeginHandler(PairingBase):
    answers = {"POST": one(PairingStartView)}
    access = {"POST": "admin"}
    body_models = {"POST": PairingBegin}
    purpose = "register"

    async def post(self) -> None:
        """Start QR-code app registration of this channel type with its gateway."""
        await self.begin(self.fixed_type, int(self.body(PairingBegin).channelId))


class RegisterStatusHandler(PairingBase):
    answers = {"GET": one(PairingView)}
    access = {"GET": "admin"}
    query_params = {"GET": SESSION_QUERY}
    purpose = "register"

    async def get(self) -> None:
        """App registration status (same states as QR-code pairing)."""
        await self.status(self.fixed_type)


class LoginQrHandler(PairingBase):
    answers = {"GET": one(PairingStartView)}
    access = {"GET": "admin"}
    query_params = {"GET": CHANNEL_QUERY}
    purpose = "login"
    fixed_type = "im_g"

    async def get(self) -> None:
        """Login QR code of an im_g channel (opens a pairing session at its gateway)."""
        await self.begin(self.fixed_type, self.query_long("channelId", required=True))


class LoginQrStatusHandler(PairingBase):
    answers = {"GET": one(PairingView)}
    access = {"GET": "admin"}
    query_params = {"GET": SESSION_QUERY}
    purpose = "login"
    fixed_type = "im_g"

    async def get(self) -> None:
        """Login QR scan status of an im_g channel."""
        await self.status(self.fixed_type)


def _fixed(base: type[PairingBase], channel_type: str) -> Any:
    return type(f"{base.__name__}_{channel_type}", (base,), {"fixed_type": channel_type})


ROUTES = [
    route("/api/v1/channels/qrcode/{channelType}/begin", QrBeginHandler),
    route("/api/v1/channels/qrcode/{channelType}/status", QrStatusHandler),
    route("/api/v1/channels/webhook/im_g/qrcode", LoginQrHandler),
    route("/api/v1/channels/webhook/im_g/qrcode/status", LoginQrStatusHandler),
] + [
    r
    for t in ("im_a", "im_c")
    for r in (
        route(f"/api/v1/channels/webhook/{t}/register/begin", _fixed(RegisterBeginHandler, t)),
        route(f"/api/v1/channels/webhook/{t}/register/status", _fixed(RegisterStatusHandler, t)),
    )
]
