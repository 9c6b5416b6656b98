"""The event bus on Redis (`redis_url`): a stream's events, the leases of running work and topics cross processes.

With several processes behind one port (issue 31), a client re-attaches to a chat turn on whichever
process its request reaches. Each stream is still an in-process hub for the readers of the process that
runs it (the local path keeps its speed: the XADD leaves from a background task, never from the
publisher's step), and every event is also appended to a Redis Stream named after it:

- `ev:<name>`: the events (fields `n` name, `d` JSON data, `i` event id; `end` marks the close), trimmed to
  STREAM_MAXLEN, expiring `retention_s` after the close (the replay window) or STREAM_TTL_S after the
  last event of a stream nobody closed (its process died and no sweep ended it).
- `owner:<name>`: the process that runs it, a lease of LEASE_S renewed every LEASE_S / 3 while it runs:
  a killed process's lease lapses, which is how the leader's sweep knows its turns are orphans. Runs
  without a stream (cron, workflow and team runs) hold the same lease by name (`hold`/`release`,
  platform_server/leases.py); all of a process's leases are renewed in one pipelined round trip.
- `ctl:<process>`: a pub/sub channel per process: `ask()` sends a request (stop, a queued input, an
  approval) to the process that runs a stream, the answer comes back on a list key (BLPOP).

- `topics`: one pub/sub channel for every area's topics (wiki progress, the team board, memory events):
  an event is handed to this process's readers at once, as on the in-process bus, and published for the
  others, each of which hands it to its own readers of that topic and key (its own echo is skipped).

Another process re-attaches through `attach()`: a mirror hub filled from the Redis Stream (XRANGE, then
XREAD BLOCK) that readers subscribe to like the local one; ids not after the reader's last id are
skipped by `stream()`, so the rest arrives once, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from platform_server.json_types import JsonObject
from platform_server.lazy import lazy_import
from platform_server.web.events import Event, EventHub, Topics

if TYPE_CHECKING:
    import redis.asyncio as aioredis
else:
    aioredis = lazy_import("redis.asyncio")

log = logging.getLogger(__name__)

STREAM_MAXLEN = 20_000  # events kept per stream (approximate trim): a long turn's early deltas go first
STREAM_TTL_S = 86_400  # a stream nobody closed (its process was killed, no sweep ran) goes after a day
LEASE_S = 6.0  # how long a process's hold on a running stream outlives its last renewal
ASK_TIMEOUT_S = 8.0  # an ask waits this long for the owner's answer (a stop waits for the turn to end)
BLOCK_MS = 5_000  # one XREAD of a mirror waits this long before it checks whether it still has readers
TOPICS_CHANNEL = "topics"  # every process listens to it (with its control channel, on one connection)
LISTEN_POLL_S = 1.0  # the control channel's read returns this often to check whether the bus is closing
# A stop waits this long for the bus's tasks. redis-py's pub/sub read can swallow a cancel (the task stayed
# `cancelling`, waiting on the socket, and a test server's stop hung until pytest's timeout): each loop also
# checks `_closing`, and a task still running after this is left behind, not awaited forever.
CLOSE_WAIT_S = 5.0

Handler = Callable[[str, JsonObject], Awaitable[JsonObject | None]]


class RedisStream(EventHub):
    """A stream run by this process: the local hub, each event also appended to its Redis Stream."""

    def __init__(self, bus: RedisEventBus, name: str, keep: bool) -> None:
        super().__init__(keep=keep)
        self.bus = bus
        self.name = name
        bus.hold(name)

    def publish(self, name: str, data: Mapping[str, object], event_id: int | None = None) -> Event:
        event = super().publish(name, data, event_id)
        self.bus.append(self.name, {"n": name, "d": json.dumps(data, default=str), "i": "" if event_id is None else str(event_id)})
        return event

    def close(self) -> None:
        if not self.closed:
            self.bus.append(self.name, {"end": "1"}, closing=True)
        super().close()


class MirrorStream(EventHub):
    """A stream another process runs, read from Redis for this process's readers (no publishing here)."""

    def __init__(self, bus: RedisEventBus, name: str) -> None:
        super().__init__(keep=False)  # the history is in Redis: each mirror reads it all again
        self.bus = bus
        self.name = name
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._follow())

    async def _follow(self) -> None:
        key = self.bus.key(self.name)
        last = "0-0"
        try:
            while not self.closed:
                got = await self.bus.client.xread({key: last}, block=BLOCK_MS, count=1000)
                if not got:
                    if not self.subscribers or not await self.bus.client.exists(key):
                        break  # every reader left, or the stream expired
                    continue
                for entry_id, fields in got[0][1]:
                    last = entry_id.decode()
                    if self._take(fields):
                        return
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a lost Redis ends the readers; the client re-attaches with its last id
            log.exception("reading the events of %s from Redis failed", self.name)
        finally:
            super().close()

    def _take(self, fields: dict[bytes, bytes]) -> bool:
        """Hand one entry to the readers; True at the end marker."""
        if b"end" in fields:
            return True
        raw_id = fields.get(b"i", b"")
        super().publish(fields[b"n"].decode(), json.loads(fields[b"d"]), int(raw_id) if raw_id else None)
        return False

    def unsubscribe(self, sub: Any) -> None:
        super().unsubscribe(sub)
        if not self.subscribers and self.task is not None:
            self.task.cancel()

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        super().close()


