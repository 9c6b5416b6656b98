"""Every operation has its own stable operationId, and no body schema is overwritten by a same-named one."""

from __future__ import annotations

from collections import Counter

from tests.helpers.client import ApiClient


async def _document(api: ApiClient) -> dict:
    res = await api.get("/v3/api-docs", token="alice")
    assert res.status == 200
    return res.body


async def test_no_two_operations_share_an_operation_id(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    ids = Counter(op["operationId"] for ops in doc["paths"].values() for op in ops.values())
    assert [i for i, n in ids.items() if n > 1] == []
    assert doc["paths"]["/api/v1/agents"]["get"]["operationId"] == "agents_list"
    assert doc["paths"]["/api/v1/agents"]["post"]["operationId"] == "agents_create"


async def test_generate_agent_documents_the_requirement_body_it_reads(api: ApiClient, people: dict) -> None:
    doc = await _document(api)
    ref = doc["paths"]["/api/v1/agents/generate"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = doc["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert "requirement" in body["properties"], body
