"""scripts/bench: measure the platform beside its baselines, print a table, write docs/benchmarks.md."""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from scripts.benchmarks import load, persist, processes, scale, streams, wiki_search
from scripts.benchmarks.procs import (ADMIN, ROOT, Proc, bare_proc, cpu_seconds, model_proc, platform_proc, relay_proc,
                                      raise_nofile, rss_mb)
from scripts.benchmarks.report import Row, fmt, profile_summary, table, write_markdown
from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient
from tests.helpers.models import use_fake_openai

HEALTH = "/api/v1/system/health"
ENDPOINTS = ("/api/v1/agents", "/api/v1/conversations/page")


@dataclass
class Settings:
    http_seconds: float = 5.0
    http_rounds: int = 2
    cold_runs: int = 3
    latency_streams: tuple[int, ...] = (10, 100, 500)
    held_streams: int = 1000
    persist_chats: int = 200
    persist_seconds: float = 10.0
    wiki_chunks: tuple[int, ...] = (10_000, 100_000)
    wiki_queries: int = 50
    profile: bool = False
    only: str = ""  # one step by name (wiki-search, streams), or every step
    scale: tuple[int, ...] = ()  # --scale: the data multipliers to measure (scale.py), instead of the other steps
    scale_queries: int = 50
    scale_pad: bool = True  # pad each database to 100 MB / 1 GB / 5 GB (restart, backup and RSS figures)


