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

NULL: JsonObject = {"nullable": True, "enum": [None]}  # 3.0's null value (it has no null type)

Shape = Literal["one", "maybe", "list", "page", "list_or_page"]


@dataclass(frozen=True)
class Answer:
    """`data` of the success envelope: one `model` (or null when `maybe`), a list of them, a page of them, either
    of those two (a route that pages only when asked), or null (`model` None)."""

    model: type[pydantic.BaseModel] | None
    shape: Shape = "one"


def one(model: type[pydantic.BaseModel]) -> Answer:
    return Answer(model)


def maybe(model: type[pydantic.BaseModel]) -> Answer:
    """One `model`, or null when there is none (a lookup that finds nothing is not an error)."""
    return Answer(model, "maybe")


def list_or_page(model: type[pydantic.BaseModel]) -> Answer:
    """The whole list, or a page of it when the request asks for one (`page`/`size`)."""
    return Answer(model, "list_or_page")


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
        schemas.setdefault("R_Null", _envelope(NULL))
        return {"$ref": "#/components/schemas/R_Null"}
    name = _model_ref(answer.model, schemas, to_oas30)
    item: JsonObject = {"$ref": f"#/components/schemas/{name}"}
    if answer.shape == "one":
        envelope = f"R_{name}"
        schemas[envelope] = _envelope(item)
    elif answer.shape == "list":
        envelope = f"R_List_{name}"
        schemas[envelope] = _envelope({"type": "array", "items": item})
    elif answer.shape == "maybe":
        envelope = f"R_Maybe_{name}"
        schemas[envelope] = _envelope({"anyOf": [item, NULL]})  # 3.0 has no null type: a nullable null enum
    elif answer.shape == "list_or_page":
        envelope = f"R_ListOrPage_{name}"
        schemas[envelope] = _envelope({"anyOf": [{"type": "array", "items": item}, _page(name, item, schemas)]})
    else:
        envelope = f"R_Page_{name}"
        schemas[envelope] = _envelope(_page(name, item, schemas))
    return {"$ref": f"#/components/schemas/{envelope}"}


def _page(name: str, item: JsonObject, schemas: JsonObject) -> JsonObject:
    """The `$ref` of the page schema of a model, registered once."""
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
    return {"$ref": f"#/components/schemas/{page}"}
