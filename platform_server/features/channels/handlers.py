"""Channel routes: management (workspace admin writes), signed inbound webhooks and the public webchat."""

from __future__ import annotations

import asyncio
import json
import re

from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent
from platform_server.features.channels import CHANNELS, pairing_handlers, service
from platform_server.features.channels.models import Channel
from platform_server.features.channels.platforms import ADAPTERS
from platform_server.features.channels.platforms.base import Handshake, PlatformAdapter
from platform_server.features.channels.platforms.settings import describe
from platform_server.features.channels.runtime import conversation_id_for
from platform_server.features.channels.schemas import (
    ChannelCreate,
    ChannelHealthView,
    ChannelInboundView,
    ChannelPlatformView,
    ChannelPreflightView,
    ChannelsStatusView,
    ChannelUpdate,
    ChannelView,
    NewChannelView,
    ToggleRequest,
    WebchatConfigView,
    WebchatRequest,
)
from platform_server.features.chat import service as chat_service
from platform_server.features.chat.handlers import StreamingHandler
from platform_server.features.chat.schemas import CHAT_EVENTS
from platform_server.features.conversations.service import key_for
from platform_server.integrations import net_guard
from platform_server.platform import Flag
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN, PUBLIC
from platform_server.web.errors import BadRequest, NotFound
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import gated, route

TAGS = ("Channels",)
CHANNEL_ID_RE = re.compile(r"[0-9]{1,18}")  # a webhook's `?channelId=`, as the document states it (a Long)


class ChannelsHandler(ApiHandler):
    answers = {"GET": list_of(ChannelView), "POST": one(NewChannelView)}
    access = {"GET": "viewer", "POST": "admin"}
    body_models = {"POST": ChannelCreate}
    tags = TAGS

    def get(self) -> None:
        """Channels of the workspace (secrets never shown)."""
        self.ok(service.list_for(self.require_caller()))

    def post(self) -> None:
        """Create; a generated secret is shown once in this answer."""
        req = self.body(ChannelCreate)
        draft = {"channelType": req.channelType, "agentId": req.agentId, "replyUrl": req.replyUrl}
        self.ok(service.create(self.require_caller(), req.name, draft, req.secret, req.settings, req.enabled))
        self.platform.runtime(CHANNELS).reconcile_soon()


class ChannelHandler(ApiHandler):
    answers = {"GET": one(ChannelView), "PUT": one(ChannelView), "DELETE": NOTHING}
    access = {"GET": "viewer", "PUT": "admin", "DELETE": "admin"}
    body_models = {"PUT": ChannelUpdate}
    tags = TAGS

    def get(self, id: int) -> None:
        """One channel."""
        self.ok(service.get(self.require_caller(), id))

    def put(self, id: int) -> None:
        """Update (sparse)."""
        changes = self.body(ChannelUpdate).model_dump(exclude_none=True)
        self.ok(service.update(self.require_caller(), id, changes))
        self.platform.runtime(CHANNELS).reconcile_soon()

    def delete(self, id: int) -> None:
        """Delete."""
        service.delete(self.require_caller(), id)
        self.platform.runtime(CHANNELS).reconcile_soon()
        self.ok(None)


class ToggleHandler(ApiHandler):
    answers = {"PUT": one(ChannelView)}
    access = {"PUT": "admin"}
    body_models = {"PUT": ToggleRequest}
    tags = TAGS

    def put(self, id: int) -> None:
        """Enable or disable (`{enabled}` or `?enabled=`; neither flips it)."""
        self.ok(service.toggle(self.require_caller(), id, self.toggle_body(ToggleRequest).enabled))
        self.platform.runtime(CHANNELS).reconcile_soon()


class PlatformsHandler(ApiHandler):
    answers = {"GET": list_of(ChannelPlatformView)}
    access = {"GET": "viewer"}
    tags = TAGS

    def get(self) -> None:
        """The messaging platforms: name, the settings each asks for, how to create the bot, the webhook path."""
        self.ok([d for t in service.IM_TYPES if (d := describe(t)) is not None])


class TypeHandler(ApiHandler):
    answers = {"GET": list_of(ChannelView)}
    access = {"GET": "viewer"}
    path_schemas = {"channelType": {"type": "string", "enum": list(service.TYPES)}}
    tags = TAGS

    def get(self, channelType: str) -> None:
        """Channels of one type."""
        self.ok(service.list_for(self.require_caller(), channelType))


