"""A chat stream whose client falls behind gets its waiting deltas as fewer frames (joined text, last id):
nothing lost, order kept, ids increasing, and a re-attach with the last id it received resumes exactly."""

from __future__ import annotations

import asyncio
import json
import socket
from urllib.parse import urlsplit

from tests.helpers.chat import ChatEnv, names, text_of
from tests.helpers.client import SseEvent
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script

# Deltas big enough that the answer outgrows the socket buffers of a client that does not read.
CHUNKS = [f"<{i:04d}>" + "x" * 12000 + " " for i in range(500)]
ANSWER = "".join(CHUNKS)


class SlowClient:
    """A plain HTTP/1.1 client over a socket with a small receive buffer that reads only when told:
    the server's writes back up, as with a reader on a slow network."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.text = ""  # SSE text received, not yet parsed into events

    @classmethod
    async def post(cls, base_url: str, path: str, token: str, body: dict[str, object]) -> SlowClient:
        url = urlsplit(base_url)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (url.hostname, url.port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        writer.write(head.encode() + payload)
        await writer.drain()
        client = cls(reader, writer)
        return client

    async def _headers(self) -> None:
        status = await self.reader.readline()
        assert b" 200 " in status, status
        while (await self.reader.readline()) not in (b"\r\n", b""):
            pass

    async def events(self, until_done: bool = True, stop: int | None = None) -> list[SseEvent]:
        """Read chunks and parse frames: to the `done` event, or until `stop` events were read."""
        if not self.text and not hasattr(self, "_started"):
            self._started = True
            await self._headers()
        out: list[SseEvent] = []
        while True:
            while "\n\n" in self.text:
                block, self.text = self.text.split("\n\n", 1)
                out.append(_event(block))
                if out[-1].event == "done" or (stop is not None and len(out) >= stop):
                    return out
            size = int((await self.reader.readline()).strip() or b"0", 16)
            if size == 0:
                return out
            self.text += (await self.reader.readexactly(size + 2))[:-2].decode()

    def close(self) -> None:
        self.writer.close()


def _event(block: str) -> SseEvent:
    fields = dict(line.split(": ", 1) for line in block.split("\n"))
    return SseEvent(fields["event"], json.loads(fields["data"]), int(fields["id"]) if "id" in fields else None)


async def _open(env: ChatEnv) -> SlowClient:
    body: dict[str, object] = {"agentId": env.agent_id, "conversationId": "c1", "message": "go"}
    return await SlowClient.post(env.api.base_url, "/api/v1/chat/stream", env.api.tokens["alice"], body)


async def _turn_done(env: ChatEnv) -> None:
    async def idle() -> bool:
        r = await env.api.get("/api/v1/conversations/c1/status", token="alice")
        return r.status == 200 and r.data["streamStatus"] == "idle"

    await eventually(idle, timeout=30)


async def test_a_client_that_falls_behind_gets_fewer_frames_with_the_whole_text_in_order(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=CHUNKS, delay_s=0.001))
    slow = await _open(env)
    try:
        await _turn_done(env)  # the whole answer was streamed while this client read nothing
        events = await slow.events()
    finally:
        slow.close()
    deltas = [e for e in events if e.event == "content_delta"]
    assert text_of(events) == ANSWER  # nothing lost, nothing twice, in order
    assert len(deltas) < len(CHUNKS) // 2  # the deltas that waited for the socket left as a few frames
    ids = [e.id for e in events]
    assert all(isinstance(i, int) for i in ids) and ids == sorted(set(ids))  # strictly increasing
    assert names(events)[-2:] == ["message_complete", "done"] and events[-1].data["status"] == "completed"
    msgs = await env.messages()
    assert msgs[-1]["content"] == ANSWER


async def test_a_reattach_with_the_last_id_of_a_joined_frame_loses_and_repeats_nothing(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text=CHUNKS, delay_s=0.001))
    slow = await _open(env)
    try:
        await _turn_done(env)
        first: list[SseEvent] = []
        while not any(e.event == "content_delta" and e.data["delta"].count("<") > 1 for e in first):
            got = await slow.events(stop=1)  # up to and including a frame of several deltas
            assert got and got[-1].event != "done", "no frame joined several deltas"
            first += got
        first += await slow.events(stop=1)
        assert first[-1].event != "done"
    finally:
        slow.close()
    rest = await env.stream(conversation_id="c1", reconnect=True, lastEventId=str(first[-1].id))
    combined = first + rest
    assert text_of(combined) == ANSWER
    ids = [e.id for e in combined]
    assert ids == sorted(set(ids)) and names(combined).count("meta") == 1 and names(combined)[-1] == "done"
    # the replay after that id is the kept events, one per delta: the same text from there on
    replay = await env.stream(conversation_id="c1", reconnect=True, lastEventId="0")
    assert text_of(replay) == ANSWER and len([e for e in replay if e.event == "content_delta"]) == len(CHUNKS)


async def test_a_client_that_keeps_up_gets_one_frame_per_delta(env: ChatEnv) -> None:
    chunks = [f"w{i} " for i in range(12)]
    env.llm.enqueue(Script(text=chunks, delay_s=0.05))  # apart by more than a loaded loop's pass
    events = await env.stream("go")
    assert [e.data["delta"] for e in events if e.event == "content_delta"] == chunks
