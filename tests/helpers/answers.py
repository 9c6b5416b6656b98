"""Every JSON answer the suite receives is checked against the operation's documented 200 schema.

The view models in the document only document (hot routes keep their plain dict builders); this check is what
keeps them honest: a 200 whose body breaks its typed schema fails the test that received it. Operations still
documented with the untyped envelope `R` pass (tests/test_openapi_answers.py lists them, and that list shrinks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from openapi_schema_validator import OAS30Validator

from tests.helpers import sse_frames


@dataclass
class _Operation:
    pattern: re.Pattern[str]
    params: int
    method: str
    operation_id: str
    validator: OAS30Validator | None  # None: untyped (or not JSON), nothing to check yet


_operations: list[_Operation] | None = None


def _compile(doc: dict[str, Any]) -> list[_Operation]:
    ops: list[_Operation] = []
    components = doc.get("components", {})
    for template, methods in doc.get("paths", {}).items():
        regex = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
        for method, op in methods.items():
            schema = op.get("responses", {}).get("200", {}).get("content", {}).get("application/json", {}).get("schema")
            # untyped operations are kept too: `/models/catalog` must not be taken for `/models/{id}`
            validator = None if not schema or schema == {"$ref": "#/components/schemas/R"} else OAS30Validator({**schema, "components": components})
            ops.append(_Operation(re.compile(regex), template.count("{"), method.upper(), op["operationId"], validator))
    ops.sort(key=lambda o: o.params)  # a literal segment wins over a parameter (/agents/generate, /agents/{id})
    return ops


async def load(session: Any, base_url: str) -> None:
    """Read the served document once per test session."""
    global _operations
    if _operations is None:
        async with session.get(base_url + "/v3/api-docs") as r:
            if r.status == 200:  # a server without the document (a test's config): try the next one
                doc = await r.json()
                _operations = _compile(doc)
                sse_frames.compile_document(doc)  # and every SSE frame matches its documented event


def check(method: str, path: str, status: int, body: Any) -> None:
    """Fail on a 200 JSON answer that its operation's typed schema does not accept."""
    if status != 200 or not isinstance(body, dict) or body.get("code") != 200 or _operations is None:
        return
    path = path.split("?", 1)[0]
    for op in _operations:
        if op.method == method.upper() and op.pattern.match(path):
            if op.validator is None:
                return
            errors = sorted(op.validator.iter_errors(body), key=lambda e: list(e.absolute_path))
            if errors:
                where = "/".join(str(p) for p in errors[0].absolute_path)
                raise AssertionError(f"{op.operation_id} answered outside its documented schema at {where}: {errors[0].message[:400]}")
            return
