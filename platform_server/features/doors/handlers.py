"""Client doors: agents as an OpenAI-compatible API (`/api/v1/openai/v1`) and as an MCP server (`/api/v1/mcp/serve`).

Their answers and errors are in the clients' own shapes, not the envelope (decisions.md "Client doors"); a PAT or a
JWT in the Authorization header authenticates both."""

from __future__ import annotations

from typing import Any

from platform_server.features.doors import agents_door, openai_api
from platform_server.features.doors.mcp_door import McpServeHandler
from platform_server.features.doors.schemas import ChatCompletionRequest
from platform_server.ports.events import Subscription
from platform_server.web.base import ApiHandler
from platform_server.web.context import LOGIN
from platform_server.web.encode import dumps
from platform_server.web.errors import ApiError, BadRequest, MethodNotAllowed
from platform_server.web.routing import route
from platform_server.web.sse import SseWriter

BASE = "/api/v1/openai/v1"
_ERROR = {"$ref": "#/components/schemas/OpenAiError"}


def _documented(ok: dict[str, Any], stream: bool = False) -> dict[str, Any]:
    """The OpenAPI responses of a door route: its own success shape and OpenAI-shaped errors."""
    errors = {str(s): {"description": d, "content": {"application/json": {"schema": _ERROR}}} for s, d in openai_api.DOCUMENTED_ERRORS.items()}
    content: dict[str, Any] = {"application/json": {"schema": ok}}
    if stream:
        content["text/event-stream"] = {"schema": {"type": "string"}}
    return {"200": {"description": "Success (OpenAI shape)", "content": content}, **errors}


class OpenAiHandler(ApiHandler):
    """Base of the OpenAI door: every error goes out as `{"error": {message, type, param, code}}`."""

    error_shape = "openai"  # tests/test_error_shape.py: these routes answer errors in the OpenAI shape
    tags = ("OpenAI-compatible API",)
    openapi_schemas = openai_api.OPENAPI_SCHEMAS
    _subscription: Subscription | None = None

    def _write_error_body(self, error: ApiError) -> None:
        status, body = openai_api.error_body(error)
        self.set_status(status)
        if isinstance(error, MethodNotAllowed):
            self.set_header("Allow", ", ".join(self.implemented_methods()))
        self.finish(dumps(body))

    def only_workspace(self) -> int | None:
        """The workspace an `X-Workspace-Id` header narrows the door to, or None (every workspace of the caller)."""
        raw = (self.request.headers.get("X-Workspace-Id") or "").strip()
        if not raw:
            return None
        if not raw.isdigit() or not 0 < int(raw) < 2**63:
            raise BadRequest("Invalid value for parameter 'X-Workspace-Id': expected Long")
        return int(raw)

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if self._subscription is not None:
            self._subscription.close()  # the answer stops streaming; the turn runs on and is stored


class ModelsHandler(OpenAiHandler):
    access = {"GET": LOGIN}
    openapi_responses = {"GET": _documented(openai_api.MODELS_SCHEMA)}

    def get(self) -> None:
        """The agents the caller may chat with, as models (id `<name>-<agentId>`, stable across renames)."""
        principal = self.require_caller().principal
        self.finish(dumps(openai_api.models(agents_door.listable_agents(principal, self.only_workspace()))))


class ModelHandler(OpenAiHandler):
    access = {"GET": LOGIN}
    openapi_responses = {"GET": _documented(openai_api.MODEL_SCHEMA)}

    def get(self, model: str) -> None:
        """One agent as a model (404 `model_not_found` when the caller may not chat with it)."""
        _, agent = agents_door.caller_for(self.require_caller().principal, model, self.only_workspace())
        self.finish(dumps(openai_api.model(agent)))


class ChatCompletionsHandler(OpenAiHandler):
    access = {"POST": LOGIN}
    body_models = {"POST": ChatCompletionRequest}
    openapi_responses = {"POST": _documented(openai_api.COMPLETION_SCHEMA, stream=True)}

    async def post(self) -> None:
        """Run a turn of the agent named by `model` (the same runtime as /api/v1/chat/stream); `stream` answers SSE chunks."""
        req = self.body(ChatCompletionRequest)
        caller, agent = agents_door.caller_for(self.require_caller().principal, req.model, self.only_workspace())
        message, parts = openai_api.new_message(req)
        headers = {name: self.request.headers.get(name) for name in openai_api.THREAD_HEADERS}
        conversation = agents_door.conversation_id("openai", openai_api.thread_key(req, headers, int(agent.id)))
        turn = await agents_door.start(self.platform, caller, agent, conversation, message, openai_api.SOURCE, parts)
        self.set_header("X-Conversation-Id", conversation)
        completion = openai_api.Completion(req.model)
        outcome = agents_door.Outcome()
        self._subscription = turn.subscribe(0)
        if not req.stream:
            async for _ in agents_door.pieces(self._subscription, outcome):
                pass
            if outcome.status == "failed":
                raise ApiError(outcome.error or "The model call failed", 502)
            self.finish(dumps(completion.whole(outcome)))
            return
        writer = SseWriter(self)  # a client that has gone: writes are dropped, and closing the subscription ends `pieces`
        await writer.send_raw(openai_api.data(completion.chunk({"role": "assistant", "content": ""})))
        async for piece in agents_door.pieces(self._subscription, outcome):
            await writer.send_raw(openai_api.data(completion.chunk({"content": piece})))
        if outcome.status == "failed":
            _, body = openai_api.error_body(ApiError(outcome.error or "The model call failed", 502))
            await writer.send_raw(openai_api.data(body))
        else:
            await writer.send_raw(openai_api.data(completion.chunk({}, "stop")))
            if req.stream_options is not None and req.stream_options.include_usage:
                await writer.send_raw(openai_api.data(completion.usage_chunk(outcome)))
        await writer.send_raw("data: [DONE]\n\n")
        writer.finish()


ROUTES = [
    route(f"{BASE}/models", ModelsHandler),
    route(f"{BASE}/models/{{model}}", ModelHandler),
    route(f"{BASE}/chat/completions", ChatCompletionsHandler),
    route("/api/v1/mcp/serve", McpServeHandler),
]
