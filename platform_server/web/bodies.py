"""Request bodies before a handler sees them: the JSON parse with its depth limit, the size of headers, the
HTTP layer's body ceiling, and the spec's `<field>: <message>` for a validation error."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

import pydantic
import tornado.httputil

from platform_server.web.errors import BadRequest

if TYPE_CHECKING:
    from platform_server.config import Config


_PATTERN_HINTS: dict[str, str] = {}


def explained(pattern: str, hint: str) -> str:
    """A request model's regex with what it means for people: a value that does not match is refused with
    `<field>: <hint>` instead of the regex itself. Returns the pattern (declare it with this)."""
    _PATTERN_HINTS[pattern] = hint
    return pattern


def first_validation_error(exc: pydantic.ValidationError) -> str:
    """`<field>: <message>` for the first field error, as the spec wants."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or "body"
    msg = err.get("msg", "invalid value")
    if err.get("type") == "string_pattern_mismatch":
        msg = _PATTERN_HINTS.get(str((err.get("ctx") or {}).get("pattern")), msg)
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"{loc}: {msg}"


MAX_JSON_DEPTH = 64  # deeper documents are refused before anything recurses over them
# A JSON body this large is parsed in a worker thread before the handler runs: four 9.6 MB login
# bodies parsed on the IOLoop stalled every client for 2.3 s.
JSON_OFF_LOOP_BYTES = 64 * 1024


def header_bytes(request: tornado.httputil.HTTPServerRequest) -> int:
    """About how many bytes the request line and headers took on the wire."""
    size = len(request.method or "") + len(request.uri or "") + 12
    for name, value in request.headers.get_all():
        size += len(name) + len(value) + 4
    return size


def body_ceiling(config: Config) -> int:
    """The HTTP layer's own body limit, above every route's: past it the request never reaches a route."""
    return max(config.max_body_bytes, config.upload_max_bytes, config.public_message_max_body_bytes) * 2


def parse_json(chunks: list[bytes]) -> object:
    """The body parsed and depth-checked (or the error to raise when a handler asks for it)."""
    raw = b"".join(chunks)
    try:
        return decode_json(raw)
    except BadRequest as exc:
        return exc


def decode_json(raw: bytes) -> object:
    if not raw:  # no body: {}; a body of spaces is no JSON text (a 400, as the document's JSON body says)
        return {}
    try:
        data = json.loads(raw)
    except RecursionError:
        raise BadRequest(f"JSON request body is nested too deeply (at most {MAX_JSON_DEPTH} levels)") from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("Malformed JSON request body")
    if json_depth(data) > MAX_JSON_DEPTH:
        raise BadRequest(f"JSON request body is nested too deeply (at most {MAX_JSON_DEPTH} levels)")
    return data


def json_depth(value: object) -> int:
    """How deeply a parsed JSON value nests (iteratively: no recursion limit to hit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            items: Iterable[object] = item.values()
        elif isinstance(item, list):
            items = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, depth + 1) for child in items)
    return deepest


def _takes_bool(annotation: object) -> bool:
    """Whether a field's type is `bool` or `bool | None` (the document says `boolean` for both)."""
    if annotation is bool:
        return True
    args = getattr(annotation, "__args__", ())
    return bool(args) and bool in args and all(a is bool or a is type(None) for a in args)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def check_int64(value: object, where: str = "") -> None:
    """400 for an integer of a request model beyond 64 bits: the document states every body integer as an int64
    (web.openapi.int64_bounds), the database stores no larger one. Free-form objects (dict fields) are not typed."""
    if isinstance(value, pydantic.BaseModel):
        for name, field in type(value).model_fields.items():
            check_int64(getattr(value, name), f"{where}{field.alias or name}.")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_int64(item, f"{where}{index}.")
    elif isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        raise BadRequest(f"{where.rstrip('.')}: must be a 64-bit integer")


M = TypeVar("M", bound=pydantic.BaseModel)


def validated(model: type[M], data: object) -> M:
    """`data` as the request model, or the spec's 400 `<field>: <message>` (an int beyond 64 bits included)."""
    try:
        parsed = model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise BadRequest(first_validation_error(exc))
    check_int64(parsed)
    return parsed


def check_booleans(model: type[pydantic.BaseModel], data: dict[str, object]) -> None:
    """400 for a boolean field given anything but true/false (or null where allowed): pydantic's lax mode would
    read 0, 1, "yes" or "off" as booleans, which the document (`type: boolean`) does not allow."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key in data and _takes_bool(field.annotation):
            value = data[key]
            if not isinstance(value, bool) and not (value is None and field.annotation is not bool):
                raise BadRequest(f"{key}: must be true or false")
