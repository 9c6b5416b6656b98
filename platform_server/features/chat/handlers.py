"""Chat routes: SSE streams (POST and GET), synchronous chat, stop, interrupt, uploads."""

from __future__ import annotations

from platform_server.blocking import run_blocking
from platform_server.features.chat import CHAT, admin, approvals, lifecycle, remote, service, uploads
from platform_server.features.chat.schemas import (
    CHAT_EVENTS,
    ChatInterruptView,
    ChatRequest,
    ChatResultView,
    ChatStopView,
    ChatStreamRequest,
    ChatUploadView,
    InterruptRequest,
    SyncChatRequest,
)
from platform_server.features.conversations import service as conversations
from platform_server.platform import DrainHook
from platform_server.ports.events import Stream, Subscription, stream
from platform_server.web.base import ApiHandler
from platform_server.web.context import LOGIN
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route
from platform_server.web.sse import SseWriter

TAGS = ("Chat",)
# A turn's text deltas: those waiting for one write leave as one frame (web/events.py coalesce).
DELTAS = frozenset({"content_delta", "thinking_delta"})


class StreamingHandler(ApiHandler):
    """Shared by the chat SSE routes: pipe a turn to the client; a disconnect leaves the turn running."""

    query_token = True
    _subscription: Subscription | None = None

    @property
    def runtime(self) -> service.ChatService:
        return self.platform.runtime(CHAT)

    async def stream_turn(self, turn: service.Turn | Stream, after_id: int = 0) -> None:
        self._subscription = turn.subscribe(after_id)
        writer = SseWriter(self)
        writer.start()
        await stream(writer, self._subscription, self.config.heartbeat_s, merge=DELTAS)

    async def send_nothing_to_replay(self, conversation_id: str) -> None:
        writer = SseWriter(self)
        await writer.send("done", {"conversationId": conversation_id, "status": "completed"})
        writer.finish()

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if self._subscription is not None:
            self._subscription.close()


class ChatStreamHandler(StreamingHandler):
    access = {"POST": "viewer"}
    body_models = {"POST": ChatStreamRequest}
    sse_methods = frozenset({"POST"})
    events = {"POST": CHAT_EVENTS}
    tags = TAGS

    async def post(self) -> None:
        """Structured SSE chat; `reconnect=true` with `lastEventId` re-attaches to the running turn."""
        req = self.body(ChatStreamRequest)
        caller = self.require_caller()
        if req.reconnect:
            after = service.parse_last_event_id(req.lastEventId)
            kept = await service.reattach(self.runtime, caller, req.conversationId)
            if kept is None:
                await self.send_nothing_to_replay(req.conversationId)
                return
            await self.stream_turn(kept, after)
            return
        await self.runtime.pacer.admit()
        turn = service.begin_turn(
            self.runtime,
            self.config,
            caller,
            req.agentId or "",
            req.message,
            service.parts_of(req.contentParts),
            req.conversationId,
            req.thinkingLevel,
            req.modelProvider,
            req.modelName,
            req.endUserId,
            regenerate=req.regenerate,
            regenerate_from=req.regenerateFrom,
            continuation=req.continueAnswer,
        )
        await self.stream_turn(turn)


class AgentChatStreamHandler(StreamingHandler):
    access = {"GET": "viewer"}
    sse_methods = frozenset({"GET"})
    events = {"GET": CHAT_EVENTS}
    tags = ("Agents",)
    query_params = {
        "GET": [
            {"name": "message", "in": "query", "required": True, "schema": {"type": "string"}},
            {"name": "conversationId", "in": "query", "schema": {"type": "string"}},
            {"name": "token", "in": "query", "schema": {"type": "string"}},
        ]
    }

    async def get(self, id: int) -> None:
        """GET form of SSE chat (`message`, `conversationId`, `token` as query parameters)."""
        message = self.get_query_argument("message", "")
        if not message.strip():
            raise BadRequest("message: must not be blank")
        caller = self.require_caller()
        await self.runtime.pacer.admit()
        turn = service.begin_turn(
            self.runtime, self.config, caller, str(id), message, None, self.get_query_argument("conversationId", "default") or "default"
        )
        await self.stream_turn(turn)


class SyncChatHandler(StreamingHandler):
    answers = {"POST": one(ChatResultView)}
    access = {"POST": "viewer"}
    body_models = {"POST": ChatRequest}
    query_token = False
    tags = TAGS

    async def post(self, id: int | None = None) -> None:
        """Synchronous chat: the whole answer in one envelope."""
        req = self.body(ChatRequest if id is None else SyncChatRequest)
        agent_id = str(id) if id is not None else req.agentId
        if not agent_id:
            raise BadRequest("agentId: must not be null")
        await self.runtime.pacer.admit()
        turn = service.begin_turn(
            self.runtime,
            self.config,
            self.require_caller(),
            agent_id,
            req.message,
            None,
            req.conversationId,
            req.thinkingLevel,
            end_user_id=req.endUserId,
        )
        self.ok(await service.wait_result(turn))