class PreflightHandler(ApiHandler):
    answers = {"POST": one(ChannelPreflightView)}
    access = {"POST": "admin"}
    body_models = {"POST": ChannelCreate}
    tags = TAGS

    async def post(self) -> None:
        """Validate a draft without saving: agent, type, and whether the reply URL may be reached."""
        req = self.body(ChannelCreate)
        service.check_draft(self.require_caller(), {"channelType": req.channelType, "agentId": req.agentId, "replyUrl": req.replyUrl})
        problems = []
        urls = [("replyUrl", req.replyUrl)] if req.replyUrl else []
        adapter = ADAPTERS.get(req.channelType)
        if adapter is not None:  # the settings the platform needs, and its API address
            service.stored_settings(req.channelType, req.settings, None)
            urls.append(("settings.apiBaseUrl", str(req.settings.get("apiBaseUrl") or adapter.default_base_url)))
        for name, url in urls:
            try:
                await net_guard.vet_url(url, self.config.web_fetch_allow_hosts)
            except net_guard.BlockedUrl as exc:
                problems.append(f"{name}: {exc}")
        self.ok({"valid": not problems, "problems": problems})


class HealthHandler(ApiHandler):
    answers = {"GET": one(ChannelHealthView)}
    access = {"GET": "viewer"}
    tags = TAGS

    async def get(self, id: int) -> None:
        """Check one channel's connection now (a signed ping to its reply URL)."""
        caller = self.require_caller()
        service.get(caller, id)
        self.ok(await service.check_health(self.config, Channel.get_by_id(id)))


class AllHealthHandler(ApiHandler):
    answers = {"GET": list_of(ChannelHealthView)}
    access = {"GET": "viewer"}
    tags = TAGS

    async def get(self) -> None:
        """Check every enabled channel of the workspace now."""
        caller = self.require_caller()
        rows = [c for c in Channel.select().where(Channel.workspace_id == caller.workspace_id) if c.enabled]
        self.ok(list(await asyncio.gather(*(service.check_health(self.config, c) for c in rows))))


class StatusHandler(ApiHandler):
    answers = {"GET": one(ChannelsStatusView)}
    access = {"GET": GLOBAL_ADMIN}
    tags = TAGS

    def get(self) -> None:
        """Runtime status of every channel of every workspace (global admin)."""
        self.ok(service.status(list(Channel.select())))


class WebhookStatusHandler(ApiHandler):
    answers = {"GET": one(ChannelsStatusView)}
    access = {"GET": "admin"}
    tags = TAGS

    def get(self) -> None:
        """Runtime status of the workspace's webhook channels."""
        caller = self.require_caller()
        rows = list(Channel.select().where((Channel.workspace_id == caller.workspace_id) & (Channel.channel_type.in_(service.IM_TYPES))))
        self.ok(service.status(rows))


class WebhookHandler(ApiHandler):
    """Inbound message callback of one platform type (public; HMAC-signed)."""

    answers = {"POST": one(ChannelInboundView)}

    access = {"POST": PUBLIC}
    max_body_setting = "public_message_max_body_bytes"
    tags = TAGS
    channel_type = ""

    def post(self) -> None:
        """Inbound call of the platform (`?channelId=` names the channel), verified as the platform documents."""
        self._platform_call(ADAPTERS[self.channel_type])  # (every webhook route is a platform with an adapter)

    def _platform_call(self, adapter: PlatformAdapter) -> None:
        raw = self.body_bytes if self.request.method != "GET" else b""  # a GET (URL check) has no body to document
        query = self.query_map()
        channel_id = query.get("channelId", "")
        # the document's pattern, ASCII digits (isdigit() also passes '²', which int() refuses: a 500)
        channel = service.inbound_channel(self.channel_type, int(channel_id)) if CHANNEL_ID_RE.fullmatch(channel_id) else None
        adapter.verify(channel, self.request.headers, raw, query)  # an unknown channel fails here like a bad signature
        if channel is None:
            return
        result = adapter.parse(channel, self.request.headers, raw, query)
        if isinstance(result, Handshake):
            self._answer(result)
            return
        if result is None or not channel.enabled:
            self.ok({"accepted": False, "reason": "ignored event type" if result is None else "channel disabled"})
            return
        if not service.first_sight(channel, result.event_id, raw):  # the platform's retry of a delivery already taken
            outcome: dict[str, object] = {"accepted": False, "reason": "duplicate"}
        else:
            outcome = self.platform.runtime(CHANNELS).deliver_inbound(channel, adapter, result)
        if result.ack is not None:
            self._answer(result.ack)
        else:
            self.ok(outcome)

    def _answer(self, answer: Handshake) -> None:
        """The platform's own answer shape (not the envelope): it reads the body."""
        self.set_status(answer.status)
        self.set_header("Content-Type", answer.content_type)
        body = answer.body
        self.finish(json.dumps(body) if isinstance(body, (dict, list)) else body)


