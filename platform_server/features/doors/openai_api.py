"""The OpenAI Chat Completions shapes: models, completions, stream chunks, errors (decisions.md "Client doors")."""

from __future__ import annotations

import secrets
import time
from typing import Any

from platform_server.features.agents.models import Agent
from platform_server.features.doors import agents_door
from platform_server.features.doors.schemas import ChatCompletionRequest, ChatMessageIn
from platform_server.web.encode import dumps
from platform_server.web.errors import ApiError, BadRequest

SOURCE = "openai_api"  # the conversations' source and the usage source of their turns
THREAD_HEADERS = ("X-Conversation-Id", "X-OpenWebUI-Chat-Id")  # a client's own thread id, first found wins

_TYPES = {
    400: ("invalid_request_error", None),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("invalid_request_error", "model_not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    409: ("invalid_request_error", "conversation_busy"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def error_body(error: ApiError) -> tuple[int, dict[str, Any]]:
    """The HTTP status and `{"error": {message, type, param, code}}` of one of the project's errors."""
    status = error.http_status
    if error.code == 1002:  # AgentBusy: a turn of this conversation still runs
        status = 409
    elif error.code == 1001:  # AgentNotFound
        status = 404
    kind, code = _TYPES.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
    if status == 404 and not isinstance(error, agents_door.ModelNotFound) and error.code != 1001:
        code = "not_found"
    param = error.msg.split(":", 1)[0] if status == 400 and ":" in error.msg and " " not in error.msg.split(":", 1)[0] else None
    return status, {"error": {"message": error.msg, "type": kind, "param": param, "code": code}}


def models(rows: list[Agent]) -> dict[str, Any]:
    return {"object": "list", "data": [model(a) for a in rows]}


def model(agent: Agent) -> dict[str, Any]:
    created = int(agent.create_time.timestamp()) if getattr(agent, "create_time", None) else 0
    return {
        "id": agents_door.model_id(agent),
        "object": "model",
        "created": created,
        "owned_by": f"workspace-{agent.workspace_id}",
        "name": agent.name,
    }


def text_of(message: ChatMessageIn) -> str:
    if isinstance(message.content, str):
        return message.content
    return "\n".join(str(p.get("text") or "") for p in message.content or [] if p.get("type") in ("text", "input_text"))


def new_message(req: ChatCompletionRequest) -> tuple[str, list[dict[str, Any]] | None]:
    """The client re-sends the whole history; only its last message, a user's, is new (the rest is stored).

    Its text, and its parts when it carries images (`image_url` parts become the runtime's image parts: data URLs
    only, checked by the chat runtime as any upload)."""
    last = req.messages[-1]
    if last.role != "user":
        raise BadRequest("messages: the last message must be the user's new message")
    text = text_of(last)
    images = [p for p in last.content if p.get("type") == "image_url"] if isinstance(last.content, list) else []
    if not images:
        if not text.strip():
            raise BadRequest("messages: the last user message has no text")
        return text, None
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
    for part in images:
        given = part.get("image_url")
        url = given.get("url") if isinstance(given, dict) else given
        if not isinstance(url, str) or not url:
            raise BadRequest("messages: an image_url part needs a url")
        parts.append({"type": "image", "url": url})
    return text, parts


def thread_key(req: ChatCompletionRequest, headers: dict[str, str | None], agent_id: int) -> str:
    """What maps a client's thread to one conversation: its thread header, else `user`, else the thread's opening
    (agent and first user message: a client that names no thread still continues its own)."""
    for name in THREAD_HEADERS:
        value = (headers.get(name) or "").strip()
        if value:
            return f"thread:{value}"
    if req.user and req.user.strip():
        return f"user:{req.user.strip()}"
    first = next((text_of(m) for m in req.messages if m.role == "user"), "")
    return f"opening:{agent_id}:{first}"


class Completion:
    """One answer's ids and the shapes it is written in."""

    def __init__(self, model_name: str) -> None:
        self.id = "chatcmpl-" + secrets.token_hex(12)
        self.created = int(time.time())
        self.model = model_name

    def usage(self, outcome: agents_door.Outcome) -> dict[str, int]:
        return {
            "prompt_tokens": outcome.prompt_tokens,
            "completion_tokens": outcome.completion_tokens,
            "total_tokens": outcome.prompt_tokens + outcome.completion_tokens,
        }

    def whole(self, outcome: agents_door.Outcome) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": outcome.text}, "finish_reason": "stop", "logprobs": None}],
            "usage": self.usage(outcome),
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model, "choices": [choice]}

    def usage_chunk(self, outcome: agents_door.Outcome) -> dict[str, Any]:
        """The last chunk when `stream_options.include_usage`: no choices, the usage."""
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": self.usage(outcome),
        }


def data(body: dict[str, Any]) -> str:
    """One frame of an OpenAI stream: `data: <json>` (no event names; the stream ends with `data: [DONE]`)."""
    return f"data: {dumps(body)}\n\n"


# The OpenAPI document of the door (web/openapi.py takes a handler's `openapi_responses` and `openapi_schemas`).
DOCUMENTED_ERRORS = {
    400: "Invalid request (`invalid_request_error`)",
    401: "Missing or invalid token (`authentication_error`)",
    403: "Not a member of the workspace named by X-Workspace-Id (`permission_error`)",
    404: "Unknown model, or an agent the caller may not chat with (`model_not_found`)",
    409: "A turn of this conversation is still running (`conversation_busy`)",
    413: "Request body too large",
    502: "The agent's model call failed",
    503: "Busy or timed out, retry",
}
OPENAPI_SCHEMAS: dict[str, Any] = {
    "OpenAiError": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type"],
                "properties": {
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "param": {"type": "string", "nullable": True},
                    "code": {"type": "string", "nullable": True},
                },
            }
        },
    },
}
MODEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "object", "created", "owned_by"],
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string"},
        "created": {"type": "integer"},
        "owned_by": {"type": "string"},
        "name": {"type": "string"},
    },
}
MODELS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["object", "data"],
    "properties": {"object": {"type": "string"}, "data": {"type": "array", "items": MODEL_SCHEMA}},
}
COMPLETION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "`chat.completion`; with `stream: true` the answer is text/event-stream of `chat.completion.chunk` then `data: [DONE]`",
    "required": ["id", "object", "choices"],
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string"},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "object"}},
        "usage": {"type": "object"},
    },
}
