"""What handlers, lifecycles and runtimes read of the process: the `Platform` protocol and typed runtime keys.

A leaf module: it imports no area and not `app.py` (which assembles the areas and implements the protocol),
so an area depends on this contract, never on the file that imports every area. Each area declares the keys
of the long-lived objects it starts in its own package (`TOOLS = RuntimeKey["ToolRegistry"]("tools")` in
`features/tools/__init__.py`); its `lifecycle.start` stores the object with `platform.set_runtime(TOOLS, registry)`
and a reader gets it typed with `platform.runtime(TOOLS)` (an area reading another's key imports that area,
so tests/test_layout.py sees the dependency).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from platform_server.config import Config
    from platform_server.storage import StorageHealth
    from platform_server.web.context import WebServices
    from platform_server.web.routing import Route

T = TypeVar("T")


class RuntimeKey(Generic[T]):
    """The name and type of one long-lived object; declared once, by the area that starts it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"RuntimeKey({self.name!r})"


class RuntimeMissing(LookupError):
    """A runtime read before its area started (or after it stopped): a start-order bug, not a request error."""


class Platform(Protocol):
    """The process state handlers (`self.platform`), lifecycles and runtimes read; `app.PlatformState` implements it."""

    config: Config
    web: WebServices
    routes: list[Route]
    started_at: float
    openapi_text: str | None
    storage: StorageHealth

    def runtime(self, key: RuntimeKey[T]) -> T:
        """The object stored under `key`; raises RuntimeMissing when its area has not started."""
        ...

    def find_runtime(self, key: RuntimeKey[T]) -> T | None:
        """The object stored under `key`, or None (for an optional collaborator)."""
        ...

    def set_runtime(self, key: RuntimeKey[T], value: T) -> None:
        """Store (or replace) the object under `key`: only the area that declares the key does."""
        ...


@dataclass(frozen=True)
class Flag:
    """A feature flag an area declares in its handlers.py `FLAGS` (seeded with this default at start, then an admin's)."""

    key: str
    default: bool
    description: str


# An area's drain hook (its handlers.py `DRAIN`): on a graceful stop, wait up to `timeout_s` for its work in
# flight to finish; returns how many were still running (they are stopped with the area).
DrainHook = Callable[["Platform", float], Awaitable[int]]


__all__ = ["DrainHook", "Flag", "Platform", "RuntimeKey", "RuntimeMissing"]