@dataclass
class Bench:
    s: Settings
    work: str
    rows: list[Row] = field(default_factory=list)
    context: list[str] = field(default_factory=list)
    profiles: dict[str, list[str]] = field(default_factory=dict)
    logs: list[str] = field(default_factory=list)
    model: Proc | None = None
    token: str = ""
    agent_id: str = ""
    scale_run: scale.ScaleRun | None = None

    def note(self, text: str) -> None:
        print(f"bench: {text}", flush=True)

    def path(self, name: str) -> str:
        return os.path.join(self.work, name)

    def platform(self, name: str, data_dir: str, profile: bool = False) -> Proc:
        log_path = self.path(f"{name}.log")
        self.logs.append(log_path)
        proc = platform_proc(data_dir, log_path)
        proc.spawn(self.path(f"{name}.pyspy") if profile else None)
        return proc

    def stop_platform(self, proc: Proc, name: str, phases: str) -> None:
        proc.stop()
        if proc.profiled:
            self.profiles[f"{name} ({phases})"] = profile_summary(self.path(f"{name}.pyspy"))

    async def control(self, chunks: int, delay_ms: float) -> None:
        assert self.model is not None
        async with aiohttp.ClientSession() as s:
            async with s.post(f"{self.model.url}/control?chunks={chunks}&delay_ms={delay_ms}") as r:
                assert r.status == 200

    async def login(self, url: str) -> str:
        async with aiohttp.ClientSession() as s:
            api = ApiClient(url, s)
            r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
            assert r.status == 200, r.body
            return r.data["token"]

    async def point_provider(self, url: str, model_url: str) -> None:
        async with aiohttp.ClientSession() as s:
            api = ApiClient(url, s, {"alice": self.token})
            r = await api.put("/api/v1/models/fake/config", {"baseUrl": model_url + "/v1"}, token="alice")
            if r.status != 200:
                raise RuntimeError(f"cannot point the provider at {model_url}: {r.body}")

    # ---- cold start ---------------------------------------------------------------------

    async def cold_start(self, data_dir: str) -> None:
        self.note("cold start")
        first = self.platform("first-start", data_dir)
        deadline = time.perf_counter() + 60
        while True:
            try:
                self.token = await self.login(first.url)
                break
            except (aiohttp.ClientError, AssertionError):
                if time.perf_counter() > deadline or (first.proc and first.proc.poll() is not None):
                    raise RuntimeError(f"platform did not start; see {first.log_path}")
                await asyncio.sleep(0.005)
        headers = {"Authorization": "Bearer " + self.token}
        first_s = await first.wait_ready(HEALTH, headers)
        first.stop()
        body = self.path("health.json")
        with open(body, "wb") as fh:
            fh.write(b'{"code":200,"msg":"success","data":{"status":"UP","database":"UP"}}')
        restarts, bares = [], []
        for i in range(self.s.cold_runs):
            bare = bare_proc({HEALTH: body}, self.path("bare-cold.log"))
            bare.spawn()
            bares.append(await bare.wait_ready(HEALTH))
            bare.stop()
            again = self.platform(f"restart-{i}", data_dir)
            restarts.append(await again.wait_ready(HEALTH, headers))
            again.stop()
        bare_s = statistics.median(bares)
        restart_s = statistics.median(restarts)
        self.rows.append(Row("Cold start to healthy health, restart (median)", fmt(restart_s, " s", 2),
                             fmt(bare_s, " s", 2), f"x{restart_s / bare_s:.1f}", "<= 0.8 s", restart_s <= 0.8))
        self.rows.append(Row("Cold start, first run (migrations, admin, login)", fmt(first_s, " s", 2),
                             fmt(bare_s, " s", 2), f"x{first_s / bare_s:.1f}", "< 1.5 s", first_s < 1.5))

    # ---- request rate ---------------------------------------------------------------------

    async def seed(self, url: str) -> None:
        async with aiohttp.ClientSession() as s:
            api = ApiClient(url, s, {"alice": self.token})
            assert self.model is not None
            await use_fake_openai(api, self.model.url + "/v1")
            self.agent_id = await make_agent(api)
            for i in range(19):
                await make_agent(api, name=f"Agent {i}", description="A seeded agent for the benchmark " * 3)
        await self.control(3, 0)
        await streams.run_platform(url, self.token, self.agent_id, 30)

    async def request_rate(self, server: Proc) -> None:
        headers = {"Authorization": "Bearer " + self.token}
        routes: dict[str, str] = {}
        async with aiohttp.ClientSession() as s:
            for i, path in enumerate(ENDPOINTS):
                async with s.get(server.url + path, headers=headers) as r:
                    assert r.status == 200, await r.text()
                    routes[path] = self.path(f"body-{i}.json")
                    with open(routes[path], "wb") as fh:
                        fh.write(await r.read())
        bare = bare_proc(routes, self.path("bare.log"))
        bare.spawn()
        await bare.wait_ready(ENDPOINTS[0])
        tool = ""
        try:
            for path in ENDPOINTS:
                self.note(f"requests/s {path}")
                await asyncio.to_thread(load.measure, server.url + path, headers, 1)  # warm-up
                ours, theirs = [], []
                cpu = {"ours": [0.0, 0], "theirs": [0.0, 0]}
                for _ in range(self.s.http_rounds):
                    for side, proc, results in (("ours", server, ours), ("theirs", bare, theirs)):
                        before = cpu_seconds(proc.server_pid())
                        results.append(await asyncio.to_thread(load.measure, proc.url + path, headers,
                                                               self.s.http_seconds))
                        cpu[side][0] += cpu_seconds(proc.server_pid()) - before
                        cpu[side][1] += results[-1].requests
                tool = ours[0].tool
                rps = statistics.mean(r.rps for r in ours)
                base = statistics.mean(r.rps for r in theirs)
                errors = sum(r.errors for r in ours)
                p99 = max((r.p99_ms or 0) for r in ours)
                self.rows.append(Row(f"GET {path} req/s (p99 {fmt(p99, ' ms')}{', errors ' + str(errors) if errors else ''})",
                                     fmt(rps, "", 0), fmt(base, "", 0), f"{rps / base:.2f}", ">= 0.50",
                                     rps / base >= 0.5 and errors == 0))
                ours_us = 1e6 * cpu["ours"][0] / max(cpu["ours"][1], 1)
                theirs_us = 1e6 * cpu["theirs"][0] / max(cpu["theirs"][1], 1)
                self.rows.append(Row(f"  server CPU per request, {path}", fmt(ours_us, " us", 0),
                                     fmt(theirs_us, " us", 0), f"x{ours_us / max(theirs_us, 1e-9):.1f}", "-", None))
        finally:
            bare.stop()
        self.context.append(f"Load generator: {tool}, one thread, 16 keep-alive connections, "
                            f"{self.s.http_rounds} x {self.s.http_seconds:g} s per side, alternating; it shares the "
                            "2 cores with the server under test, so absolute figures understate a dedicated host.")

    # ---- streaming ----------------------------------------------------------------------------

    async def latency(self, server: Proc) -> None:
        levels = [(n, *((50, 20) if n <= 100 else (20, 100))) for n in self.s.latency_streams]
        if 500 in self.s.latency_streams:  # issue 34: the same 500 streams with the model 5x faster (CPU-bound)
            levels.append((500, 50, 20))
        for n, chunks, delay in levels:
            label = f"{n} streams" + (f" ({delay} ms apart)" if n >= 500 else "")
            self.note(f"stream latency at {n} concurrent streams ({chunks} chunks, {delay} ms apart)")
            await self.control(chunks, delay)
            assert self.model is not None
            rounds = 5 if n <= 10 else 1  # one burst of 10 gives a p50 of 10 samples: five give 50
            direct = await streams.run_direct(self.model.url, n, rounds=rounds)
            before = cpu_seconds(server.server_pid())
            ours = await streams.run_platform(server.url, self.token, self.agent_id, n, rounds=rounds)
            cpu_per_event = 1e6 * (cpu_seconds(server.server_pid()) - before) / max(ours.events, 1)
            errors = f" ({ours.completed}/{ours.streams} completed{'; ' + ours.errors[0][:60] if ours.errors else ''})"
            added_ttfe = ours.ttfe_p50_ms - direct.ttfe_p50_ms
            ok = ours.completed == ours.streams
            if n <= 10:  # the issues' targets: the platform's own share of the first event (issue 34), and of each event
                ttfe_target, ttfe_met = "<= +10 ms p50", added_ttfe <= 10 and ok
            else:
                limit = 150 if n <= 100 else 1000
                ttfe_target, ttfe_met = f"<= {limit:,} ms p50", ours.ttfe_p50_ms <= limit and ok
            bursts = f", {rounds} bursts" if rounds > 1 else ""
            self.rows.append(Row(f"Time to first event, {label}{bursts}, p50 / p99{errors}",
                                 f"{fmt(ours.ttfe_p50_ms, ' ms')} / {fmt(ours.ttfe_p99_ms, ' ms')}",
                                 f"{fmt(direct.ttfe_p50_ms, ' ms')} / {fmt(direct.ttfe_p99_ms, ' ms')}",
                                 f"+{fmt(added_ttfe, ' ms')} p50", ttfe_target, ttfe_met))
            added_p50 = ours.event_p50_ms - direct.event_p50_ms
            added_p99 = ours.event_p99_ms - direct.event_p99_ms
            if n <= 10:
                event_target, event_met = "<= +1 ms p99", added_p99 <= 1 and ok
            elif n >= 500:  # issue 34: a loaded server stays within twice the model's own per-event p50
                event_target, event_met = "<= x2 p50", ours.event_p50_ms <= 2 * direct.event_p50_ms and ok
            else:
                event_target, event_met = "-", None
            self.rows.append(Row(f"Per-event latency, {label}, p50 / p99 ({ours.events} events in {ours.frames} frames)",
                                 f"{fmt(ours.event_p50_ms, ' ms', 2)} / {fmt(ours.event_p99_ms, ' ms', 2)}",
                                 f"{fmt(direct.event_p50_ms, ' ms', 2)} / {fmt(direct.event_p99_ms, ' ms', 2)}",
                                 f"+{fmt(added_p50, ' ms', 2)} / +{fmt(added_p99, ' ms', 2)}", event_target, event_met))
            self.rows.append(Row(f"  server CPU per streamed event, {label} (turn setup included)",
                                 fmt(cpu_per_event, " us", 0), "-", "-", "-", None))
            if n <= 10 or n >= 500:  # at 500: whether the stack itself stays within x2 of the model (issue 34)
                await self.floor(n, rounds, direct, label)
        await self.turn_cost(server)
        self.context.append("Stream latency: the scripted model stamps each chunk with the time it wrote it; the "
                            "client reads the stamp on arrival, through the platform's SSE chat and straight from "
                            "the model (baseline), so 'added' is the platform's own delay per event.")

    async def floor(self, n: int, rounds: int, direct: streams.LatencyStats, label: str) -> None:
        """The same streams through a minimal Tornado + aiohttp relay (relay.py): what the stack itself adds,
        with its CPU per event (its connections' setup included, as the platform's rows include turn setup)."""
        assert self.model is not None
        relay = relay_proc(self.model.url, self.path("relay.log"))
        relay.spawn()
        try:
            await relay.wait_ready("/health")
            before = cpu_seconds(relay.pid)
            floor = await streams.run_platform(relay.url, "-", "-", n, rounds=rounds)
            cpu_us = 1e6 * (cpu_seconds(relay.pid) - before) / max(floor.events, 1)
        finally:
            relay.stop()
        ratio = f", x{floor.event_p50_ms / direct.event_p50_ms:.1f} p50" if n >= 500 else ""
        self.rows.append(Row(f"  the stack's floor: a minimal Tornado + aiohttp relay, {label}, per-event p50 / p99 "
                             f"(its CPU per event {cpu_us:.0f} us{ratio})",
                             f"{fmt(floor.event_p50_ms, ' ms', 2)} / {fmt(floor.event_p99_ms, ' ms', 2)}",
                             f"{fmt(direct.event_p50_ms, ' ms', 2)} / {fmt(direct.event_p99_ms, ' ms', 2)}",
                             f"+{fmt(floor.event_p50_ms - direct.event_p50_ms, ' ms', 2)} / "
                             f"+{fmt(floor.event_p99_ms - direct.event_p99_ms, ' ms', 2)}", "-", None))

    async def turn_cost(self, server: Proc, bursts: int = 8, n: int = 50) -> None:
        """Server CPU per chat turn (one-chunk answers, bursts of 50 new conversations) beside the relay's CPU per
        stream: what a turn's own work (auth, its writes and commits, setup, history) costs above the stack's."""
        assert self.model is not None
        await self.control(1, 0)
        pid = server.server_pid()
        before = cpu_seconds(pid)
        ours = await streams.run_platform(server.url, self.token, self.agent_id, n, rounds=bursts)
        turn_us = 1e6 * (cpu_seconds(pid) - before) / max(ours.streams, 1)
        relay = relay_proc(self.model.url, self.path("relay.log"))
        relay.spawn()
        try:
            await relay.wait_ready("/health")
            before = cpu_seconds(relay.pid)
            floor = await streams.run_platform(relay.url, "-", "-", n, rounds=bursts)
            stream_us = 1e6 * (cpu_seconds(relay.pid) - before) / max(floor.streams, 1)
        finally:
            relay.stop()
        self.rows.append(Row(f"  server CPU per chat turn, one-chunk answers, {bursts} bursts of {n} ({ours.completed}/{ours.streams} "
                             "completed; baseline: the relay's CPU per stream)", fmt(turn_us, " us", 0), fmt(stream_us, " us", 0),
                             f"x{turn_us / max(stream_us, 1e-9):.1f}", "-", None))

    async def held(self, data_dir: str) -> None:
        n = self.s.held_streams
        self.note(f"holding {n} concurrent streams")
        model = model_proc(self.path("model-held.log"), 30, 1000)
        model.spawn()
        await model.wait_ready("/v1/models")
        model_idle = rss_mb(model.pid)
        direct_peak = [0.0]

        async def direct_one(s: aiohttp.ClientSession, first: asyncio.Event, hold: asyncio.Event, i: int) -> Any:
            return await streams.direct_stream(s, model.url, first, hold)

        async def measure_model() -> None:
            direct_peak[0] = rss_mb(model.pid)

        direct = await streams.hold_streams(n, direct_one, measure_model)
        server = self.platform("held", data_dir, self.s.profile)
        await server.wait_ready(HEALTH, {"Authorization": "Bearer " + self.token})
        await self.point_provider(server.url, model.url)
        await asyncio.sleep(0.5)
        idle = rss_mb(server.server_pid())
        peak = [0.0]

        async def platform_one(s: aiohttp.ClientSession, first: asyncio.Event, hold: asyncio.Event, i: int) -> Any:
            return await streams.platform_stream(s, server.url, self.token, self.agent_id, f"held-{i}", first, hold)

        async def measure_platform() -> None:
            peak[0] = rss_mb(server.server_pid())

        ours = await streams.hold_streams(n, platform_one, measure_platform)
        after = rss_mb(server.server_pid())
        self.stop_platform(server, "held", "held streams")
        model.stop()
        note = f"; {ours.errors[0][:60]}" if ours.errors else ""
        self.rows.append(Row(f"Concurrent chat streams held (all open in {ours.seconds_to_hold:.1f} s{note})",
                             f"{ours.held} / {n}", f"{direct.held} / {n} (model direct)",
                             f"{ours.held / max(direct.held, 1):.2f}", f">= {n}", ours.held >= n))
        self.rows.append(Row("Resident memory, idle (local model not loaded)", fmt(idle, " MB"),
                             fmt(model_idle, " MB") + " (bare Tornado)", f"x{idle / model_idle:.1f}", "< 300 MB",
                             idle < 300))
        self.rows.append(Row(f"Resident memory holding {ours.held} streams", fmt(peak[0], " MB"),
                             fmt(direct_peak[0], " MB") + f" (model holding {direct.held})",
                             f"x{peak[0] / max(direct_peak[0], 1):.1f}", "< 300 MB", 0 < peak[0] < 300))
        self.context.append(f"Held streams: the model streams 30 chunks 1 s apart; a stream counts as held once its "
                            f"first content event arrived; memory sampled then (after the clients left: {after:.0f} MB).")

    async def persistence(self, data_dir: str) -> None:
        self.note(f"messages persisted under {self.s.persist_chats} concurrent chats")
        server = self.platform("persist", data_dir, self.s.profile)
        await server.wait_ready(HEALTH, {"Authorization": "Bearer " + self.token})
        await self.point_provider(server.url, self.model.url if self.model else "")
        await self.control(5, 0)
        db_path = os.path.join(data_dir, "platform.db")
        cpu_before = cpu_seconds(server.server_pid())
        result = await persist.chat_load(server.url, self.token, self.agent_id, db_path, self.s.persist_chats,
                                         self.s.persist_seconds)
        cpu_per_turn = 1e6 * (cpu_seconds(server.server_pid()) - cpu_before) / max(result.turns, 1)
        self.stop_platform(server, "persist", "messages persisted")
        baseline = await asyncio.to_thread(persist.sqlite_baseline, db_path, self.work, 3.0)
        locked = 0
        for log_path in self.logs:
            with open(log_path, errors="replace") as fh:
                locked += fh.read().count("database is locked")
        self.rows.append(Row(f"Messages persisted/s, {result.chats} chats ({result.turns} turns, "
                             f"{result.failed_turns} failed)", fmt(result.per_second, "", 0),
                             fmt(baseline, "", 0) + " (raw sqlite3)", f"{result.per_second / baseline:.2f}", ">= 1,000",
                             result.per_second >= 1000 and result.failed_turns == 0))
        # the main before/after figure: it moves little with the machine's load (one core's worth is 1e6 / this turns/s)
        self.rows.append(Row(f"  server CPU per chat turn, {result.chats} chats (two messages stored)", fmt(cpu_per_turn, " us", 0),
                             "-", "-", "-", None))
        self.rows.append(Row("'database is locked' in the server logs (whole run)", str(locked), "0", "-", "0",
                             locked == 0))

    async def blocking(self, data_dir: str) -> None:
        """The same work under asyncio's debug mode, which logs every callback that holds the loop >= 50 ms."""
        self.note("IOLoop blocking check (asyncio debug mode: callbacks of 50 ms or more are logged)")
        log_path = self.path("blocking.log")
        self.logs.append(log_path)
        server = platform_proc(data_dir, log_path)
        server.env["PYTHONASYNCIODEBUG"] = "1"
        server.spawn()
        await server.wait_ready(HEALTH, {"Authorization": "Bearer " + self.token})
        assert self.model is not None
        await self.point_provider(server.url, self.model.url)
        await self.control(20, 20)
        streamed = await streams.run_platform(server.url, self.token, self.agent_id, 100)
        headers = {"Authorization": "Bearer " + self.token}
        for path in ENDPOINTS:
            await asyncio.to_thread(load.measure, server.url + path, headers, 2)
        await self.control(5, 0)
        chats = await persist.chat_load(server.url, self.token, self.agent_id, os.path.join(data_dir, "platform.db"), 50, 3)
        server.stop()
        with open(log_path, errors="replace") as fh:
            lines = fh.read().splitlines()
        # the main task's steps are the start and the stop (asyncio/runners.py created it), not serving
        slow = [line for line in lines if "Executing" in line and " took " in line and "asyncio/runners.py" not in line]
        work = f"100 streams ({streamed.completed} completed), lists, {chats.turns} chat turns"
        self.rows.append(Row(f"IOLoop callbacks holding it >= 50 ms while serving, asyncio debug mode ({work})", str(len(slow)), "-", "-",
                             "0", not slow))
        if slow:
            self.context.append("Slowest callbacks: " + "; ".join(line.strip()[-160:] for line in slow[:3]))

    async def wiki_search(self) -> None:
        """Step `wiki-search`: the search preview's service calls over a KB filled directly (wiki_search.py)."""
        for size in self.s.wiki_chunks:
            self.note(f"wiki search over {size:,} chunks")
            r = (await asyncio.to_thread(wiki_search.run, (size,), wiki_search.DIMS, self.s.wiki_queries))[0]
            big = size >= 100_000
            self.rows.append(Row(f"Wiki search, {size:,} chunks / {r.pages:,} pages, pages + chunks hybrid, p50 / p95 "
                                 f"({self.s.wiki_queries} queries)", f"{fmt(r.p50_ms, ' ms')} / {fmt(r.p95_ms, ' ms')}",
                                 "-", "-", f"< {wiki_search.TARGET_P95_MS:.0f} ms p95" if big else "-",
                                 r.p95_ms < wiki_search.TARGET_P95_MS if big else None))
            self.rows.append(Row(f"  first wiki search after a change, {size:,} chunks (the KB's vectors read into memory)",
                                 fmt(r.first_ms, " ms", 0), "-", "-", "-", None))
        self.context.append(f"Wiki search: one KB per size filled directly (synthetic {wiki_search.WORDS}-word chunks, random "
                            f"{wiki_search.DIMS}-dimension vectors, a page per {wiki_search.CHUNKS_PER_RAW} chunks citing "
                            f"{wiki_search.CITED_PER_PAGE}); each query runs search_pages and search_chunks (top 10) in the "
                            "bench process, the query's embedding excluded.")

    # ---- the run --------------------------------------------------------------------------------

    async def run(self) -> None:
        self.context.append(f"Machine: {report_machine()}; open-files limit raised to {raise_nofile()}; "
                            f"load average at start {load_average()} (other work on the machine shares the cores).")
        if self.s.only == "wiki-search":
            await self.wiki_search()
            return
        if self.s.scale:
            self.scale_run = scale.ScaleRun()
            for m in self.s.scale:
                self.note(f"growth with data at {m}x")
                await scale.run_size(m, self.work, self.s.scale_queries, self.s.cold_runs, self.scale_run, self.s.scale_pad)
            return
        data_dir = self.path("data")
        self.model = model_proc(self.path("model.log"), 3, 0)
        self.model.spawn()
        await self.model.wait_ready("/v1/models")
        try:
            await self.cold_start(data_dir)
            if self.s.only == "cold":
                return
            server = self.platform("main", data_dir, self.s.profile and self.s.only not in ("persist", "blocking"))
            await server.wait_ready(HEALTH, {"Authorization": "Bearer " + self.token})
            try:
                await self.seed(server.url)
                if self.s.only not in ("streams", "persist", "blocking"):
                    await self.request_rate(server)
                if self.s.only not in ("persist", "blocking"):
                    await self.latency(server)
            finally:
                self.stop_platform(server, "main", "requests/s and stream latency")
            if self.s.only in ("persist", "blocking"):
                return await (self.persistence(data_dir) if self.s.only == "persist" else self.blocking(data_dir))
            if self.s.only == "streams":
                return
            await self.held(data_dir)
            await self.persistence(data_dir)
            await self.blocking(data_dir)
            await self.wiki_search()
        finally:
            self.model.stop()


