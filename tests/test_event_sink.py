"""A waiting SSE reader takes live events in the publisher's own step; a slow client still sets the pace."""

from __future__ import annotations

import asyncio

from platform_server.web.events import EventHub, stream
from platform_server.web.sse import SseWriter


class RecordingWriter(SseWriter):
    """An SseWriter without a socket: records what is added at once and what its reader writes."""

    def __init__(self) -> None:  # no handler: nothing below touches one
        self.closed = False
        self.busy = False  # True: the client has not taken earlier frames yet
        self.added: list[str] = []  # send_soon: added by the publisher's step
        self.written: list[str] = []  # send_raw: written by the reader's own step (one entry per write)
        self.finished = False

    def send_soon(self, text: str) -> bool:
        if self.busy:
            return False
        self.added.append(text)
        return True

    async def send_raw(self, text: str) -> bool:
        self.written.append(text)
        return True

    def finish(self) -> None:
        self.finished = True


async def _parked(hub: EventHub, writer: RecordingWriter, **kw: object) -> asyncio.Task[None]:
    task = asyncio.create_task(stream(writer, hub.subscribe(), heartbeat_s=30, **kw))  # type: ignore[arg-type]
    for _ in range(3):
        await asyncio.sleep(0)  # the reader writes its (empty) replay and waits
    return task


async def test_a_live_event_is_added_by_the_publishers_own_step() -> None:
    hub, writer = EventHub(keep=True), RecordingWriter()
    task = await _parked(hub, writer)
    hub.publish("content_delta", {"delta": "a"}, event_id=1)
    hub.publish("content_delta", {"delta": "b"}, event_id=2)
    # already added, before the publisher awaited anything: no queue and no step of the reader in between
    assert [t.split("data: ")[1].strip() for t in writer.added] == ['{"delta":"a"}', '{"delta":"b"}']
    hub.close()
    await task
    assert writer.written == [] and writer.finished


async def test_while_the_client_lags_events_wait_in_order_and_leave_together() -> None:
    hub, writer = EventHub(keep=True), RecordingWriter()
    task = await _parked(hub, writer)
    writer.busy = True
    hub.publish("content_delta", {"delta": "1"}, event_id=1)
    hub.publish("content_delta", {"delta": "2"}, event_id=2)
    assert writer.added == []  # declined: the reader takes them, in order
    writer.busy = False
    hub.publish("content_delta", {"delta": "3"}, event_id=3)  # behind the queued two, never before them
    assert writer.added == []
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(writer.written) == 1 and [line for line in writer.written[0].splitlines() if line.startswith("data")] == [
        'data: {"delta":"1"}',
        'data: {"delta":"2"}',
        'data: {"delta":"3"}',
    ]
    hub.publish("content_delta", {"delta": "4"}, event_id=4)  # the reader waits again: added at once
    assert len(writer.added) == 1 and '"4"' in writer.added[0]
    hub.close()
    await task


async def test_a_last_event_goes_through_the_reader_and_ends_the_stream() -> None:
    hub, writer = EventHub(keep=True), RecordingWriter()
    task = await _parked(hub, writer, last=lambda event: event.name == "idle")
    hub.publish("progress", {"n": 1}, event_id=1)
    hub.publish("idle", {}, event_id=2)
    hub.publish("progress", {"n": 2}, event_id=3)  # after the last one: never written
    await asyncio.wait_for(task, 1)
    assert len(writer.added) == 1 and "progress" in writer.added[0]
    assert len(writer.written) == 1 and "event: idle" in writer.written[0] and '"n":2' not in writer.written[0]
    assert writer.finished and not hub.subscribers


async def test_a_duplicate_of_the_replay_is_not_written_again() -> None:
    hub, writer = EventHub(keep=True), RecordingWriter()
    hub.publish("content_delta", {"delta": "r"}, event_id=5)
    task = await _parked(hub, writer)
    assert len(writer.written) == 1  # the replay
    hub.subscribers.copy().pop().put(hub.history[0])  # the same event again (a reattach race)
    assert writer.added == []
    hub.close()
    await task
