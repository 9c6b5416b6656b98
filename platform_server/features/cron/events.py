"""Event filters and message templates of triggers (pure functions).

Filter: a JSON object mapping paths to expected values, e.g. `{"repo.name": "web", "labels.0": "bug"}`.
A path is dot-separated keys into the event payload; a numeric segment indexes a list. Every entry
must hold (AND) and compare with JSON equality (`1` is not `"1"`); a missing path does not match.

Message template: `{{event.<path>}}` is replaced by the payload value at that path (strings as is,
other values as JSON, a missing path as nothing); `{{envelope.type}}`, `{{envelope.source}}` and
`{{envelope.id}}` give the envelope's fields. Substitution is one pass (a value that looks like a
placeholder stays text), each value loses control characters and is cut at 2,000 characters, and
the whole message at 20,000. A cron trigger renders with no event: every placeholder is empty.
"""

from __future__ import annotations

import json
import re
from typing import Any

from platform_server.web.errors import BadRequest

MAX_FILTER_ENTRIES = 20
MAX_VALUE_CHARS = 2_000
MAX_MESSAGE_CHARS = 20_000
_PLACEHOLDER = re.compile(r"\{\{\s*(event|envelope)\.([A-Za-z0-9_.\-$@]{1,300})\s*\}\}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_filter(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if not value:
        return None
    if len(value) > MAX_FILTER_ENTRIES:
        raise BadRequest(f"filter: at most {MAX_FILTER_ENTRIES} entries")
    # any key is a path (split at dots, matched exactly: one naming nothing never matches), as the document can say:
    # OpenAPI 3.0 has no rule for an object's keys
    for path, expected in value.items():
        if isinstance(expected, str) and len(expected) > MAX_VALUE_CHARS:
            raise BadRequest(f"filter: the value of '{path}' is longer than {MAX_VALUE_CHARS} characters")
    return dict(value)


_MISSING = object()


def lookup(payload: Any, path: str) -> Any:
    """The value at a dot path (numeric segments index lists), or _MISSING."""
    node = payload
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(actual, (int, float)) and isinstance(expected, (int, float)):
        return actual == expected
    return type(actual) is type(expected) and actual == expected


def mismatch(filter_: dict[str, Any] | None, payload: dict[str, Any]) -> str | None:
    """Why the payload fails the filter, or None when it matches."""
    for path, expected in (filter_ or {}).items():
        actual = lookup(payload, path)
        if actual is _MISSING:
            return f"filter: '{path}' is missing from the payload"
        if not _same(actual, expected):
            return f"filter: '{path}' does not equal {json.dumps(expected)[:100]}"
    return None


def _text(value: Any) -> str:
    if value is _MISSING or value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return _CONTROL.sub("", text)[:MAX_VALUE_CHARS]


def render(template: str, envelope: Any | None) -> str:
    """The message with placeholders filled from the event (empty for a cron trigger)."""

    def fill(match: re.Match[str]) -> str:
        if envelope is None:
            return ""
        scope, path = match.group(1), match.group(2)
        if scope == "envelope":
            return _text({"type": envelope.type, "source": envelope.source, "id": envelope.id}.get(path, _MISSING))
        return _text(lookup(envelope.payload, path))

    return _PLACEHOLDER.sub(fill, template)[:MAX_MESSAGE_CHARS]
