"""The events of the SSE operations in the API document: a handler's `events` names, per method, the frames it sends.

Each event kind is one pydantic model of its `data` (declared in the area's schemas.py, beside the code that
sends it). The document describes the `text/event-stream` answer as a oneOf of frame objects
`{event: <one-value enum>, id?: string, data: <model>}` with a discriminator on `event`, so a client reads the
event name and then knows the type of `data`. The models only document (the streams keep publishing plain
dicts); tests/helpers/client.py validates every frame the suite receives against its operation's schema, so
the document cannot drift from the stream: an unknown event name or a field the model lacks fails the test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable

import pydantic
from pydantic import Field

from platform_server.json_types import JsonObject
from platform_server.serialize import View


class SseError(View):
    """`error`: the request or the work behind the stream failed; the stream ends after it."""

    message: str
    code: int | None = Field(default=None, description="the code a JSON answer would carry")
    errorId: str | None = Field(default=None, description="the log line an admin looks up")


class SseHeartbeat(View):
    """`heartbeat`: nothing happened for a while (keeps proxies from closing an idle stream); no fields."""


@dataclass(frozen=True)
class SseEvents:
    """The frames one SSE operation sends: event name -> model of its `data`. `name` prefixes the schemas
    (`<name>Frame` is the oneOf, `<name><Event>Frame` each frame); an `error` and a `heartbeat` frame are
    always possible (a request refused before the stream began is one `error` frame)."""

    name: str
    events: Mapping[str, type[pydantic.BaseModel]] = field(default_factory=dict)

    def all(self) -> dict[str, type[pydantic.BaseModel]]:
        return {"error": SseError, "heartbeat": SseHeartbeat, **self.events}


def _camel(event: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in event.split("_"))


def _data_ref(model: type[pydantic.BaseModel], schemas: JsonObject, to_oas30: Callable[[object], object]) -> str:
    schema = to_oas30(model.model_json_schema(ref_template="#/components/schemas/{model}", mode="serialization"))
    assert isinstance(schema, dict)  # a model's schema is an object
    defs = schema.pop("$defs", {})
    for name, sub in defs.items() if isinstance(defs, dict) else ():
        schemas.setdefault(name, sub)
    schemas[model.__name__] = schema
    return f"#/components/schemas/{model.__name__}"


def _frame(event: str, data_ref: str) -> JsonObject:
    return {
        "type": "object",
        "required": ["event", "data"],
        "properties": {
            "event": {"type": "string", "enum": [event]},  # 3.0 has no const: a one-value enum
            "id": {"type": "string", "description": "increasing; send it back as lastEventId to resume"},
            "data": {"$ref": data_ref},
        },
        "additionalProperties": False,
    }


def stream_ref(declared: SseEvents, schemas: JsonObject, to_oas30: Callable[[object], object]) -> JsonObject:
    """The `$ref` of the operation's frame union (registered in `schemas` with each frame and data model)."""
    mapping: dict[str, str] = {}
    for event, model in declared.all().items():
        name = f"{declared.name}{_camel(event)}Frame"
        schemas[name] = _frame(event, _data_ref(model, schemas, to_oas30))
        mapping[event] = f"#/components/schemas/{name}"
    union = f"{declared.name}Frame"
    schemas[union] = {
        "oneOf": [{"$ref": ref} for ref in mapping.values()],
        "discriminator": {"propertyName": "event", "mapping": mapping},
    }
    return {"$ref": f"#/components/schemas/{union}"}
