"""Every SSE frame the suite receives is checked against its operation's documented event schema.

The event models in the document (web/openapi_events.py) only document: the streams publish plain dicts. This
check keeps them honest, as tests/helpers/answers.py does for JSON answers: a frame whose event name the
operation does not document, or whose `data` breaks its model (a missing field, a field the model lacks, a wrong
type), fails the test that read it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from openapi_schema_validator import OAS30Validator


@dataclass
class _Stream:
    pattern: re.Pattern[str]
    params: int
    method: str
    operation_id: str
    frames: dict[str, OAS30Validator]  # event name -> validator of the whole frame {event, id?, data}


_streams: list[_Stream] | None = None


def compile_document(doc: dict[str, Any]) -> None:
    """Keep a validator per documented event of every text/event-stream operation."""
    global _streams
    components = doc.get("components", {})
    schemas = components.get("schemas", {})
    streams: list[_Stream] = []
    for template, methods in doc.get("paths", {}).items():
        regex = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
        for method, op in methods.items():
            content = op.get("responses", {}).get("200", {}).get("content", {})
            schema = content.get("text/event-stream", {}).get("schema")
            union = schemas.get(schema["$ref"].rsplit("/", 1)[-1], {}) if isinstance(schema, dict) and "$ref" in schema else {}
            if "discriminator" not in union:  # not an event stream of ours (the OpenAI door's chunks are its own protocol)
                continue
            frames = {
                event: OAS30Validator({**schemas[ref.rsplit("/", 1)[-1]], "components": components})
                for event, ref in union["discriminator"]["mapping"].items()
            }
            streams.append(_Stream(re.compile(regex), template.count("{"), method.upper(), op["operationId"], frames))
    streams.sort(key=lambda s: s.params)  # a literal segment wins over a parameter
    _streams = streams


def loaded() -> bool:
    return _streams is not None


def check(method: str, path: str, event: str, data: Any, event_id: str | None) -> None:
    """Fail on a frame its operation does not document (an unknown event, or data outside the event's model)."""
    if _streams is None:
        return
    for stream in _streams:
        if stream.method == method.upper() and stream.pattern.match(path):
            validator = stream.frames.get(event)
            if validator is None:
                raise AssertionError(f"{stream.operation_id} sent an undocumented event `{event}` (documented: {sorted(stream.frames)})")
            frame: dict[str, Any] = {"event": event, "data": data}
            if event_id is not None:
                frame["id"] = event_id
            errors = sorted(validator.iter_errors(frame), key=lambda e: list(e.absolute_path))
            if errors:
                where = "/".join(str(p) for p in errors[0].absolute_path)
                raise AssertionError(f"{stream.operation_id} sent `{event}` outside its documented schema at {where}: {errors[0].message[:400]}")
            return
