"""Inputs a new fuzz seed would find (audit of the channels, models, workflows, security, audit, chat, ... operations):
each test fails on the code before its fix."""

from __future__ import annotations

from typing import Any

from tests.helpers.chat import names
from tests.helpers.client import ApiClient


async def test_a_unicode_digit_is_no_id_anywhere_an_id_may_be_given_as_text(api: ApiClient, people: dict) -> None:
    """`'²'.isdigit()` is true and `int('²')` fails: each of these answered a 500."""
    r = await api.get("/api/v1/audit/events", params={"actor": "²"}, token="alice")  # a username, or a user id
    assert r.status == 200 and r.data["records"] == [], r.body
    r = await api.get("/api/v1/audit/events", params={"actor": str(people["alice"]["id"])}, token="alice")
    assert r.status == 200 and r.data["total"] >= 1, r.body  # an ASCII id still finds the user's events
    for kind in ("im_f", "im_a"):  # an unknown channel fails verification like a bad signature (never a 500)
        r = await api.request("POST", f"/api/v1/channels/webhook/{kind}", params={"channelId": "²"}, json_body={})
        assert 400 <= r.status < 500, (kind, r.status, r.body)
    r = await api.put("/api/v1/models/active", {"provider": "local", "modelName": "²"}, token="alice")
    assert r.status == 404, r.body
    wid = (await api.post("/api/v1/workflows", {"name": "Flow"}, token="alice")).data["id"]
    graph = {"nodes": [{"id": "start", "type": "start", "config": {}},
                       {"id": "a", "type": "agent", "config": {"agentId": "²", "message": "hi"}},
                       {"id": "end", "type": "end", "config": {}}],
             "edges": [{"from": "start", "to": "a"}, {"from": "a", "to": "end"}]}
    r = await api.post("/api/v1/workflows/draft/preview-compile", {"graph": graph}, token="alice")
    assert r.status == 200 and r.data["ok"] is False, r.body
    assert (await api.put(f"/api/v1/workflows/{wid}/draft", {"graph": graph}, token="alice")).status == 200


async def test_a_streams_last_event_id_is_the_stated_ascii_digits(api: ApiClient, people: dict) -> None:
    """lastEventId was any text in the document; the server read it with isdigit() (`'²'`: a 500 frame). The document
    now states the digits the server reads, and the server checks exactly that."""
    from tests.helpers.openapi_inputs import conforms

    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    body = {"agentId": "1", "message": "hi", "reconnect": True, "conversationId": "c1"}
    for value, valid in (("²", False), (" 1", False), ("12", True), ("", True)):
        assert conforms(doc, "ChatStreamRequest", {**body, "lastEventId": value}) is valid, value
        assert conforms(doc, "WebchatRequest", {"token": "t", "sessionId": "s", "lastEventId": value}) is valid, value
        events = await api.sse("POST", "/api/v1/chat/stream", {**body, "lastEventId": value}, token="alice")
        if valid:  # nothing runs in c1: the reconnect ends without an error
            assert "error" not in names(events), (value, events)
        else:
            assert names(events) == ["error"] and events[0].data["code"] == 400, (value, events)
