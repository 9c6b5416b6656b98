"""Reads that are kept until a row of a table they read changes (for the hot paths: a turn's setup).

    @memo_on(Tool)
    def enabled_tools() -> dict[str, ToolRow]: ...

The value is computed once per argument tuple and dropped as soon as this process writes a row of
any listed table (the versions of the change feed, `ports.changes`: SQLite hooks today, no query, and
a write's commit counts again, so what another thread read before that commit is not kept; and
what is read inside a transaction, whose snapshot may predate a commit, is not kept at all). The
server is the only writer of its database, so that is every change. Cached values are shared:
callers must not mutate them (return tuples, frozen dataclasses, or copy before changing).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Hashable, TypeVar

import peewee

from platform_server.ports import changes

R = TypeVar("R")

MAX_ENTRIES = 4096  # per function; a full cache empties (the keys are ids: few in a small install)


def memo_on(*sources: type[peewee.Model] | str, fresh: Callable[[Any], bool] | None = None) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Cache a function of hashable arguments until a row of one of `sources` (models or table names) changes,
    or (with `fresh`) until `fresh(value)` says a kept value has aged (it depends on the time as well)."""
    tables = tuple(s if isinstance(s, str) else s._meta.table_name for s in sources)
    for table in tables:
        changes.subscribe(table)

    def wrap(fn: Callable[..., R]) -> Callable[..., R]:
        values: dict[Hashable, R] = {}
        seen: list[tuple[int, ...]] = [()]

        def stamp() -> tuple[int, ...]:
            return changes.versions(tables)

        @functools.wraps(fn)
        def cached(*args: Any) -> R:
            now = stamp()
            if now != seen[0]:
                values.clear()
                seen[0] = now
            try:
                kept = values[args]
                if fresh is None or fresh(kept):
                    return kept
            except KeyError:
                pass
            settled = changes.settled()
            value = fn(*args)
            if settled and stamp() == now:  # read outside a transaction (its snapshot may be older), nothing changed meanwhile
                if len(values) >= MAX_ENTRIES:
                    values.clear()
                values[args] = value
            return value

        return cached

    return wrap