async def webchat_channel(handler: ApiHandler, token: str) -> Channel:
    """The enabled webchat channel of a public token, counted against its rate limits (429 past them)."""
    row = Channel.get_or_none((Channel.public_token == token) & (Channel.channel_type == "webchat"))
    if row is None or not row.enabled:
        raise NotFound("Webchat not found")
    await handler.platform.runtime(CHANNELS).webchat_limits.check(row.id, handler.client_ip)
    return row


class WebchatConfigHandler(ApiHandler):
    answers = {"GET": one(WebchatConfigView)}
    access = {"GET": PUBLIC}
    tags = TAGS
    query_params = {"GET": [{"name": "token", "in": "query", "required": True, "schema": {"type": "string"}}]}

    async def get(self) -> None:
        """What the public widget shows (by its public token)."""

        channel = await webchat_channel(self, self.get_query_argument("token", ""))
        agent = Agent.get_or_none(Agent.id == channel.agent_id)
        settings = channel.settings or {}
        self.ok(
            {
                "name": channel.name,
                "title": settings.get("title") or channel.name,
                "welcomeMessage": settings.get("welcomeMessage", ""),
                "agentName": getattr(agent, "name", None),
                "agentIcon": getattr(agent, "icon", None),
            }
        )


class WebchatStreamHandler(StreamingHandler):
    access = {"POST": PUBLIC}
    body_models = {"POST": WebchatRequest}
    max_body_setting = "public_message_max_body_bytes"
    sse_methods = frozenset({"POST"})
    events = {"POST": CHAT_EVENTS}
    query_token = False
    tags = TAGS

    async def post(self) -> None:
        """Public webchat SSE chat: one conversation per widget session, answered by the channel's agent."""

        req = self.body(WebchatRequest)
        channel = await webchat_channel(self, req.token)
        caller = service.owner_caller(channel)
        cid = conversation_id_for(channel, req.sessionId, prefix="wc")
        if req.reconnect:
            turn = self.runtime.turns.get(key_for(caller.user_id, cid))
            if turn is None:
                await self.send_nothing_to_replay(cid)
                return
            await self.stream_turn(turn, chat_service.parse_last_event_id(req.lastEventId))
            return
        if not (req.message or "").strip():
            raise BadRequest("message: must not be blank")
        agent = agents.get_agent_for_chat(caller, channel.agent_id)
        turn = self.runtime.start_turn(
            chat_service.TurnRequest(
                caller=caller, agent=agent, conversation_id=cid, message=req.message, end_user_id=f"webchat:{req.sessionId}", source="web"
            )
        )
        await self.stream_turn(turn)


class UrlCheckWebhookHandler(WebhookHandler):
    """A platform that checks its callback URL with a signed GET (WeCom's `echostr`)."""

    access = {"GET": PUBLIC, "POST": PUBLIC}
    answers = {"POST": one(ChannelInboundView), "GET": one(ChannelInboundView)}  # a GET without `echostr`: ignored
    # the URL check itself is answered with the decrypted `echostr` as plain text, the platform's own shape
    more_answer_content = {"GET": {"text/plain": {"schema": {"type": "string"}}}}

    def get(self) -> None:
        """Callback URL check: the adapter verifies the signature and answers the platform's expected text."""
        self._platform_call(ADAPTERS[self.channel_type])


URL_CHECKED = ("im_f",)  # channel types whose platform sends the GET URL check


def _webhook(channel_type: str) -> type[WebhookHandler]:
    base = UrlCheckWebhookHandler if channel_type in URL_CHECKED else WebhookHandler
    return type(f"Webhook_{channel_type}", (base,), {"channel_type": channel_type})


ROUTES = gated(
    "channels",
    [
        *pairing_handlers.ROUTES,
        route("/api/v1/channels", ChannelsHandler),
        route("/api/v1/channels/health", AllHealthHandler),
        route("/api/v1/channels/preflight", PreflightHandler),
        route("/api/v1/channels/status", StatusHandler),
        route("/api/v1/channels/type/{channelType}", TypeHandler),
        route("/api/v1/channels/platforms", PlatformsHandler),
        route("/api/v1/channels/webchat/config", WebchatConfigHandler),
        route("/api/v1/channels/webchat/stream", WebchatStreamHandler),
        route("/api/v1/channels/webhook/status", WebhookStatusHandler),
        route("/api/v1/channels/{id}", ChannelHandler),
        route("/api/v1/channels/{id}/health", HealthHandler),
        route("/api/v1/channels/{id}/toggle", ToggleHandler),
    ]
    + [route(f"/api/v1/channels/webhook/{t}", _webhook(t)) for t in service.IM_TYPES],
)

FLAGS = [Flag("channels", True, "External messaging channels, their webhooks and replies")]
