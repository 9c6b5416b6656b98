"""`scripts/bench --processes 1,2`: the same server on PostgreSQL + Redis with 1 and 2 worker processes
(`serve --workers N`), measured in one run on one machine: the list routes' requests/s and 100 chat
streams (time to first event, per-event p50/p99), with the ratio of each figure to the 1-process one.

Each size gets a fresh PostgreSQL database (the tests' private cluster, tests/helpers/postgres.py) and an
emptied Redis (tests/helpers/redis_server.py), the same seed (20 agents, 30 conversations) and the same
scripted model. Writes docs/benchmarks.md's "One process and two" section between its own markers.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import statistics
from dataclasses import dataclass, field

import aiohttp

from scripts.benchmarks import load, streams
from scripts.benchmarks.procs import ADMIN, Proc, cpu_seconds, model_proc, platform_proc
from scripts.benchmarks.report import fmt
from tests.helpers import postgres, redis_server
from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient
from tests.helpers.models import use_fake_openai

HEALTH = "/api/v1/system/health"
ENDPOINTS = ("/api/v1/agents", "/api/v1/conversations/page")
STREAMS = 100
CHUNKS, DELAY_MS = 20, 20  # the model's script for the streams: 20 chunks 20 ms apart
BEGIN, END = "<!-- processes:begin -->", "<!-- processes:end -->"


@dataclass
class Size:
    workers: int
    rps: dict[str, float] = field(default_factory=dict)
    p99_ms: dict[str, float] = field(default_factory=dict)
    stream: streams.LatencyStats | None = None
    cpu_s: float = 0.0


def parse(text: str) -> list[int]:
    sizes = [int(x) for x in text.split(",") if x.strip()]
    if not sizes or any(n < 1 for n in sizes):
        raise ValueError("--processes: worker counts such as 1,2")
    return sizes


def check_services() -> str | None:
    """Why the step cannot run here (PostgreSQL or redis-server missing), or None."""
    if not shutil.which("redis-server") and not os.path.exists("/usr/bin/redis-server"):
        return "redis-server is not installed (apt-get install -y redis-server)"
    try:
        postgres._bin("initdb")
    except RuntimeError as exc:
        return str(exc)
    return None


def workers_cpu(proc: Proc) -> float:
    """CPU seconds of the supervisor's workers (the supervisor itself only waits)."""
    try:
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as fh:
            kids = [int(k) for k in fh.read().split()]
    except OSError:
        kids = []
    return sum(cpu_seconds(k) for k in kids) + cpu_seconds(proc.pid)


async def control(model: Proc, chunks: int, delay_ms: float) -> None:
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{model.url}/control?chunks={chunks}&delay_ms={delay_ms}") as r:
            assert r.status == 200


async def measure(workers: int, work: str, model: Proc, seconds: float, rounds: int) -> Size:
    cluster = postgres.cluster()
    database_url = cluster.fresh_database()
    redis = redis_server._server
    if redis is None:  # the tests' private redis-server (no pytest here to skip: check_services() ran first)
        redis = redis_server._server = redis_server._start(shutil.which("redis-server") or "/usr/bin/redis-server")
        atexit.register(redis.stop)
    redis.flush()
    data_dir = os.path.join(work, f"data-{workers}")
    server = platform_proc(data_dir, os.path.join(work, f"workers-{workers}.log"), database_url=database_url,
                           redis_url=redis.url, workers=str(workers), log_level="WARNING")
    server.spawn()
    size = Size(workers)
    try:
        await server.wait_ready("/api/v1/setup/status", timeout=60)
        async with aiohttp.ClientSession() as s:
            api = ApiClient(server.url, s)
            r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
            token = r.data["token"]
            api.tokens["alice"] = token
            await use_fake_openai(api, model.url + "/v1")
            agent = await make_agent(api)
            for i in range(19):
                await make_agent(api, name=f"Agent {i}", description="A seeded agent for the benchmark " * 3)
        await control(model, 3, 0)
        await streams.run_platform(server.url, token, agent, 30)  # 30 conversations; every worker warmed
        headers = {"Authorization": "Bearer " + token}
        before = workers_cpu(server)
        for path in ENDPOINTS:
            print(f"bench: {workers} worker(s): requests/s {path}", flush=True)
            await asyncio.to_thread(load.measure, server.url + path, headers, 1)  # warm-up
            results = [await asyncio.to_thread(load.measure, server.url + path, headers, seconds) for _ in range(rounds)]
            size.rps[path] = statistics.mean(x.rps for x in results)
            size.p99_ms[path] = max((x.p99_ms or 0) for x in results)
        print(f"bench: {workers} worker(s): {STREAMS} streams", flush=True)
        await control(model, CHUNKS, DELAY_MS)
        size.stream = await streams.run_platform(server.url, token, agent, STREAMS)
        size.cpu_s = workers_cpu(server) - before
    finally:
        server.stop(timeout=40)
        cluster.drop(database_url)
    return size


async def run(work: str, sizes: list[int], seconds: float, rounds: int) -> list[Size]:
    model = model_proc(os.path.join(work, "model-processes.log"), 3, 0)
    model.spawn()
    try:
        await model.wait_ready("/v1/models")
        return [await measure(n, work, model, seconds, rounds) for n in sizes]
    finally:
        model.stop()


def markdown(results: list[Size], context: list[str]) -> list[str]:
    base = results[0]
    out = [BEGIN, "", "## One process and two (`scripts/bench --processes 1,2`)", ""]
    out += [f"- {c}" for c in context] + [""]
    out += ["| Figure | " + " | ".join(f"{r.workers} process{'es' if r.workers > 1 else ''}" for r in results)
            + " | Ratio to 1 |", "|---|" + "---|" * len(results) + "---|"]

    def ratio(values: list[float]) -> str:
        return " / ".join(f"x{v / values[0]:.2f}" if values[0] else "-" for v in values[1:]) or "-"

    for path in ENDPOINTS:
        values = [r.rps.get(path, 0.0) for r in results]
        cells = [f"{fmt(v, '', 0)} (p99 {fmt(r.p99_ms.get(path), ' ms')})" for v, r in zip(values, results)]
        out.append(f"| GET {path} req/s | " + " | ".join(cells) + f" | {ratio(values)} |")
    stats = [r.stream for r in results]
    if all(stats):
        for label, pick, digits in (("Time to first event p50", "ttfe_p50_ms", 1), ("Time to first event p99", "ttfe_p99_ms", 1),
                                    ("Per-event latency p50", "event_p50_ms", 2), ("Per-event latency p99", "event_p99_ms", 2)):
            values = [float(getattr(s, pick)) for s in stats if s is not None]
            out.append(f"| {label}, {STREAMS} streams | " + " | ".join(fmt(v, " ms", digits) for v in values)
                       + f" | {ratio(values)} |")
        out.append(f"| Streams completed, {STREAMS} | "
                   + " | ".join(f"{s.completed}/{s.streams}" + (f" ({s.errors[0][:80]})" if s.errors else "") for s in stats if s)
                   + " | - |")
    out.append("| Worker CPU seconds, lists + streams | " + " | ".join(fmt(r.cpu_s, " s", 1) for r in results)
               + f" | {ratio([r.cpu_s for r in results])} |")
    if base.workers == 1:
        out += ["", "Ratios above 1 for req/s, and below 1 for latency, mean the second process helps."]
    out += ["", END]
    return out


def write(path: str, lines: list[str]) -> None:
    """Replace this section of docs/benchmarks.md (appended the first time), keeping the rest."""
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    block = "\n".join(lines)
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as fh:
        fh.write(text)
