"""Each operation lists the statuses its handler answers: login's 401, conflicts' 409, writes' 507; a 404
only where something is looked up; an SSE stream only its 200 (errors are `error` frames).

The answers are noted per operation (platform_server.web.inputs.statuses); conftest.py holds the
document to every status the whole suite saw."""
from __future__ import annotations

from typing import Any

import pytest

from platform_server.app import collect_routes
from platform_server.web import inputs
from tests.helpers.client import ApiClient
from tests.helpers.openapi_inputs import unlisted_statuses
from tests.helpers.server import RunningServer

HUGE_MB = 1 << 40


def _codes(doc: dict[str, Any], method: str, template: str) -> set[str]:
    return set(doc["paths"][template][method.lower()]["responses"])


@pytest.mark.config(storage_check_s=0)
async def test_statuses_the_server_answers_are_listed_for_their_operation(server: RunningServer, api: ApiClient,
                                                                          people: dict) -> None:
    r = await api.post("/api/v1/auth/login", {"username": "bob", "password": "wrong-password"})
    assert r.status == 401
    skill = {"name": "twice", "description": "Made twice."}
    assert (await api.post("/api/v1/skills", skill, token="alice")).status == 200
    r = await api.post("/api/v1/skills", skill, token="alice")
    assert r.status == 409, r.body
    server.platform.storage.min_free_bytes = HUGE_MB << 20
    assert server.platform.storage.check() is False
    r = await api.post("/api/v1/agents", {"name": "Nope"}, token="alice")
    assert r.status == 507, r.body

    doc = (await api.get("/v3/api-docs")).body
    seen = {key: codes for key, codes in inputs.statuses().items() if key[0].__module__.startswith("platform_server.features")}
    assert unlisted_statuses(doc, collect_routes(), seen) == []
    assert "401" in _codes(doc, "POST", "/api/v1/auth/login")
    assert "409" in _codes(doc, "POST", "/api/v1/skills")
    assert "507" in _codes(doc, "POST", "/api/v1/agents")
    assert "507" not in _codes(doc, "GET", "/api/v1/agents")
    assert "404" not in _codes(doc, "GET", "/api/v1/agents")  # a list looks nothing up
    assert "404" in _codes(doc, "GET", "/api/v1/agents/{id}")
    assert _codes(doc, "POST", "/api/v1/chat/stream") == {"200"}  # errors arrive as `error` frames


async def test_a_status_answered_but_not_listed_is_reported(api: ApiClient) -> None:
    routes = collect_routes()
    doc = (await api.get("/v3/api-docs")).body
    agents = next(r.handler for r in routes if r.template == "/api/v1/agents")
    assert unlisted_statuses(doc, routes, {(agents, "GET"): {200, 404, 409}}) == [
        "GET /api/v1/agents: status 404",
        "GET /api/v1/agents: status 409",
    ]
