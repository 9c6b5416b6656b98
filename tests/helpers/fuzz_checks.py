"""Schemathesis hook module (SCHEMATHESIS_HOOKS): the server-error check for this API.

The spec answers its business errors (1001 agent not found, 1002 agent busy, 2001 LLM error,
3001 tool not found, 4001 channel error) with HTTP 500 and that code in the envelope; only those
are allowed. Any other 5xx (a bare `{"code":500,...}` or anything not in the envelope) fails.
"""
from __future__ import annotations

import json
from typing import Any

import schemathesis

BUSINESS_CODES = {1001, 1002, 2001, 3001, 4001}


@schemathesis.check
def no_server_error_but_business_codes(ctx: Any, response: Any, case: Any) -> bool | None:
    """5xx only for the spec's business error codes."""
    if response.status_code < 500:
        return None
    try:
        code = json.loads(response.content).get("code")
    except (ValueError, AttributeError):
        code = None
    if response.status_code == 500 and code in BUSINESS_CODES:
        return None
    raise AssertionError(f"Server error {response.status_code}: {response.content[:300]!r}")
