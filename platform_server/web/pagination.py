"""`Page<T>`: {records, total, size, current, pages}, with page/size defaults 1/20."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TypeVar

import peewee

from platform_server.json_types import JsonObject
from platform_server.web.errors import BadRequest, is_integer_text

Row = TypeVar("Row")


@dataclass(frozen=True)
class PageRequest:
    page: int = 1
    size: int = 20

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.size


def page_request(page: str | None, size: str | None, max_size: int = 100) -> PageRequest:
    """Parse `page`/`size`: defaults 1/20 when absent, size clamped to max_size, below 1 is a 400. An empty value is a
    400 too: both are documented as integers, and "" is none (schemathesis sends an empty object so)."""
    values = []
    for name, raw, default in (("page", page, 1), ("size", size, 20)):
        if raw is None:
            values.append(default)
            continue
        text = raw.strip()
        if not is_integer_text(text):
            raise BadRequest(f"Invalid value for parameter '{name}': expected Integer")
        number = int(text)
        if number < 1:
            raise BadRequest(f"{name}: must be greater than or equal to 1")
        values.append(number)
    return PageRequest(values[0], min(values[1], max_size))


def page_of(records: Sequence[object], total: int, req: PageRequest) -> JsonObject:
    """Build the page envelope from one page of records and the total count."""
    return {
        "records": records,
        "total": total,
        "size": req.size,
        "current": req.page,
        "pages": math.ceil(total / req.size) if req.size else 0,
    }


def paginate(query: peewee.SelectBase, req: PageRequest, serialize: Callable[[Row], object]) -> JsonObject:
    """Run a peewee query for one page and serialize its rows."""
    total = query.count()
    # past the end there is nothing to read (and a page far past it is an offset no database takes: int64 overflows)
    rows: Iterable[Row] = query.offset(req.offset).limit(req.size) if req.offset < total else []
    return page_of([serialize(r) for r in rows], total, req)


def paginate_list(items: Sequence[object], req: PageRequest) -> JsonObject:
    """Page over an in-memory list."""
    return page_of(items[req.offset : req.offset + req.size], len(items), req)
