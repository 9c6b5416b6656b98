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
        self.added: list[str] = []  # send_now: taken in the publisher's step, added at the end of the loop's pass
        self.written: list[str] = []  # send_raw: written by the reader's own step (one entry per write)
        self.finished = False

    def ready(self) -> bool:
        return not self.busy

    def send_now(self, text: str, flush: bool = False) -> None:
        self.added.append(text)

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
    await asyncio.sleep(0)
    hub.publish("content_delta", {"delta": "b"}, event_id=2)
    await asyncio.sleep(0)
    # added at the end of each publisher's pass: no queue and no step of the reader in between
    assert [t.split("data: ")[1].strip() for t in writer.added] == ['{"delta":"a"}', '{"delta":"b"}']
    assert hub.subscribers and not next(iter(hub.subscribers))._queue.qsize()
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
    hub.publish("content_delta", {"delta": "4"}, event_id=4)  # the reader waits again: taken at once
    await asyncio.sleep(0)
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


DELTAS = frozenset({"content_delta", "thinking_delta"})


def _data_lines(texts: list[str]) -> list[str]:
    return [line for text in texts for line in text.splitlines() if line.startswith(("id", "data"))]


async def test_deltas_taken_in_one_pass_leave_as_one_frame_per_run_with_the_last_id() -> None:
    hub, writer = EventHub(keep=True), RecordingWriter()
    task = await _parked(hub, writer, merge=DELTAS)
    hub.publish("content_delta", {"delta": "a"}, event_id=1)
    hub.publish("content_delta", {"delta": "b"}, event_id=2)
    hub.publish("thinking_delta", {"delta": "t"}, event_id=3)  # another kind: its own frame, in its place
    hub.publish("content_delta", {"delta": "c"}, event_id=4)
    hub.publish("tool_call_started", {"toolName": "x"}, event_id=5)  # never joined, splits the runs
    hub.publish("content_delta", {"delta": "d"}, event_id=6)
    hub.publish("content_delta", {"delta": "e"}, event_id=7)
    assert writer.added == []  # taken, written at the end of the pass
    await asyncio.sleep(0)
    assert len(writer.added) == 1 and _data_lines(writer.added) == [
        "id: 2", 'data: {"delta":"ab"}',
        "id: 3", 'data: {"delta":"t"}',
        "id: 4", 'data: {"delta":"c"}',
        "id: 5", 'data: {"toolName":"x"}',
        "id: 7", 'data: {"delta":"de"}',
    ]  # fmt: skip
    hub.close()
    await task


async def test_deltas_waiting_for_a_lagging_client_are_joined_and_a_stream_without_merge_keeps_each() -> None:
    each = ["id: 1", 'data: {"delta":"1"}', "id: 2", 'data: {"delta":"2"}', "id: 3", 'data: {"delta":"3"}']
    for merge, expected in ((DELTAS, ["id: 3", 'data: {"delta":"123"}']), (frozenset(), each)):
        hub, writer = EventHub(keep=True), RecordingWriter()
        task = await _parked(hub, writer, merge=merge)
        writer.busy = True
        for i in (1, 2, 3):
            hub.publish("content_delta", {"delta": str(i)}, event_id=i)
        writer.busy = False
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert writer.added == [] and _data_lines(writer.written) == expected
        hub.close()
        await task


async def test_the_replay_is_written_as_kept_one_frame_per_delta() -> None:
    hub, writer = EventHub(keep=True), RecordingWriter()
    for i in (1, 2, 3):
        hub.publish("content_delta", {"delta": str(i)}, event_id=i)
    task = await _parked(hub, writer, merge=DELTAS)
    assert _data_lines(writer.written) == ["id: 1", 'data: {"delta":"1"}', "id: 2", 'data: {"delta":"2"}', "id: 3", 'data: {"delta":"3"}']
    hub.close()
    await task


async def test_an_event_that_cannot_be_written_ends_that_reader_not_the_publisher() -> None:
    hub, writer, other = EventHub(keep=True), RecordingWriter(), RecordingWriter()
    task = await _parked(hub, writer, merge=DELTAS)
    fine = await _parked(hub, other, merge=DELTAS)
    hub.publish("content_delta", {"delta": "a"}, event_id=1)
    hub.publish("progress", {"bad": object()}, event_id=2)  # not JSON: the publisher's step goes on
    hub.publish("content_delta", {"delta": "b"}, event_id=3)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert writer.closed and other.closed
    hub.close()
    await asyncio.wait_for(asyncio.gather(task, fine), 1)
    assert writer.finished and not hub.subscribers
