"""One way to turn a stored row into the JSON a route answers: a declarative field map per model.

```python
to_dict = Fields(
    id=ident("id"), name="name", enabled=flag("enabled"), tags=items("tags"),
    config=obj("config"), createTime=when("create_time"), agentName=lambda row: row.agent.name,
)
to_dict(row)  # {"id": "7", "name": ..., ...} in the order the fields are listed
```

A field is the row's attribute name (its value goes out as is), a function of the row, or `GIVEN`: a value
the caller passes by name (`to_dict(row, agentName=name)`), for data the row alone does not hold.
"""

from __future__ import annotations

from typing import Any, Callable

from platform_server.db import iso

Getter = Callable[[Any], Any]


def ident(attr: str) -> Getter:
    """An id (or foreign key id) as a string, None stays None."""

    def get(row: Any) -> Any:
        value = getattr(row, attr)
        return None if value is None else str(value)

    return get


def when(attr: str) -> Getter:
    """A stored time as ISO-8601 UTC text (`db.iso`), None stays None."""
    return lambda row: iso(getattr(row, attr))


def flag(attr: str) -> Getter:
    """A stored 0/1 (or bool) as true/false."""
    return lambda row: bool(getattr(row, attr))


def obj(attr: str) -> Getter:
    """A JSON object column, {} when empty."""
    return lambda row: getattr(row, attr) or {}


def items(attr: str) -> Getter:
    """A JSON array column, [] when empty."""
    return lambda row: list(getattr(row, attr) or [])


class _Given:
    """A field whose value the caller passes (`fields(row, agentName=...)`): data the row alone does not hold."""


GIVEN: Any = _Given()


class Fields:
    """The field map of one model's JSON: `Fields(jsonName="attribute" | getter | GIVEN, ...)`, called with a row."""

    def __init__(self, **fields: str | Getter) -> None:
        self.fields = fields

    def __call__(self, row: Any, **given: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, field in self.fields.items():
            if field is GIVEN:
                out[name] = given[name]
            else:
                out[name] = getattr(row, field) if isinstance(field, str) else field(row)
        return out

    def only(self, *names: str) -> Fields:
        """The same map limited to some fields, in the order given."""
        return Fields(**{name: self.fields[name] for name in names})
