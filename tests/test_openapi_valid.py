"""The served document is valid OpenAPI 3.0: no 3.1-only `type: null` or `const`, checked by openapi-spec-validator."""

from __future__ import annotations

import json

from openapi_spec_validator import validate

from tests.helpers.client import ApiClient


async def test_the_served_document_validates_as_openapi_3_0(api: ApiClient, people: dict) -> None:
    res = await api.get("/v3/api-docs", token="alice")
    assert res.status == 200 and res.body["openapi"].startswith("3.0")
    text = json.dumps(res.body)
    assert '"type": "null"' not in text and '"const"' not in text
    validate(res.body)
