"""The one event hub: publish, subscribe (with replay from an event id), heartbeat while idle, close.

A feature owns an `EventHub` per stream (one chat turn) or a `Topics` of hubs by key (a knowledge
base, a user's memory of an agent). Readers subscribe; `stream()` writes a subscription to an SSE
response; other readers (a WebSocket, a channel worker) await `Subscription.next()` themselves.

    hub = EventHub(keep=True)             # keep: buffer events so late readers replay them
    hub.publish("delta", {"text": "Hi"}, event_id=7)
    sub = hub.subscribe(after_id=6)       # sub.replay: buffered events with id > 6
    await stream(writer, sub, heartbeat_s=15)  # replay, live events, heartbeats, until the hub closes
    hub.close()                           # every reader ends after what it already has
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Generic, Hashable, TypeVar

from platform_server.web.sse import SseWriter, frame

K = TypeVar("K", bound=Hashable)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    name: str
    data: Mapping[str, object]
    id: int | None = None  # replayable events carry increasing ids


_END = None  # put in a reader's queue: the hub closed or the reader went away


class Subscription:
    """One reader of a hub: `replay` (buffered events it missed), then `await next()` for live ones."""

    def __init__(self, hub: EventHub, replay: list[Event]) -> None:
        self.hub = hub
        self.replay = replay
        self.last_id = 0  # the last event id sent (duplicates and older ids are skipped by stream())
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        # Set by stream() while its reader waits on an empty queue: writes a live event at once, in the
        # publisher's own step, or returns False (the event is then queued, and the sink is unset).
        self.sink: Callable[[Event], bool] | None = None

    def put(self, event: Event) -> None:
        sink = self.sink
        if sink is not None and sink(event):
            return
        self._queue.put_nowait(event)

    async def next(self) -> Event | None:
        """The next live event; None once the hub closed or `close()` was called."""
        item = self._queue.get_nowait() if not self._queue.empty() else await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)  # stays ended for any further call
        return item

    def queued(self) -> list[Event | None]:
        """The events already waiting, without waiting (None at the end when the hub closed)."""
        items: list[Event | None] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is _END:
                self._queue.put_nowait(_END)
                items.append(None)
                break
            items.append(item)
        return items

    def close(self) -> None:
        """The reader is gone (client disconnected): its `next()` returns None and the hub lets it go."""
        self.sink = None
        self._queue.put_nowait(_END)
        self.hub.unsubscribe(self)


class EventHub:
    """Fan-out of one stream's events to its subscribers, optionally buffered for replay."""

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep
        self.history: list[Event] = []
        self.subscribers: set[Subscription] = set()
        self.closed = False

    def publish(self, name: str, data: Mapping[str, object], event_id: int | None = None) -> Event:
        event = Event(name, data, event_id)
        if self.keep:
            self.history.append(event)
        for sub in list(self.subscribers):
            sub.put(event)
        return event

    def subscribe(self, after_id: int = 0) -> Subscription:
        """Buffered events with an id after `after_id`, then the live ones (no gap, no duplicate).
        A closed hub's subscription ends after the replay."""
        sub = Subscription(self, [e for e in self.history if e.id is not None and e.id > after_id])
        sub.last_id = after_id
        if self.closed:
            sub._queue.put_nowait(_END)
        else:
            self.subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self.subscribers.discard(sub)

    def close(self) -> None:
        """End of the stream: every subscriber ends after the events it already has."""
        self.closed = True
        for sub in list(self.subscribers):
            sub._queue.put_nowait(_END)
        self.subscribers.clear()


class Topics(Generic[K]):
    """Hubs by key (unbuffered), created on the first subscriber and dropped with the last."""

    def __init__(self) -> None:
        self.hubs: dict[K, EventHub] = {}

    def subscribe(self, key: K) -> Subscription:
        hub = self.hubs.setdefault(key, _TopicHub(self, key))
        return hub.subscribe()

    def publish(self, key: K, name: str, data: Mapping[str, object]) -> None:
        hub = self.hubs.get(key)
        if hub is not None:
            hub.publish(name, data)

    def subscribers(self, key: K | None = None) -> list[Subscription]:
        hubs = self.hubs.values() if key is None else [h for k, h in self.hubs.items() if k == key]
        return [s for h in hubs for s in h.subscribers]

    def watched(self, key: K) -> bool:
        return key in self.hubs  # one process: its own readers are all there are

    def close(self) -> None:
        for hub in list(self.hubs.values()):
            hub.close()
        self.hubs.clear()


class _TopicHub(EventHub, Generic[K]):
    def __init__(self, topics: Topics[K], key: K) -> None:
        super().__init__()
        self.topics = topics
        self.key = key

    def unsubscribe(self, sub: Subscription) -> None:
        super().unsubscribe(sub)
        if not self.subscribers and self.topics.hubs.get(self.key) is self:
            del self.topics.hubs[self.key]