def load_average() -> str:
    try:
        with open("/proc/loadavg") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "n/a"


def report_machine() -> str:
    from scripts.benchmarks.report import machine

    return machine()


def run_processes(ns: argparse.Namespace) -> int:
    """`--processes 1,2`: this step alone (processes.py), its own section of docs/benchmarks.md."""
    missing = processes.check_services()
    if missing:
        print(f"bench: --processes needs PostgreSQL and redis-server: {missing}")
        return 1
    work = tempfile.mkdtemp(prefix="platform-bench-")
    context = [f"Machine: {report_machine()}; open-files limit raised to {raise_nofile()}; load average at start "
               f"{load_average()} (other work on the machine shares the cores)."]
    started = time.perf_counter()
    seconds, rounds = (2.0, 1) if ns.quick else (5.0, 2)
    try:
        results = asyncio.run(processes.run(work, processes.parse(ns.processes), seconds, rounds))
    finally:
        if not ns.keep:
            shutil.rmtree(work, ignore_errors=True)
    tool = "wrk" if load.wrk_path() else "the Python load generator"
    context += [f"Each size: `serve --workers N` on a fresh PostgreSQL database and an emptied Redis, 20 agents and 30 "
                f"conversations seeded; lists: {tool}, 16 keep-alive connections, {rounds} x {seconds:g} s; streams: "
                f"{processes.STREAMS} at once, the scripted model sending {processes.CHUNKS} chunks {processes.DELAY_MS} ms apart.",
                f"The workers, PostgreSQL, Redis, the scripted model and the load generator share the machine's "
                f"{os.cpu_count()} cores: a second worker adds CPU only where cores are idle; with none idle it adds "
                "contention (two processes' caches, connections and IOLoops for the same cores).",
                f"Whole step: {time.perf_counter() - started:.0f} s; load average at the end {load_average()}."]
    lines = processes.markdown(results, context)
    print("\n".join(lines))
    processes.write(ns.out, lines)
    print(f"bench: wrote the processes section of {os.path.relpath(ns.out, ROOT)}")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="short phases (a smoke run, figures are rough)")
    parser.add_argument("--profile", action="store_true", help="run the servers under py-spy and add profiles")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs, data)")
    parser.add_argument("--only", choices=["wiki-search", "streams", "cold", "persist", "blocking"], default="",
                        help="run this step alone (persist and blocking after the cold start and the seeding)")
    parser.add_argument("--scale", default="", metavar="1,10,100",
                        help="measure growth with data at these multipliers (1x = 1k conversations, 10k messages, "
                             "10 agents, 1k wiki chunks, a 100 MB database); writes docs/benchmarks.md's 'Growth with data'")
    parser.add_argument("--scale-pad", action=argparse.BooleanOptionalAction, default=True,
                        help="--scale: pad the databases to 100 MB / 1 GB / 5 GB (restart, backup, RSS); "
                             "--no-scale-pad times the routes alone, much faster at 100x")
    parser.add_argument("--processes", default="", metavar="1,2",
                        help="the list routes and 100 streams on PostgreSQL + Redis with these worker counts "
                             "(serve --workers N); writes docs/benchmarks.md's 'One process and two'")
    ns = parser.parse_args()
    if ns.processes:
        sys.exit(run_processes(ns))
    s = Settings(profile=ns.profile, only=ns.only)
    if ns.quick:
        s = Settings(http_seconds=2, http_rounds=1, cold_runs=1, latency_streams=(10, 100), held_streams=200,
                     persist_chats=50, persist_seconds=3, wiki_queries=20, profile=ns.profile, only=ns.only)
    if ns.scale:
        s = Settings(profile=ns.profile, scale=tuple(scale.parse_sizes(ns.scale)),
                     scale_queries=20 if ns.quick else 50, cold_runs=1 if ns.quick else 3, scale_pad=ns.scale_pad)
    work = tempfile.mkdtemp(prefix="platform-bench-")
    bench = Bench(s, work)
    started = time.perf_counter()
    try:
        asyncio.run(bench.run())
    finally:
        if not ns.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"bench: work directory kept at {work}")
    bench.context.append(f"Whole run: {time.perf_counter() - started:.0f} s; load average at the end {load_average()}.")
    if bench.scale_run is not None:
        lines = scale.markdown(bench.scale_run, bench.context)
        print("\n".join(lines))
        scale.write(ns.out, lines)
        print(f"bench: wrote the growth section of {os.path.relpath(ns.out, ROOT)}")
        sys.exit(0)
    print("\n".join(table(bench.rows)))
    for c in bench.context:
        print("- " + c)
    if ns.only:  # one step's rows would replace the whole run's table
        for name, lines in bench.profiles.items():
            print(f"Profile: {name}", *lines, sep="\n")
        print("bench: --only: docs/benchmarks.md left as it was")
    else:
        write_markdown(ns.out, bench.rows, bench.context, bench.profiles)
        print(f"bench: wrote {os.path.relpath(ns.out, ROOT)}")
    sys.exit(0)


if __name__ == "__main__":
    main()
