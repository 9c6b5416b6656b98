"""The typed 200 answers of the API document: a handler's `answers` names a pydantic view model per method.

The envelope and the page are generic schemas named once per model (`R_AgentView`, `R_List_AgentView`,
`R_Page_ConversationView`, `R_Null`), so a generated client gets one type per payload. The view models only
document: the hot routes keep serialising with their plain dict builders (no per-row validation on the serving
path), and tests/helpers/answers.py validates every JSON answer the test suite receives against the documented
schema, so the document cannot drift from the answer without failing CI. View models forbid extra fields, so an
answer that grows a field fails that check until its model says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import pydantic

from platform_server.json_types import JsonObject

Shape = Literal["one", "list", "page"]


@dataclass(frozen=True)
class Answer:
    """`data` of the success envelope: one `model`, a list of them, a page of them, or null (`model` None)."""

    model: type[pydantic.BaseModel] | None
    shape: Shape = "one"


def one(model: type[pydantic.BaseModel]) -> Answer:
    return Answer(model)


def list_of(model: type[pydantic.BaseModel]) -> Answer:
    return Answer(model, "list")


def page_of(model: type[pydantic.BaseModel]) -> Answer:
    return Answer(model, "page")


NOTHING = Answer(None)


def _envelope(data: JsonObject) -> JsonObject:
    return {
        "type": "object",
        "required": ["code", "msg", "data"],
        "properties": {"code": {"type": "integer"}, "msg": {"type": "string"}, "data": data},
    }


def _model_ref(model: type[pydantic.BaseModel], schemas: JsonObject, to_oas30: Callable[[object], object]) -> str:
    """Register the model (and the models it nests) once; returns its component name."""
    schema = to_oas30(model.model_json_schema(ref_template="#/components/schemas/{model}", mode="serialization"))
    assert isinstance(schema, dict)  # a model's schema is an object
    defs = schema.pop("$defs", {})
    for name, sub in defs.items() if isinstance(defs, dict) else ():
        schemas.setdefault(name, sub)
    name = model.__name__
    if name in schemas and schemas[name] != schema:  # an answer model shares a body model's name: keep both
        name = f"{name}Answer"
    schemas[name] = schema
    return name


def answer_ref(answer: Answer, schemas: JsonObject, to_oas30: Callable[[object], object]) -> JsonObject:
    """The `$ref` of the answer's envelope schema, registered in `schemas` with what it refers to."""
    if answer.model is None:
        schemas.setdefault("R_Null", _envelope({"nullable": True, "enum": [None]}))
        return {"$ref": "#/components/schemas/R_Null"}
    name = _model_ref(answer.model, schemas, to_oas30)
    item: JsonObject = {"$ref": f"#/components/schemas/{name}"}
    if answer.shape == "one":
        envelope = f"R_{name}"
        schemas[envelope] = _envelope(item)
    elif answer.shape == "list":
        envelope = f"R_List_{name}"
        schemas[envelope] = _envelope({"type": "array", "items": item})
    else:
        page = f"Page_{name}"
        schemas[page] = {
            "type": "object",
            "required": ["records", "total", "size", "current", "pages"],
            "properties": {
                "records": {"type": "array", "items": item},
                "total": {"type": "integer"},
                "size": {"type": "integer"},
                "current": {"type": "integer"},
                "pages": {"type": "integer"},
            },
            "additionalProperties": False,
        }
        envelope = f"R_Page_{name}"
        schemas[envelope] = _envelope({"$ref": f"#/components/schemas/{page}"})
    return {"$ref": f"#/components/schemas/{envelope}"}