async def stream(
    writer: SseWriter,
    sub: Subscription,
    heartbeat_s: float,
    last: Callable[[Event], bool] = lambda event: False,
    merge: frozenset[str] = frozenset(),
) -> None:
    """Write `sub` as SSE frames: its replay, then live events (a heartbeat frame after each idle
    `heartbeat_s`), until the hub closes, the reader closes, the client goes or `last(event)` is true.

    While the reader waits, the publisher's own step adds a live event to the response (`sub.sink`):
    no queue and no step of the reader's task per event. What is added before the loop's next pass
    leaves in one write (a socket write costs more than the frames). An event that cannot be added
    (the client has not taken the previous frames yet, `last(event)`, an error) is queued; queued
    events are written together too. Always unsubscribes and finishes the response.

    `merge`: names of text-delta events (data `{"delta": str}`). Consecutive ones of one name that wait
    for the same write leave as one frame with the joined text and the last id (`coalesce`): a busy
    server or a slow client costs a frame per write, not per delta. The replay is written as kept."""
    beat = _Heartbeat(sub, heartbeat_s)
    sink = _Sink(writer, sub, beat, last, merge)
    try:
        if not await _write_batch(writer, sub, list(sub.replay), last, replay=True):
            return
        while True:
            sub.sink = sink if not writer.closed else None
            first = await sub.next()  # a queued event, or the heartbeat timer's `_BEAT` (written like one)
            sub.sink = None
            sink.drain()  # what the sink took goes before what was queued after it
            beat.moved()
            if first is None or not await _write_batch(writer, sub, [first, *sub.queued()], last, merge=merge):
                return
    finally:
        sub.sink = None
        sink.drain()
        beat.stop()
        sub.hub.unsubscribe(sub)
        writer.finish()


class _Sink:
    """Takes one live event for the response, or declines (False) so that it is queued. The events taken
    in one pass of the loop are written together at its end (`drain`), their deltas coalesced."""

    def __init__(self, writer: SseWriter, sub: Subscription, beat: _Heartbeat, last: Callable[[Event], bool], merge: frozenset[str]) -> None:
        self.writer = writer
        self.sub = sub
        self.beat = beat
        self.last = last
        self.merge = merge
        self.pending: list[Event] = []

    def __call__(self, event: Event) -> bool:
        sub = self.sub
        if event.id is not None and event.id <= sub.last_id:
            return True  # a duplicate of the replay: nothing to write
        try:
            if self.last(event) or not (self.pending or self.writer.ready()):
                self.drain()
                sub.sink = None  # the reader takes it, and what follows, in order
                return False
        except Exception:  # noqa: BLE001 - a reader's failure is not the publisher's: the reader's own step raises it
            sub.sink = None
            return False
        if not self.pending:
            asyncio.get_running_loop().call_soon(self.drain)
        self.pending.append(event)
        sub.last_id = event.id or sub.last_id
        self.beat.moved()
        return True

    def drain(self) -> None:
        """Write what was taken (called at the end of the loop's pass, and before the reader writes)."""
        if not self.pending:
            return
        events, self.pending = self.pending, []
        if self.writer.closed:
            return
        try:
            self.writer.send_now("".join(frames(coalesce(events, self.merge))), flush=True)
        except Exception:  # noqa: BLE001 - an event that cannot be sent ends this reader, never the publisher
            log.exception("an SSE reader's events could not be written; its stream ends")
            self.writer.closed = True  # the reader ends at its next step; the client re-attaches with its last id


def coalesce(events: list[Event], merge: frozenset[str]) -> list[Event]:
    """Runs of consecutive events of one `merge` name with `{"delta": str}` data become one event: the
    joined text under the run's last id (a re-attach after that id resumes after all of it). Other
    events, and runs of another name, stay as they are and keep their place."""
    if not merge or len(events) < 2:
        return events
    out: list[Event] = []
    run: list[str] = []  # the texts of the run that ends `out`
    for event in events:
        delta = event.data.get("delta") if event.name in merge and len(event.data) == 1 else None
        if isinstance(delta, str) and run and out[-1].name == event.name:
            run.append(delta)
            out[-1] = event
            continue
        _join(out, run)
        out.append(event)
        run = [delta] if isinstance(delta, str) else []
    _join(out, run)
    return out


def _join(out: list[Event], run: list[str]) -> None:
    """The run that ends `out` (its last event in place) becomes one event with the joined text."""
    if len(run) > 1:
        out[-1] = Event(out[-1].name, {"delta": "".join(run)}, out[-1].id)


def frames(events: list[Event]) -> list[str]:
    return [frame(event.name, event.data, event.id) for event in events]


_BEAT = Event("heartbeat", {})  # put in a reader's queue by its heartbeat timer, never published


class _Heartbeat:
    """One timer per reader (not one per event): after `every_s` without an event, a heartbeat frame."""

    def __init__(self, sub: Subscription, every_s: float) -> None:
        self.sub = sub
        self.every_s = every_s
        self.loop = asyncio.get_running_loop()
        self.last = self.loop.time()
        self.handle = self.loop.call_later(every_s, self._check)

    def moved(self) -> None:
        self.last = self.loop.time()

    def _check(self) -> None:
        idle = self.loop.time() - self.last
        if idle >= self.every_s:
            self.sub.put(_BEAT)
            self.last = self.loop.time()
            idle = 0.0
        self.handle = self.loop.call_later(self.every_s - idle, self._check)

    def stop(self) -> None:
        self.handle.cancel()


async def _write_batch(
    writer: SseWriter,
    sub: Subscription,
    batch: list[Event | None],
    last: Callable[[Event], bool],
    replay: bool = False,
    merge: frozenset[str] = frozenset(),
) -> bool:
    """Write the frames of `batch` at once (its `merge` deltas coalesced); False when the stream ends (hub
    closed, `last`, client gone). Live events with an id not after the last one sent are duplicates of the
    replay and skipped."""
    events: list[Event] = []
    go_on = True
    for event in batch:
        if event is None:
            go_on = False
            break
        if not replay and event.id is not None and event.id <= sub.last_id:
            continue
        events.append(event)
        sub.last_id = event.id or sub.last_id
        if last(event):
            go_on = False
            break
    if events and not await writer.send_raw("".join(frames(coalesce(events, merge)))):
        return False
    return go_on
