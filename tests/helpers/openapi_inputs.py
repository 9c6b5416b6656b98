"""Compare what the handlers read (platform_server.web.inputs, noted while tests run) with the OpenAPI document."""
from __future__ import annotations

from typing import Any

import jsonschema

from platform_server.web import inputs
from platform_server.web.routing import Route

_FORMS = {"multipart/form-data", "application/x-www-form-urlencoded"}


def undocumented(document: dict[str, Any], routes: list[Route],
                 seen: dict[tuple[type, str], set[tuple[str, str]]] | None = None) -> list[str]:
    """One line per input an operation read that its operation in `document` does not state."""
    templates: dict[type, list[str]] = {}
    for r in routes:
        templates.setdefault(r.handler, []).append(r.template)
    problems: list[str] = []
    for (handler, method), reads in sorted((seen if seen is not None else inputs.seen()).items(),
                                           key=lambda item: (item[0][0].__qualname__, item[0][1])):
        for template in templates.get(handler, []):  # a test-only route (server.add_route) is not documented
            op = document["paths"].get(template, {}).get(method.lower())
            if op is None:
                continue
            query = {p["name"] for p in op.get("parameters", []) if p.get("in") == "query"}
            content = set(op.get("requestBody", {}).get("content", {}))
            for where, name in sorted(reads):
                if where == inputs.QUERY and name not in query:
                    problems.append(f"{method} {template}: query parameter {name!r}")
                elif where == inputs.JSON and "application/json" not in content:
                    problems.append(f"{method} {template}: JSON body")
                elif where == inputs.FORM and not content & _FORMS:
                    problems.append(f"{method} {template}: form body")
                elif where == inputs.RAW and not content:
                    problems.append(f"{method} {template}: request body")
    return problems


def unlisted_statuses(document: dict[str, Any], routes: list[Route],
                      seen: dict[tuple[type, str], set[int]] | None = None) -> list[str]:
    """One line per status an operation answered that its responses in `document` do not list."""
    templates: dict[type, list[str]] = {}
    for r in routes:
        templates.setdefault(r.handler, []).append(r.template)
    problems: list[str] = []
    for (handler, method), codes in sorted((seen if seen is not None else inputs.statuses()).items(),
                                           key=lambda item: (item[0][0].__qualname__, item[0][1])):
        for template in templates.get(handler, []):
            op = document["paths"].get(template, {}).get(method.lower())
            if op is None:
                continue
            for code in sorted(codes):
                if str(code) not in op["responses"] and "default" not in op["responses"]:
                    problems.append(f"{method} {template}: status {code}")
    return problems


def _as_json_schema(node: Any) -> Any:
    """OpenAPI 3.0's `nullable: true` as JSON Schema's null type (null also joins a nullable enum's values)."""
    if isinstance(node, list):
        return [_as_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _as_json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def conforms(document: dict[str, Any], schema_name: str, body: Any) -> bool:
    """Whether the body is valid for the document's component schema (what a generated client or the fuzzer allows)."""
    root = _as_json_schema(document)  # the whole document is the root, so its `#/components/...` references resolve
    return jsonschema.Draft7Validator({**root, "$ref": f"#/components/schemas/{schema_name}"}).is_valid(body)
