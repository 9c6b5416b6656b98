"""SSE operations document each event kind they send, and the suite's SSE reader holds every frame to that document."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import sse_frames
from tests.helpers.chat import ChatEnv, names
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedToolCall

SSE_OPERATIONS = {
    ("post", "/api/v1/chat/stream"),
    ("get", "/api/v1/agents/{id}/chat/stream"),
    ("post", "/api/v1/channels/webchat/stream"),
    ("get", "/api/v1/teams/{teamId}/events"),
    ("get", "/api/v1/wiki/research/stream/{sessionId}"),
    ("get", "/api/v1/wiki/knowledge-bases/{kbId}/progress"),
    ("get", "/api/v1/memory/{agentId}/dream/events"),
}


async def _document(api: ApiClient) -> dict[str, Any]:
    res = await api.get("/v3/api-docs", token="alice")
    assert res.status == 200
    return res.body


def _stream_schema(doc: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    ref = doc["paths"][path][method]["responses"]["200"]["content"]["text/event-stream"]["schema"]["$ref"]
    return doc["components"]["schemas"][ref.rsplit("/", 1)[-1]]


async def test_every_sse_operation_documents_a_oneof_of_its_event_frames_with_a_discriminator_on_the_event_name(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    schemas = doc["components"]["schemas"]
    streamed = {
        (method, path) for path, ops in doc["paths"].items() for method, op in ops.items() if "text/event-stream" in op["responses"]["200"]["content"]
    }
    assert SSE_OPERATIONS <= streamed
    assert "SseEvent" not in schemas  # the generic {event, data: string} schema is gone
    for method, path in SSE_OPERATIONS:
        union = _stream_schema(doc, method, path)
        mapping = union["discriminator"]["mapping"]
        assert union["discriminator"]["propertyName"] == "event"
        assert sorted(b["$ref"] for b in union["oneOf"]) == sorted(mapping.values())
        assert {"error", "heartbeat"} <= set(mapping)
        for event, ref in mapping.items():
            frame = schemas[ref.rsplit("/", 1)[-1]]
            assert frame["properties"]["event"] == {"type": "string", "enum": [event]}  # 3.0.3: a one-value enum, no const
            assert frame["required"] == ["event", "data"] and frame["additionalProperties"] is False
            data = schemas[frame["properties"]["data"]["$ref"].rsplit("/", 1)[-1]]
            assert data.get("additionalProperties") is False  # a field the model lacks is refused
        assert set(doc["paths"][path][method]["responses"]) == {"200"}  # a refused request is a 200 with one `error` frame


async def test_the_chat_stream_documents_the_turn_events_with_their_fields(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    schemas = doc["components"]["schemas"]
    mapping = _stream_schema(doc, "post", "/api/v1/chat/stream")["discriminator"]["mapping"]
    for event in ("meta", "phase", "content_delta", "thinking_delta", "tool_call_started", "tool_call_completed", "message_complete", "done"):
        assert event in mapping
    done = schemas[schemas[mapping["done"].rsplit("/", 1)[-1]]["properties"]["data"]["$ref"].rsplit("/", 1)[-1]]
    assert {"conversationId", "status", "finishReason", "promptTokens", "messageCount"} <= set(done["properties"])
    assert done["required"] == ["conversationId", "status"]
    delta = schemas[schemas[mapping["content_delta"].rsplit("/", 1)[-1]]["properties"]["data"]["$ref"].rsplit("/", 1)[-1]]
    assert delta["properties"] == {"delta": {"title": "Delta", "type": "string"}} and delta["required"] == ["delta"]


async def test_the_suite_reader_refuses_an_undocumented_event_and_a_field_the_model_lacks(env: ChatEnv) -> None:
    await env.api.get("/v3/api-docs")  # the reader's document is loaded
    assert sse_frames.loaded()
    path = "/api/v1/chat/stream"
    sse_frames.check("POST", path, "content_delta", {"delta": "Hi"}, "7")
    with pytest.raises(AssertionError, match="undocumented event `delta`"):
        sse_frames.check("POST", path, "delta", {"delta": "Hi"}, "7")
    with pytest.raises(AssertionError, match="outside its documented schema"):
        sse_frames.check("POST", path, "content_delta", {"delta": "Hi", "extra": 1}, "7")
    with pytest.raises(AssertionError, match="outside its documented schema"):
        sse_frames.check("POST", path, "meta", {"conversationId": "c1"}, None)  # agentId, userMessageId missing
    with pytest.raises(AssertionError, match="outside its documented schema"):
        sse_frames.check("GET", "/api/v1/teams/5/events", "team_run_running", {"teamId": 5}, None)


async def test_a_turn_with_a_tool_call_sends_only_documented_frames(env: ChatEnv) -> None:
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("get_current_time", {})]))
    env.llm.enqueue(Script(text=["It is ", "now."]))
    events = await env.stream("what time is it?")  # the reader checks each frame against the document
    assert {"meta", "phase", "tool_call_started", "tool_call_completed", "content_delta", "message_complete", "done"} <= set(names(events))
    replay = await env.api.sse("POST", "/api/v1/chat/stream", {"conversationId": "c-none", "reconnect": True}, token="alice")
    assert [(e.event, e.data) for e in replay] == [("done", {"conversationId": "c-none", "status": "completed"})]


def test_an_sse_method_that_declares_no_events_cannot_be_documented() -> None:
    from platform_server.web.base import ApiHandler
    from platform_server.web.openapi import build_document
    from platform_server.web.routing import route

    class Undeclared(ApiHandler):
        access = {"GET": "viewer"}
        sse_methods = frozenset({"GET"})

        async def get(self) -> None:
            """A stream that says nothing of its events."""

    with pytest.raises(TypeError, match="Undeclared.get answers text/event-stream but declares no `events`"):
        build_document([route("/api/v1/undeclared", Undeclared)])