class AgentSyncChatHandler(SyncChatHandler):
    body_models = {"POST": SyncChatRequest}
    tags = ("Agents",)


class StopHandler(ApiHandler):
    answers = {"POST": one(ChatStopView)}
    access = {"POST": LOGIN}
    query_token = True
    tags = TAGS

    async def post(self, conversationId: str) -> None:
        """Stop generation now; the partial answer is kept with status `stopped`."""
        caller = self.require_caller()
        conv = conversations.check_owner(caller.user_id, conversationId)
        runtime = self.platform.runtime(CHAT)
        denied = approvals.guard.deny_all_pending(caller.user_id, conversationId, caller.user_id) if conv else 0
        key = conversations.key_for(caller.user_id, conversationId)
        turn = runtime.turns.get(key) if conv else None
        # a turn of this process, else (several processes) the one another process runs
        stopped = await runtime.stop_here(turn, remote.STOP_WAIT_S) if turn is not None else bool(conv) and await remote.stop(key)
        if not stopped:
            self.ok({"stopped": bool(denied), "deniedApprovals": denied} if denied else {"stopped": False})
            return
        self.ok({"stopped": True})


class InterruptHandler(ApiHandler):
    answers = {"POST": one(ChatInterruptView)}
    access = {"POST": "viewer"}
    body_models = {"POST": InterruptRequest}
    tags = TAGS

    async def post(self, conversationId: str) -> None:
        """Queue a follow-up message; it runs as the next turn in the same stream."""
        req = self.body(InterruptRequest)  # conversationId: checked with the path (ids.CONVERSATION_ID_PATTERN)
        caller = self.require_caller()
        conversations.check_owner(caller.user_id, conversationId)
        key = conversations.key_for(caller.user_id, conversationId)
        if not self.runtime_has(key):  # several processes: the process that runs the turn takes it
            parts = service.parts_of(req.contentParts)
            forwarded = await remote.forward_input(key, req.message, parts, caller.user_id, caller.workspace_role)
            self.ok(forwarded if forwarded is not None else {"queued": False, "reason": "no_active_stream"})
            return
        decision = None if req.contentParts else self.platform.runtime(CHAT).resolve_live_approval(key, req.message, caller)
        if decision is not None:
            self.ok({"queued": False, **decision})
            return
        size = self.platform.runtime(CHAT).queue_input(key, req.message, service.parts_of(req.contentParts), caller.user_id)
        if size is None:
            self.ok({"queued": False, "reason": "no_active_stream"})
        else:
            self.ok({"queued": True, "queueSize": size})

    def runtime_has(self, key: str) -> bool:
        return self.platform.runtime(CHAT).is_running(key)


class UploadHandler(ApiHandler):
    answers = {"POST": one(ChatUploadView)}
    access = {"POST": "viewer"}
    max_body_setting = "upload_max_bytes"
    spool_body = True
    tags = TAGS

    async def post(self) -> None:
        """Upload an attachment (multipart `file`, `conversationId`); readable by the uploader only."""
        args, files = await self.multipart()
        if not files.get("file"):
            raise BadRequest("file: must not be null")
        raw_cid = (args.get("conversationId") or [b"default"])[0].decode("utf-8", "replace")
        cid = conversations.validate_id(raw_cid)
        caller = self.require_caller()
        conversations.check_owner(caller.user_id, cid)
        f = files["file"][0]
        self.ok(await uploads.store(caller.user_id, cid, f.filename or "file", f, f.content_type))


class FileHandler(ApiHandler):
    access = {"GET": "viewer"}
    download_methods = frozenset({"GET"})
    tags = TAGS

    async def get(self, conversationId: str, storedName: str) -> None:
        """Read an uploaded file (uploader only)."""
        path, row = uploads.open_upload(self.require_caller().user_id, conversationId, storedName)
        data = await run_blocking(path.read_bytes)
        self.set_header("Content-Type", row.content_type)
        self.set_header("Content-Disposition", "inline" if row.content_type.startswith("image/") else "attachment")
        self.set_header("Content-Security-Policy", "default-src 'none'; sandbox")
        self.finish(data)


ROUTES = [
    *admin.ROUTES,
    route("/api/v1/chat", SyncChatHandler),
    route("/api/v1/chat/stream", ChatStreamHandler),
    route("/api/v1/chat/upload", UploadHandler),
    route("/api/v1/chat/files/{conversationId:str}/{storedName:.+}", FileHandler),
    route("/api/v1/chat/{conversationId:str}/stop", StopHandler),
    route("/api/v1/chat/{conversationId:str}/interrupt", InterruptHandler),
    route("/api/v1/agents/{id}/chat", AgentSyncChatHandler),
    route("/api/v1/agents/{id}/chat/stream", AgentChatStreamHandler),
]

DRAIN: list[DrainHook] = [lifecycle.drain]
