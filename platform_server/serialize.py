"""One way to turn a stored row into the JSON a route answers: a declarative field map per model.

```python
to_dict = Fields(
    id=ident("id"), name=typed("name", str), enabled=flag("enabled"), tags=items("tags"),
    config=obj("config"), createTime=when("create_time"), agentName=lambda row: row.agent.name,
)
to_dict(row)  # {"id": "7", "name": ..., ...} in the order the fields are listed
to_dict.view("ThingView")  # the pydantic answer model of the same map, for the API document
```

A field is the row's attribute name (its value goes out as is), a function of the row, or `GIVEN` / `given(type)`:
a value the caller passes by name (`to_dict(row, agentName=name)`), for data the row alone does not hold.
The helpers carry the JSON type of what they produce (`ident` a string id, `flag` a boolean, ...), `typed` gives
one to a plain attribute or function, so one declaration makes both the dict and its documented schema; a field
without a type is documented as any value.
"""

from __future__ import annotations

from typing import Any, Callable

import pydantic

from platform_server.db import iso

Getter = Callable[[Any], Any]


class View(pydantic.BaseModel):
    """Base of the answer models (web/openapi_answers.py): they document a route's `data`, fields without a
    default always sent and no other field allowed; the serving path keeps building plain dicts (no per-row
    validation), and the test suite checks every answer it receives against the document."""

    # defer_build: a view's schema and validator are built when the API document or a test first asks, not at
    # import; every route's answer gets one, and a start imports them all (each cost ~1 ms of a restart).
    model_config = pydantic.ConfigDict(extra="forbid", defer_build=True)


class Typed:
    """A getter that knows the type of its value (a Python type pydantic turns into a JSON schema)."""

    __slots__ = ("get", "kind")

    def __init__(self, get: Getter, kind: object) -> None:
        self.get = get
        self.kind = kind

    def __call__(self, row: Any) -> Any:
        return self.get(row)


def typed(field: str | Getter, kind: object) -> Typed:
    """A plain attribute (or function of the row) with its type: `typed("name", str)`."""
    if isinstance(field, str):
        attr = field
        return Typed(lambda row: getattr(row, attr), kind)
    return Typed(field, kind)


def ident(attr: str) -> Typed:
    """An id (or foreign key id) as a string, None stays None."""

    def get(row: Any) -> Any:
        value = getattr(row, attr)
        return None if value is None else str(value)

    return Typed(get, str | None)


def when(attr: str) -> Typed:
    """A stored time as ISO-8601 UTC text (`db.iso`), None stays None."""
    return Typed(lambda row: iso(getattr(row, attr)), str | None)


def flag(attr: str) -> Typed:
    """A stored 0/1 (or bool) as true/false."""
    return Typed(lambda row: bool(getattr(row, attr)), bool)


def obj(attr: str) -> Typed:
    """A JSON object column, {} when empty."""
    return Typed(lambda row: getattr(row, attr) or {}, dict[str, Any])


def items(attr: str) -> Typed:
    """A JSON array column, [] when empty."""
    return Typed(lambda row: list(getattr(row, attr) or []), list[Any])


class _Given:
    """A field whose value the caller passes (`fields(row, agentName=...)`): data the row alone does not hold."""

    def __init__(self, kind: object = Any) -> None:
        self.kind = kind


GIVEN: Any = _Given()


def given(kind: object) -> Any:
    """`GIVEN` with the type of the value the caller passes."""
    return _Given(kind)


class Fields:
    """The field map of one model's JSON: `Fields(jsonName="attribute" | getter | GIVEN, ...)`, called with a row."""

    def __init__(self, **fields: str | Getter) -> None:
        self.fields = fields
        # the plain functions, unwrapped once: serving a list pays no wrapper call per field
        self._plan = [
            (name, None if isinstance(f, _Given) else f if isinstance(f, str) else f.get if isinstance(f, Typed) else f) for name, f in fields.items()
        ]

    def __call__(self, row: Any, **given: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, field in self._plan:
            if field is None:
                out[name] = given[name]
            else:
                out[name] = getattr(row, field) if isinstance(field, str) else field(row)
        return out

    def only(self, *names: str) -> Fields:
        """The same map limited to some fields, in the order given."""
        return Fields(**{name: self.fields[name] for name in names})

    def view(self, name: str, /, **extra: Any) -> type[View]:
        """The answer model of this map (`extra`: more fields as pydantic `(type, default)` pairs)."""
        spec: dict[str, Any] = {}
        for key, field in self.fields.items():
            kind = field.kind if isinstance(field, (Typed, _Given)) else Any
            spec[key] = (kind, ...)
        spec.update(extra)
        model: type[View] = pydantic.create_model(name, __base__=View, **spec)
        return model
