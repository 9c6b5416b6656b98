"""The event bus port: replayable streams (a chat turn's events) and keyed topics (progress, memory updates).

Areas open streams and topics here and hand subscriptions to `stream()` (SSE) or read them themselves;
they never build the hub's classes. By default both live in this process's memory (web/events.py:
replay from the hub's buffer); with `redis_url` (redis_events.py) each stream is also appended to a Redis
Stream, so a stream started on one process is re-attached on another with its last event id (`attach`),
and requests reach the process that runs a stream (`ask`/`answer`). `Subscription` and `stream` stay the
reader side either way.

    turn_stream = events.current().stream("turn:42", keep=True)
    turn_stream.publish("delta", {"text": "Hi"}, event_id=7)
    sub = turn_stream.subscribe(after_id=6)   # sub.replay: kept events after 6, then live ones
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Hashable, Protocol, TypeVar

from platform_server.json_types import JsonObject
from platform_server.web.events import Event, EventHub, Subscription, Topics, stream

__all__ = ["Answerer", "Event", "EventBus", "LocalEventBus", "Stream", "Subscription", "TopicBus", "current", "stream", "use"]

K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)
Answerer = Callable[[str, JsonObject], Awaitable["JsonObject | None"]]  # (stream name, request) -> answer


class Stream(Protocol):
    """One stream of events with increasing ids, replayable from an id while it is kept."""

    @property
    def history(self) -> list[Event]:
        """The kept events, oldest first."""

    @property
    def subscribers(self) -> set[Subscription]: ...

    @property
    def closed(self) -> bool: ...

    def publish(self, name: str, data: Any, event_id: int | None = None) -> Event: ...

    def subscribe(self, after_id: int = 0) -> Subscription:
        """Kept events with an id after `after_id` (the subscription's `replay`), then the live ones."""

    def close(self) -> None:
        """The end of the stream: each reader ends after what it already has."""


class TopicBus(Protocol[K_contra]):
    """Unbuffered streams by key: a reader gets what is published to its key while it is subscribed."""

    def subscribe(self, key: K_contra) -> Subscription: ...

    def publish(self, key: K_contra, name: str, data: Any) -> None: ...

    def subscribers(self, key: K_contra | None = None) -> list[Subscription]:
        """This process's readers (of `key`, or of every key)."""

    def watched(self, key: K_contra) -> bool:
        """Whether a reader anywhere may follow `key` (False: publishing to it can be skipped)."""

    def close(self) -> None: ...


class EventBus(Protocol):
    def stream(self, name: str, keep: bool = True) -> Stream:
        """A new stream called `name` (unique while it runs); `keep` buffers its events for replay."""

    def topics(self, name: str) -> TopicBus[Any]:
        """The topics of one area (`name` keeps areas apart on a shared bus)."""

    async def attach(self, name: str) -> Stream | None:
        """The stream `name` that another process runs (or ran, within its replay window), to subscribe to
        here; None when no other process has it (the in-process bus: never)."""

    async def live(self, names: list[str]) -> set[str]:
        """Which of these names (streams, held runs) a living process of the deployment holds (the in-process
        bus: none)."""

    def hold(self, name: str) -> None:
        """This process runs `name` (a stream opened here holds its own): keep its lease while it runs, so the
        leader can tell a run whose process died (platform_server/leases.py). The in-process bus: nothing."""

    def release(self, name: str) -> None:
        """`name` ended here: its lease goes."""

    async def end(self, name: str) -> None:
        """End a stream whose process died, for its readers everywhere."""

    def answer(self, prefix: str, handler: Answerer) -> None:
        """Serve `ask`s for this process's streams whose name starts with `prefix`."""

    async def ask(self, name: str, request: JsonObject) -> JsonObject | None:
        """Send `request` to the process that runs stream `name`; its answer, or None when none does."""

    async def aclose(self) -> None:
        """At stop: the last events leave, this process's holds on its streams go."""


class LocalEventBus:
    """The default: the in-process hub (web/events.py); replay comes from the stream's own buffer."""

    def stream(self, name: str, keep: bool = True) -> Stream:
        return EventHub(keep=keep)

    def topics(self, name: str) -> TopicBus[Any]:
        return Topics()

    async def attach(self, name: str) -> Stream | None:
        return None  # one process: every stream is in the chat service's own registry

    async def live(self, names: list[str]) -> set[str]:
        return set()

    def hold(self, name: str) -> None:
        pass  # one process: its start-up recovery fails what a stopped process left running, no lease to keep

    def release(self, name: str) -> None:
        pass

    async def end(self, name: str) -> None:
        pass

    def answer(self, prefix: str, handler: Answerer) -> None:
        pass  # nobody else can ask

    async def ask(self, name: str, request: JsonObject) -> JsonObject | None:
        return None

    async def aclose(self) -> None:
        pass


_current: EventBus = LocalEventBus()


def use(bus: EventBus) -> None:
    """Install the process's event bus (at startup, before the areas start)."""
    global _current
    _current = bus


def current() -> EventBus:
    return _current
