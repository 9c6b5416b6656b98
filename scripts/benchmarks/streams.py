"""Streamed-event latency and held streams: the platform's SSE chat vs the scripted model read directly."""
from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp


@dataclass
class StreamSample:
    ok: bool = False
    first_event_s: float | None = None  # request sent -> first content event read
    latencies_ms: list[float] = field(default_factory=list)  # per content event: model wrote it -> client read it
    frames: int = 0  # content_delta frames read (fewer than events when the server coalesced them)
    error: str | None = None


def _stamp_latency(text: str, now_ns: int) -> float | None:
    token = text.strip()
    return (now_ns - int(token)) / 1e6 if token.isdigit() else None


async def _sse_lines(resp: aiohttp.ClientResponse) -> Any:
    async for raw in resp.content:
        yield raw.decode("utf-8").rstrip("\r\n")


async def platform_stream(session: aiohttp.ClientSession, base: str, token: str, agent_id: str,
                          conversation_id: str, first_event: asyncio.Event | None = None,
                          hold: asyncio.Event | None = None) -> StreamSample:
    """One SSE chat through the platform; latency of each content_delta from its model-side stamp."""
    sample = StreamSample()
    body = {"agentId": agent_id, "conversationId": conversation_id, "message": "bench"}
    t0 = time.perf_counter()
    try:
        async with session.post(base + "/api/v1/chat/stream", json=body,
                                headers={"Authorization": "Bearer " + token}) as resp:
            event = ""
            async for line in _sse_lines(resp):
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    now = time.time_ns()
                    if event == "content_delta":
                        # a frame may join several chunks (coalesced under load): each stamp is one chunk
                        stamps = [_stamp_latency(t, now) for t in json.loads(line[6:])["delta"].split()]
                        lats = [x for x in stamps if x is not None]
                        sample.frames += 1
                        if lats:
                            if sample.first_event_s is None:
                                sample.first_event_s = time.perf_counter() - t0
                                if first_event is not None:
                                    first_event.set()
                                if hold is not None:
                                    await hold.wait()
                                    sample.ok = True
                                    return sample
                            sample.latencies_ms += lats
                    elif event == "error":
                        sample.error = line[6:]
                    elif event == "done":
                        sample.ok = json.loads(line[6:]).get("status") == "completed"
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
        sample.error = f"{type(exc).__name__}: {exc}"
    return sample


async def direct_stream(session: aiohttp.ClientSession, model_url: str, first_event: asyncio.Event | None = None,
                        hold: asyncio.Event | None = None) -> StreamSample:
    """The same scripted stream read straight from the model server (the baseline)."""
    sample = StreamSample()
    body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "bench"}]}
    t0 = time.perf_counter()
    try:
        async with session.post(model_url + "/v1/chat/completions", json=body) as resp:
            async for line in _sse_lines(resp):
                if not line.startswith("data: "):
                    continue
                now = time.time_ns()
                if line == "data: [DONE]":
                    sample.ok = True
                    break
                choices = json.loads(line[6:]).get("choices") or []
                content = (choices[0].get("delta") or {}).get("content") if choices else None
                lat = _stamp_latency(content, now) if content else None
                if lat is None:
                    continue
                if sample.first_event_s is None:
                    sample.first_event_s = time.perf_counter() - t0
                    if first_event is not None:
                        first_event.set()
                    if hold is not None:
                        await hold.wait()
                        sample.ok = True
                        return sample
                sample.latencies_ms.append(lat)
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
        sample.error = f"{type(exc).__name__}: {exc}"
    return sample


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class LatencyStats:
    streams: int
    completed: int
    ttfe_p50_ms: float
    ttfe_p99_ms: float
    event_p50_ms: float
    event_p99_ms: float
    events: int
    errors: list[str]
    frames: int = 0


def summarize(samples: list[StreamSample]) -> LatencyStats:
    ttfe = [s.first_event_s * 1000 for s in samples if s.first_event_s is not None]
    lat = [x for s in samples for x in s.latencies_ms]
    return LatencyStats(len(samples), sum(s.ok for s in samples), percentile(ttfe, 0.5), percentile(ttfe, 0.99),
                        percentile(lat, 0.5), percentile(lat, 0.99), len(lat),
                        sorted({s.error for s in samples if s.error})[:3], sum(s.frames for s in samples))


def connector() -> aiohttp.TCPConnector:
    return aiohttp.TCPConnector(limit=0, force_close=True)


async def run_platform(base: str, token: str, agent_id: str, n: int, timeout: float = 120, rounds: int = 1) -> LatencyStats:
    """`rounds` bursts of n concurrent streams, one after another; the figures are over all their samples."""
    samples: list[StreamSample] = []
    async with aiohttp.ClientSession(connector=connector(), timeout=aiohttp.ClientTimeout(total=timeout)) as s:
        for _ in range(rounds):
            tag = uuid.uuid4().hex[:8]
            samples += await asyncio.gather(*(platform_stream(s, base, token, agent_id, f"lat-{tag}-{i}") for i in range(n)))
    return summarize(samples)


async def run_direct(model_url: str, n: int, timeout: float = 120, rounds: int = 1) -> LatencyStats:
    samples: list[StreamSample] = []
    async with aiohttp.ClientSession(connector=connector(), timeout=aiohttp.ClientTimeout(total=timeout)) as s:
        for _ in range(rounds):
            samples += await asyncio.gather(*(direct_stream(s, model_url) for _ in range(n)))
    return summarize(samples)


@dataclass
class HeldResult:
    wanted: int
    held: int
    seconds_to_hold: float
    errors: list[str]


async def hold_streams(n: int, open_one: Any, on_held: Any, timeout: float = 90) -> HeldResult:
    """Open n streams, wait until each has its first content event, call on_held(), then let go."""
    release = asyncio.Event()
    started = time.perf_counter()
    firsts = [asyncio.Event() for _ in range(n)]
    async with aiohttp.ClientSession(connector=connector(), timeout=aiohttp.ClientTimeout(total=timeout + 30)) as s:
        tasks = [asyncio.create_task(open_one(s, firsts[i], release, i)) for i in range(n)]
        waiting = [asyncio.create_task(e.wait()) for e in firsts]
        done, pending = await asyncio.wait(waiting, timeout=timeout)
        for p in pending:
            p.cancel()
        held = sum(e.is_set() for e in firsts)
        elapsed = time.perf_counter() - started
        await on_held()
        release.set()
        for t in tasks:
            if not t.done():
                t.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    errors = sorted({r.error for r in results if isinstance(r, StreamSample) and r.error})[:3]
    return HeldResult(n, held, elapsed, errors)
