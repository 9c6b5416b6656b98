"""Every input a handler reads is stated by its operation in the served document.

The parsing helpers note what each operation reads (platform_server.web.inputs, on while tests run);
tests/helpers/openapi_inputs.undocumented compares it with the document. These tests drive inputs the
document once left out; conftest.py repeats the comparison over everything the whole suite read, so a
handler that starts reading a new input without documenting it fails the run.
"""
from __future__ import annotations

from typing import Any

import aiohttp

from platform_server.app import collect_routes
from platform_server.ids import CONVERSATION_ID_PATTERN
from platform_server.web import inputs
from platform_server.web.base import ApiHandler
from platform_server.web.context import PUBLIC
from platform_server.web.openapi import build_document
from platform_server.web.routing import route
from tests.helpers.client import ApiClient
from tests.helpers.openapi_inputs import undocumented
from tests.helpers.server import RunningServer


def _op(doc: dict[str, Any], method: str, template: str) -> dict[str, Any]:
    op: dict[str, Any] = doc["paths"][template][method.lower()]
    return op


async def test_inputs_the_handlers_read_are_in_the_document(server: RunningServer, api: ApiClient, people: dict) -> None:
    assert inputs.RECORDING  # conftest turns it on
    res = await api.put(f"/api/v1/auth/users/{people['bob']['id']}/password", token="bob",
                        params={"oldPassword": "nope-nope", "newPassword": "new-password-1"})
    assert res.status == 403 and "oldPassword" in res.body["msg"]  # well formed: the account refuses it
    made = await api.post("/api/v1/agents", {"name": "Docs"}, token="alice")
    assert made.status == 200, made.body
    agent_id = made.body["data"]["id"]
    res = await api.put(f"/api/v1/agents/{agent_id}/kbs", [], token="alice")
    assert res.status == 200, res.body
    form = aiohttp.FormData()
    form.add_field("conversationId", "c1")
    form.add_field("file", b"hello", filename="a.txt", content_type="text/plain")
    res = await api.post("/api/v1/chat/upload", data=form, token="alice")
    assert res.status == 200, res.body
    res = await api.post("/api/v1/channels/webhook/im_e", {"update_id": 1}, params={"channelId": "1"})
    assert res.status in (401, 403, 404), res.body  # no such channel: refused like a bad signature

    doc = (await api.get("/v3/api-docs")).body
    read = {key: value for key, value in inputs.seen().items() if key[0].__module__.startswith("platform_server.features")}
    assert undocumented(doc, collect_routes(), read) == []
    password = _op(doc, "PUT", "/api/v1/auth/users/{id}/password")
    required = {p["name"] for p in password["parameters"] if p.get("required") and p["in"] == "query"}
    assert required == {"oldPassword", "newPassword"}
    kbs = _op(doc, "PUT", "/api/v1/agents/{agentId}/kbs")["requestBody"]["content"]["application/json"]["schema"]
    assert kbs["type"] == "array" and kbs["maxItems"] == 200
    upload = _op(doc, "POST", "/api/v1/chat/upload")["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert upload["properties"]["file"] == {"type": "string", "format": "binary", "description": "The attachment"}
    assert "file" in upload["required"]
    assert upload["properties"]["conversationId"]["pattern"] == CONVERSATION_ID_PATTERN
    hook = _op(doc, "POST", "/api/v1/channels/webhook/im_e")
    assert "application/json" in hook["requestBody"]["content"]
    assert any(p["name"] == "channelId" and p["required"] for p in hook["parameters"])


class _Undeclared(ApiHandler):
    access = {"GET": PUBLIC, "POST": PUBLIC}

    def get(self) -> None:
        """Reads a query parameter it does not declare."""
        self.ok(self.get_query_argument("secretFilter", None))

    async def post(self) -> None:
        """Reads a form body it does not declare."""
        await self.multipart()
        self.ok(None)


async def test_an_input_read_but_not_documented_is_reported(server: RunningServer, api: ApiClient) -> None:
    server.add_route("/api/v1/test-undeclared", _Undeclared)
    assert (await api.get("/api/v1/test-undeclared", params={"secretFilter": "x"})).status == 200
    form = aiohttp.FormData()
    form.add_field("file", b"x", filename="x.txt")
    posted = await api.post("/api/v1/test-undeclared", data=form)
    assert posted.status == 200, posted.body
    routes = [route("/api/v1/test-undeclared", _Undeclared)]
    read = {key: value for key, value in inputs.seen().items() if key[0] is _Undeclared}
    assert undocumented(build_document(routes), routes, read) == [
        "GET /api/v1/test-undeclared: query parameter 'secretFilter'",
        "POST /api/v1/test-undeclared: form body",
    ]


def _param_schema(doc: dict[str, Any], method: str, template: str, name: str) -> dict[str, Any]:
    schema: dict[str, Any] = next(p["schema"] for p in _op(doc, method, template)["parameters"] if p["name"] == name)
    return schema


async def test_the_values_the_server_refuses_are_outside_the_documented_schema(api: ApiClient, people: dict) -> None:
    """Each value the server answers 400 for is one the document already rules out: a client (or schemathesis'
    valid-input check) sending only what the document allows is never refused."""
    doc = (await api.get("/v3/api-docs")).body
    feed_kinds = ["audit", "approval", "tool_call"]
    assert _param_schema(doc, "GET", "/api/v1/activity/feed", "kind")["enum"] == feed_kinds
    assert _param_schema(doc, "GET", "/api/v1/activity/feed", "source")["enum"] == feed_kinds
    skill_types = ["builtin", "custom", "installed", "synthesized", "template"]
    assert _param_schema(doc, "GET", "/api/v1/skills", "type")["enum"] == skill_types
    assert _param_schema(doc, "GET", "/api/v1/skills", "skillType")["enum"] == skill_types
    run_states = ["running", "completed", "failed", "cancelled"]
    assert _param_schema(doc, "GET", "/api/v1/wiki/transformations/runs", "status")["enum"] == run_states
    related = _param_schema(doc, "GET", "/api/v1/wiki/kb/{kbId}/pages/{slug}/related", "limit")
    assert (related["type"], related["minimum"], related["maximum"]) == ("integer", 1, 50)
    runs = _param_schema(doc, "GET", "/api/v1/wiki/knowledge-bases/{kbId}/pipelines/{id}/runs", "limit")
    assert (runs["type"], runs["minimum"], runs["maximum"]) == ("integer", 1, 500)
    for kind, status in (("nope", 400), ("tool_call", 200)):
        assert (await api.get("/api/v1/activity/feed", params={"kind": kind}, token="alice")).status == status
    # A grant's kind and its other fields: only the valid pairs are in the body's schema
    body = _op(doc, "POST", "/api/v1/approval/grants")["requestBody"]["content"]["application/json"]["schema"]
    grant = doc["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]] if "$ref" in body else body
    pairs = {tuple(b["properties"]["grantKind"]["enum"]): b for b in grant["anyOf"]}
    assert pairs[("UNTIL_CONVERSATION_END",)]["properties"]["scopeType"]["enum"] == ["CONVERSATION"]
    assert pairs[("UNTIL_TIMESTAMP",)]["required"] == ["expireAt"]
    assert pairs[("UNTIL_TIMESTAMP",)]["properties"]["expireAt"]["format"] == "date-time"
    assert grant["properties"]["maxSeverity"]["enum"] == ["low", "medium", "high"]  # critical calls always ask
    assert {(b["type"], b.get("minLength")) for b in grant["properties"]["scopeId"]["anyOf"]} == {("string", 1), ("integer", None)}


async def test_bodies_state_their_at_least_one_rules(api: ApiClient, people: dict) -> None:
    """A rename names a new slug or title, a batch delete a slug or id, a team a member: the schema says so."""
    doc = (await api.get("/v3/api-docs")).body
    schemas = doc["components"]["schemas"]

    def body(method: str, template: str) -> dict[str, Any]:
        schema: dict[str, Any] = _op(doc, method, template)["requestBody"]["content"]["application/json"]["schema"]
        return schemas[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema

    rename = body("POST", "/api/v1/wiki/knowledge-bases/{kbId}/pages/{slug}/rename")
    assert [b["required"] for b in rename["anyOf"]] == [["newSlug"], ["newTitle"]]
    batch = body("DELETE", "/api/v1/wiki/knowledge-bases/{kbId}/pages/batch")
    assert [b["required"] for b in batch["anyOf"]] == [["slugs"], ["ids"]]
    assert body("POST", "/api/v1/teams")["properties"]["memberAgentIds"]["minItems"] == 1


async def test_downloads_document_the_content_types_they_send(api: ApiClient, people: dict) -> None:
    doc = (await api.get("/v3/api-docs")).body
    export = _op(doc, "GET", "/api/v1/agents/{agentId}/workspace/memory/export")["responses"]["200"]["content"]
    assert list(export) == ["application/zip"] and export["application/zip"]["schema"] == {"type": "string", "format": "binary"}
    files = _op(doc, "GET", "/api/v1/agents/{agentId}/workspace/files/{path}")["responses"]["200"]["content"]
    assert {"text/plain", "application/octet-stream", "image/png"} <= set(files)
    # the export sends application/zip (workspace_handlers.MemoryExportHandler; tests/test_agent_files reads its bytes)


async def test_a_cron_job_s_agent_id_is_documented_as_a_long(api: ApiClient, people: dict) -> None:
    doc = (await api.get("/v3/api-docs")).body
    schema = _op(doc, "POST", "/api/v1/cron-jobs")["requestBody"]["content"]["application/json"]["schema"]
    body = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema
    text = next(b for b in body["properties"]["agentId"]["anyOf"] if b["type"] == "string")
    from platform_server.ids import PY_SPACES

    # "abc" is refused as "expected Long": the document says so (the spaces strip() removes around it)
    assert text["pattern"] == f"^[{PY_SPACES}]*-?[0-9]{{1,18}}[{PY_SPACES}]*$"
    trigger = _op(doc, "POST", "/api/v1/triggers")["requestBody"]["content"]["application/json"]["schema"]
    trigger = doc["components"]["schemas"][trigger["$ref"].rsplit("/", 1)[1]] if "$ref" in trigger else trigger
    assert any(b.get("pattern") == text["pattern"] for b in trigger["properties"]["agentId"]["anyOf"])
