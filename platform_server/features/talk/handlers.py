"""The talk WebSocket `/api/v1/talk/ws`: voice in, the agent's answer out as text and speech.

Not an inventory route (it is served beside the REST routes, see `SOCKETS`); auth is `?token=`
(JWT or PAT) checked after the upgrade so the client can read the close code (4401, 4403).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit

import tornado.websocket

from platform_server.features.chat import CHAT
from platform_server.features.media import SPEECH_LOCAL
from platform_server.features.talk import TALK
from platform_server.features.talk.session import TalkLimits, TalkParts, TalkSession
from platform_server.platform import Flag
from platform_server.web.base import dumps
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError
from platform_server.web.routing import route

log = logging.getLogger(__name__)

CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403


class _SocketSender:
    def __init__(self, handler: "TalkSocketHandler") -> None:
        self.handler = handler

    async def send_json(self, data: dict[str, Any]) -> None:
        await self._send(dumps(data), False)

    async def send_bytes(self, data: bytes) -> None:
        await self._send(data, True)

    async def _send(self, message: str | bytes, binary: bool) -> None:
        try:
            await self.handler.write_message(message, binary=binary)
        except tornado.websocket.WebSocketClosedError:
            pass  # the client left; the session is closed by on_close


class TalkSocketHandler(tornado.websocket.WebSocketHandler):
    """Client frames: JSON `start`/`end`/`stop` and binary PCM16; server frames: see decisions.md."""

    session: TalkSession | None = None

    def initialize(self, long_params: frozenset[str] = frozenset(), template: str = "") -> None:
        """The route table passes `long_params` and `template` to every handler; this socket has no parameters."""

    @property
    def platform(self) -> Any:
        return self.application.settings["platform"]

    @property
    def max_message_size(self) -> int:
        # Frames up to twice the limit get an error frame; beyond that Tornado closes with 1009.
        return int(self.platform.config.talk_max_frame_bytes) * 2

    def check_origin(self, origin: str) -> bool:
        """The server's own origin, or one listed in `allowed_origins`; clients without Origin pass."""
        parsed = urlsplit(origin)
        if parsed.netloc and parsed.netloc.lower() == (self.request.host or "").lower():
            return True
        return origin.rstrip("/") in {o.rstrip("/") for o in self.platform.config.allowed_origins}

    def _caller(self) -> Caller | None:
        token = self.get_query_argument("token", "")
        principal = self.platform.web.authenticate(token) if token else None
        if principal is None:
            return None
        raw = self.get_query_argument("workspaceId", "1")
        workspace = int(raw) if raw.isdigit() and 0 < int(raw) < 2**63 else 1
        role = "owner" if principal.is_global_admin else self.platform.web.workspace_role(principal.user_id, workspace)
        return Caller(principal, workspace, role)

    def _admitted(self, reason_401: str) -> Caller | None:
        """The caller as of now, or None after closing the socket with the code that says why."""
        caller = self._caller()
        if caller is None:
            self.close(CLOSE_UNAUTHORIZED, reason_401)
            return None
        if not self.platform.web.feature_enabled("talk_mode"):
            self.close(CLOSE_FORBIDDEN, "Talk mode is off (feature flag talk_mode)")
            return None
        if not caller.has_role("viewer"):
            self.close(CLOSE_FORBIDDEN, "Not a member of this workspace")
            return None
        return caller

    def open(self, *args: Any, **kwargs: Any) -> None:
        caller = self._admitted("Token expired or invalid")
        if caller is None:
            return
        config = self.platform.config
        limits = TalkLimits(config.talk_max_frame_bytes, config.talk_max_utterance_s)
        parts = TalkParts(self.platform.runtime(TALK), self.platform.runtime(CHAT), self.platform.runtime(SPEECH_LOCAL), config)
        self.session = TalkSession(parts, caller, _SocketSender(self), limits)

    async def on_message(self, message: str | bytes) -> None:
        session = self.session
        if session is None:
            return
        if isinstance(message, str):
            # Every turn starts from a text frame (`start`, `end`): the token is checked again there, so a
            # revoked PAT, a disabled user or a lost role ends an open socket instead of running more turns.
            caller = self._admitted("Token revoked or expired, or the user is disabled")
            if caller is None:
                return  # the socket is closing; on_close stops the answer in flight
            session.caller = caller
        try:
            if len(message) > session.limits.max_frame_bytes:
                raise ApiError(f"frame larger than {session.limits.max_frame_bytes} bytes", 413)
            if isinstance(message, bytes):
                session.on_audio(message)
            else:
                await session.on_text(message)
        except ApiError as exc:
            await session.sender.send_json({"type": "error", "message": exc.msg, "code": exc.code})
        except Exception:  # noqa: BLE001 - one bad frame must not end the session
            log.exception("talk frame failed")
            await session.sender.send_json({"type": "error", "message": "Internal server error", "code": 500})

    def on_close(self) -> None:
        session, self.session = self.session, None
        if session is None:
            return
        session.release()  # at once: the conversation may be talked to again right away
        task = asyncio.get_running_loop().create_task(session.close())
        registry = self.platform.runtime(TALK)
        registry.closing.add(task)
        task.add_done_callback(registry.closing.discard)


ROUTES: list[Any] = []  # no REST routes; the socket is outside the inventory
SOCKETS = [route("/api/v1/talk/ws", TalkSocketHandler)]

FLAGS = [Flag("talk_mode", False, "Voice conversations over the talk WebSocket")]
