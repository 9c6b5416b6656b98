"""Every registered route answers 401/405/400 in the spec's error shape."""
from __future__ import annotations

import re

from platform_server.web.context import OPTIONAL, PUBLIC
from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer

ALL_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def concrete(template: str, value: str = "123") -> str:
    return re.sub(r"\{[^}]+\}", value, template)


async def test_protected_routes_answer_401_token_expired_or_invalid_without_a_token(server: RunningServer, api: ApiClient) -> None:
    checked = 0
    for r in server.platform.routes:
        for method in r.handler.implemented_methods():
            if r.handler.access.get(method) in (PUBLIC, OPTIONAL) and method not in r.handler.sse_methods:
                continue
            res = await api.request(method, concrete(r.template))
            if method in r.handler.sse_methods:
                assert res.status == 200, (method, r.template)
                assert b"event: error" in res.raw, (method, r.template, res.raw)
                continue
            assert res.status == 401, (method, r.template, res.status, res.body)
            if getattr(r.handler, "error_shape", None) == "openai":  # decisions.md "Client doors": the OpenAI error shape
                assert res.body["error"]["type"] == "authentication_error", (method, r.template, res.body)
                continue
            assert res.body == {"code": 401, "msg": "Token expired or invalid", "data": None}
            checked += 1
    assert checked > 10


async def test_a_wrong_method_answers_405_with_an_allow_header(server: RunningServer, api: ApiClient) -> None:
    for r in server.platform.routes:
        implemented = r.handler.implemented_methods()
        for method in ALL_METHODS:
            if method in implemented:
                continue
            res = await api.request(method, concrete(r.template))
            assert res.status == 405, (method, r.template, res.status)
            if getattr(r.handler, "error_shape", None) == "openai":
                assert res.body["error"]["code"] == "method_not_allowed", (method, r.template, res.body)
            else:
                assert res.body == {"code": 405, "msg": "Method not allowed", "data": None}
            assert set(res.headers["Allow"].split(", ")) == set(implemented)


async def test_a_non_numeric_long_path_parameter_answers_400(server: RunningServer, api: ApiClient, people: dict) -> None:
    checked = 0
    for r in server.platform.routes:
        names = re.findall(r"\{([^}]+)\}", r.template)
        longs = [n for n in names if n in r.long_params]
        if not longs:
            continue
        path = r.template
        for n in names:
            path = path.replace("{" + n + "}", "abc" if n == longs[0] else ("1" if n in r.long_params else "x"))
        for method in r.handler.implemented_methods():
            res = await api.request(method, path, token="alice")
            if method in r.handler.sse_methods:
                assert b"expected Long" in res.raw
                continue
            assert res.status == 400, (method, path, res.body)
            assert res.body["msg"] == f"Invalid value for parameter '{longs[0]}': expected Long"
            checked += 1
    assert checked > 5


async def test_an_unknown_route_answers_404_resource_not_found(api: ApiClient) -> None:
    for method in ALL_METHODS:
        res = await api.request(method, "/api/v1/does-not-exist")
        assert res.status == 404
        assert res.body == {"code": 404, "msg": "Resource not found", "data": None}


async def test_malformed_json_answers_400_and_validation_names_the_first_field(api: ApiClient, people: dict) -> None:
    res = await api.post("/api/v1/workspaces", data=b'{"name":', token="alice", headers={"Content-Type": "application/json"})
    assert res.status == 400 and res.body["code"] == 400
    res = await api.post("/api/v1/workspaces", {"name": ""}, token="alice")
    assert res.status == 400
    assert res.body["msg"].startswith("name: ")


async def test_the_openapi_document_lists_every_route_and_swagger_works_offline(server: RunningServer, api: ApiClient) -> None:
    res = await api.get("/v3/api-docs")
    assert res.status == 200
    paths = res.body["paths"]
    for r in server.platform.routes:
        for method in r.handler.implemented_methods():
            assert method.lower() in paths[r.template]
    page = await api.get("/swagger-ui.html")
    assert page.status == 200 and b"/static/vendor/swagger-ui/swagger-ui-bundle.js" in page.raw
    assert b"https://" not in page.raw
    bundle = await api.get("/static/vendor/swagger-ui/swagger-ui-bundle.js")
    assert bundle.status == 200 and len(bundle.raw) > 100_000


async def test_a_body_over_the_limit_is_refused_with_413(api: ApiClient, server: RunningServer) -> None:
    big = b"x" * (server.config.max_body_bytes + 10)
    res = await api.post("/api/v1/auth/login", data=big, headers={"Content-Type": "application/json"})
    assert res.status == 413
    assert res.body["code"] == 413
