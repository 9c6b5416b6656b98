"""Every operation's 200 answer is typed: envelope and page schemas per view model, ids as strings, and the
answers the suite receives match them (tests/helpers/answers.py checks each one)."""

from __future__ import annotations

import pytest

from tests.helpers import answers
from tests.helpers.client import ApiClient
from tests.helpers.untyped_answers import UNTYPED


async def _document(api: ApiClient) -> dict:
    res = await api.get("/v3/api-docs", token="alice")
    assert res.status == 200
    return res.body


def _answer(doc: dict, path: str, method: str) -> dict:
    return doc["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]


def _untyped(doc: dict) -> set[str]:
    return {
        op["operationId"]
        for ops in doc["paths"].values()
        for op in ops.values()
        if op["responses"]["200"].get("content", {}).get("application/json", {}).get("schema") == {"$ref": "#/components/schemas/R"}
    }


async def test_only_the_allow_listed_operations_still_answer_the_untyped_envelope(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    untyped = _untyped(doc)
    assert sorted(untyped - UNTYPED) == [], "operations that lost their typed answer"
    assert sorted(UNTYPED - untyped) == [], "typed now: take them off tests/helpers/untyped_answers.py"


async def test_agents_and_conversations_document_generic_envelopes_with_string_ids(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    schemas = doc["components"]["schemas"]
    assert _answer(doc, "/api/v1/agents", "get") == {"$ref": "#/components/schemas/R_List_AgentView"}
    assert _answer(doc, "/api/v1/agents/{id}", "get") == {"$ref": "#/components/schemas/R_AgentView"}
    assert _answer(doc, "/api/v1/conversations/page", "get") == {"$ref": "#/components/schemas/R_Page_ConversationView"}
    assert schemas["R_Page_ConversationView"]["properties"]["data"] == {"$ref": "#/components/schemas/Page_ConversationView"}
    agent = schemas["AgentView"]
    assert agent["additionalProperties"] is False and "id" in agent["required"]
    for name in ("id", "workspaceId", "creatorUserId", "primaryKbId", "templateId"):
        assert agent["properties"][name]["type"] == "string", name
    assert schemas["ConversationView"]["properties"]["agentId"]["type"] == "string"


async def test_an_answer_that_drifts_from_its_schema_fails_the_check(api: ApiClient, people: dict) -> None:
    created = await api.post("/api/v1/agents", {"name": "Typed", "tags": "a,b"}, token="alice")
    assert created.status == 200, created.body
    res = await api.get("/api/v1/agents", token="alice")  # checked on the way in: the real answer matches
    assert res.status == 200 and res.data and isinstance(res.data[0]["id"], str)
    drifted = {**res.body, "data": [{**res.data[0], "id": int(res.data[0]["id"])}]}
    with pytest.raises(AssertionError, match="agents_list answered outside its documented schema at data/0/id"):
        answers.check("GET", "/api/v1/agents", 200, drifted)
    grown = {**res.body, "data": [{**res.data[0], "secret": "x"}]}
    with pytest.raises(AssertionError, match="agents_list"):
        answers.check("GET", "/api/v1/agents?enabled=true", 200, grown)
    answers.check("GET", "/api/v1/agents", 200, res.body)  # the real one passes


async def test_an_answer_that_may_be_null_or_a_list_or_a_page_documents_both_and_checks_both(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    schemas = doc["components"]["schemas"]
    assert _answer(doc, "/api/v1/goals/by-conversation/{conversationId}", "get") == {"$ref": "#/components/schemas/R_Maybe_GoalView"}
    assert _answer(doc, "/api/v1/wiki/knowledge-bases/{kbId}/pages", "get") == {"$ref": "#/components/schemas/R_ListOrPage_WikiPageListedView"}
    # a nested `X | None` is X or a null branch: 3.0 validators read `nullable` only beside `type`
    nested = {"anyOf": [{"$ref": "#/components/schemas/GoalEvaluationView"}, {"nullable": True, "enum": [None]}]}
    assert schemas["GoalView"]["properties"]["lastEvaluation"] == nested
    answers.check("GET", "/api/v1/goals/by-conversation/c1", 200, {"code": 200, "msg": "ok", "data": None})
    with pytest.raises(AssertionError, match="goals_by_conversation_get"):
        answers.check("GET", "/api/v1/goals/by-conversation/c1", 200, {"code": 200, "msg": "ok", "data": {"id": 1}})
    page = {"records": [], "total": 0, "size": 20, "current": 1, "pages": 0}
    answers.check("GET", "/api/v1/wiki/knowledge-bases/1/pages", 200, {"code": 200, "msg": "ok", "data": page})
    answers.check("GET", "/api/v1/wiki/knowledge-bases/1/pages", 200, {"code": 200, "msg": "ok", "data": []})
    with pytest.raises(AssertionError, match="wiki_knowledge_bases_pages_list"):
        answers.check("GET", "/api/v1/wiki/knowledge-bases/1/pages", 200, {"code": 200, "msg": "ok", "data": {**page, "extra": 1}})


async def test_a_nullable_object_or_union_admits_null_as_its_own_branch(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    schemas = doc["components"]["schemas"]
    null = {"nullable": True, "enum": [None]}
    # 3.0's `nullable` beside a $ref or an anyOf admits no null: null is a branch of its own
    assert schemas["ActiveModelView"]["properties"]["activeLlm"]["anyOf"] == [{"$ref": "#/components/schemas/ActiveLlmView"}, null]
    assert _answer(doc, "/api/v1/models/default", "get") == {"$ref": "#/components/schemas/R_Maybe_ModelView"}
    assert null in schemas["ProviderView"]["properties"]["keepAlive"]["anyOf"]
    answers.check("GET", "/api/v1/models/active", 200, {"code": 200, "msg": "success", "data": {"activeLlm": None}})
    answers.check("GET", "/api/v1/models/default", 200, {"code": 200, "msg": "success", "data": None})
    with pytest.raises(AssertionError, match="models_active_list"):
        answers.check("GET", "/api/v1/models/active", 200, {"code": 200, "msg": "success", "data": {"activeLlm": 3}})
    res = await api.get("/api/v1/models/catalog", token="alice")  # Ollama's keepAlive is null until set
    assert res.status == 200 and any(p["keepAlive"] is None for p in res.data)


async def test_the_document_route_documents_the_document_not_an_envelope(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    schema = _answer(doc, "/v3/api-docs", "get")
    assert schema["required"] == ["openapi", "info", "paths", "components"] and "code" not in schema["properties"]
    assert set(doc) >= set(schema["required"])