class RedisTopics(Topics[Any]):
    """An area's topics: this process's readers get an event at once, the other processes' through Redis."""

    def __init__(self, bus: RedisEventBus, name: str) -> None:
        super().__init__()
        self.bus = bus
        self.name = name

    def publish(self, key: Any, name: str, data: Mapping[str, object]) -> None:
        super().publish(key, name, data)
        self.bus.broadcast(self.name, key_code(key), name, data)

    def watched(self, key: Any) -> bool:
        return True  # a reader on another process is not known here: publish (one PUBLISH, dropped when none listens)

    def deliver(self, code: str, name: str, data: Mapping[str, object]) -> None:
        """An event another process published: to this process's readers of that key."""
        for key, hub in list(self.hubs.items()):
            if key_code(key) == code:
                hub.publish(name, data)


def key_code(key: Any) -> str:
    """A topic key as it crosses processes (a tuple key arrives as its JSON list)."""
    return json.dumps(key, separators=(",", ":"), default=str)


class RedisEventBus:
    """Streams on Redis Streams with their owner's lease and a control channel; topics over pub/sub."""

    def __init__(self, url: str, retention_s: float) -> None:
        self.url = url
        self.retention_s = retention_s
        # redis-py types its replies as a union of every shape a command can answer: read them as decoded here
        self.client: Any = aioredis.from_url(url)
        self.process = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self._owned: set[str] = set()
        self._pending: list[tuple[str, dict[str, str], bool]] = []
        self._published: list[str] = []  # topic events for the other processes, in order
        self._topics: dict[str, list[RedisTopics]] = {}
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._handlers: dict[str, Handler] = {}
        self._closing = False

    # ---- the port ----------------------------------------------------------------------------------

    def stream(self, name: str, keep: bool = True) -> RedisStream:
        return RedisStream(self, name, keep)

    def topics(self, name: str) -> RedisTopics:
        bus = RedisTopics(self, name)
        self._topics.setdefault(name, []).append(bus)
        with contextlib.suppress(RuntimeError):  # no loop yet (a bare construction): listening starts with the first write
            asyncio.get_running_loop()
            self._start()  # listen now: a reader subscribed here gets other processes' events from the start
        return bus

    def key(self, name: str) -> str:
        return f"ev:{name}"

    async def attach(self, name: str) -> MirrorStream | None:
        """The stream `name` as another process publishes it (or published it, within its replay window)."""
        try:
            if not await self.client.exists(self.key(name)):
                return None
        except aioredis.RedisError as exc:  # Redis away: nothing to re-attach to here (this process's own turns still are)
            log.warning("re-attaching to %s: Redis did not answer: %s", name, exc)
            return None
        mirror = MirrorStream(self, name)
        mirror.start()
        return mirror

    async def live(self, names: list[str]) -> set[str]:
        """The names among `names` that a living process runs (its lease is current)."""
        if not names:
            return set()
        mine = {n for n in names if n in self._owned}  # held here: live, even before the lease reached Redis
        others = [n for n in names if n not in mine]
        owners = await self.client.mget([f"owner:{n}" for n in others]) if others else []
        return mine | {n for n, owner in zip(others, owners) if owner is not None}

    async def end(self, name: str) -> None:
        """End a stream whose process died: its readers on every process end after what they have."""
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.xadd(self.key(name), {"end": "1"}, maxlen=STREAM_MAXLEN, approximate=True)
            pipe.expire(self.key(name), max(1, int(self.retention_s)))
            pipe.delete(f"owner:{name}")
            await pipe.execute()

    def answer(self, prefix: str, handler: Handler) -> None:
        """Serve asks for this process's streams whose name starts with `prefix`."""
        self._handlers[prefix] = handler
        self._start()

    async def ask(self, name: str, request: JsonObject) -> JsonObject | None:
        """Send `request` to the process that runs stream `name`; its answer, or None when no living process
        runs it (or it did not answer within ASK_TIMEOUT_S)."""
        try:
            owner = await self.client.get(f"owner:{name}")
            if owner is None:
                return None
            reply = f"reply:{secrets.token_hex(8)}"
            sent = await self.client.publish(f"ctl:{owner.decode()}", json.dumps({"name": name, "reply": reply, "request": request}))
            if not sent:
                return None
            got = await self.client.blpop([reply], timeout=ASK_TIMEOUT_S)
        except aioredis.RedisError as exc:  # Redis away: no other process can be reached (the caller answers "nothing runs")
            log.warning("asking the process that runs %s: Redis did not answer: %s", name, exc)
            return None
        answer = json.loads(got[1]) if got else None
        return answer if isinstance(answer, dict) else None

    async def aclose(self) -> None:
        # The writer ends by itself after its flush in flight: cancelled inside a pipeline, redis-py may swallow the
        # cancel and the writer would wait for more forever (seen at a stop that released leases as it cancelled runs).
        self._closing = True
        if self._wake is not None:
            self._wake.set()
        for task in self._tasks[1:]:  # the renewer and the listener (the writer is first)
            task.cancel()
        if self._tasks:
            _, left = await asyncio.wait(self._tasks, timeout=CLOSE_WAIT_S)
            if left:
                log.warning("%d Redis task(s) did not stop within %g s of the close; left behind", len(left), CLOSE_WAIT_S)
        self._tasks = []
        try:
            await self._flush()  # the last events (a turn's `done`) still reach the other processes
            if self._owned:
                await self.client.delete(*[f"owner:{n}" for n in self._owned])
        except aioredis.RedisError as exc:  # the stop goes on: the leases lapse by themselves
            log.warning("the last events could not reach Redis: %s", exc)
        await self.client.aclose()

    # ---- this process's side -----------------------------------------------------------------------

    def hold(self, name: str) -> None:
        self._owned.add(name)
        self.append(name, None)  # the lease is taken with the first write, before any ask can look for it

    def release(self, name: str) -> None:
        if name in self._owned:
            self.append(name, None, closing=True)  # no entry: the lease only goes

    def broadcast(self, topics: str, code: str, name: str, data: Mapping[str, object]) -> None:
        """Queue a topic event for the other processes (it leaves with the next batch, in order)."""
        self._published.append(json.dumps({"o": self.process, "t": topics, "k": code, "n": name, "d": data}, default=str))
        self._start()
        assert self._wake is not None
        self._wake.set()

    def append(self, name: str, fields: dict[str, str] | None, closing: bool = False) -> None:
        """Queue one entry (None: the lease only) for the writer task; entries leave in order, in batches."""
        if closing:
            self._owned.discard(name)  # now, not at the flush: a hold of the same name queued after it stays held
        self._pending.append((name, fields or {}, closing))
        self._start()
        assert self._wake is not None
        self._wake.set()

    def _start(self) -> None:
        if self._wake is None:
            self._wake = asyncio.Event()
            self._tasks = [asyncio.ensure_future(self._write()), asyncio.ensure_future(self._renew()), asyncio.ensure_future(self._listen())]

    async def _write(self) -> None:
        assert self._wake is not None
        while not self._closing:
            await self._wake.wait()
            self._wake.clear()
            if self._closing:
                return  # aclose sends what is left
            try:
                await self._flush()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis away: these events reach this process's readers only
                log.exception("writing events to Redis failed")
                await asyncio.sleep(0.5)

    async def _flush(self) -> None:
        """One round trip for every entry queued since the last."""
        while self._pending or self._published:
            batch, self._pending = self._pending, []
            published, self._published = self._published, []
            async with self.client.pipeline(transaction=False) as pipe:
                for message in published:
                    pipe.publish(TOPICS_CHANNEL, message)
                for name, fields, closing in batch:
                    key = self.key(name)
                    if fields:
                        pipe.xadd(key, fields, maxlen=STREAM_MAXLEN, approximate=True)
                        pipe.expire(key, max(1, int(self.retention_s)) if closing else STREAM_TTL_S)
                    if closing:
                        pipe.delete(f"owner:{name}")
                    elif not fields:
                        pipe.set(f"owner:{name}", self.process, px=int(LEASE_S * 1000))
                await pipe.execute()

    async def _renew(self) -> None:
        """Keep this process's leases while it lives (a killed process's lapse after LEASE_S)."""
        while not self._closing:
            await asyncio.sleep(LEASE_S / 3)
            try:
                if self._owned:
                    async with self.client.pipeline(transaction=False) as pipe:
                        for name in list(self._owned):
                            pipe.set(f"owner:{name}", self.process, px=int(LEASE_S * 1000))
                        await pipe.execute()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - tried again at the next renewal
                log.warning("renewing this process's stream leases in Redis failed", exc_info=True)

    async def _listen(self) -> None:
        """Answer the asks sent to this process (reads return every LISTEN_POLL_S: see CLOSE_WAIT_S)."""
        while not self._closing:
            pubsub = self.client.pubsub()
            try:
                await pubsub.subscribe(f"ctl:{self.process}", TOPICS_CHANNEL)
                while not self._closing:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=LISTEN_POLL_S)
                    if message is None or message.get("type") != "message":
                        continue
                    if message.get("channel") == TOPICS_CHANNEL.encode():
                        self._deliver(json.loads(message["data"]))
                    else:
                        asyncio.ensure_future(self._serve(json.loads(message["data"])))
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis away: listen again in a moment
                if self._closing:
                    return
                log.warning("the control channel of this process failed; listening again", exc_info=True)
                await asyncio.sleep(1.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # its connection goes back (a new one is taken on the next try)

    def _deliver(self, message: dict[str, Any]) -> None:
        """A topic event from the channel: to this process's readers, unless this process published it."""
        if message.get("o") == self.process:
            return  # its readers here had it when it was published
        for bus in self._topics.get(str(message.get("t")), ()):
            bus.deliver(str(message.get("k")), str(message.get("n")), dict(message.get("d") or {}))

    async def _serve(self, message: dict[str, Any]) -> None:
        name = str(message.get("name", ""))
        handler = next((h for prefix, h in self._handlers.items() if name.startswith(prefix)), None)
        answer: JsonObject | None = None
        try:
            answer = await handler(name, dict(message.get("request") or {})) if handler is not None else None
        except Exception:  # noqa: BLE001 - the asker gets an answer either way
            log.exception("answering a request for %s failed", name)
        reply = str(message.get("reply", ""))
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.rpush(reply, json.dumps(answer))
            pipe.expire(reply, int(ASK_TIMEOUT_S) + 2)
            await pipe.execute()
