"""Two server processes on one PostgreSQL and one Redis (issue 31): a turn started on A is re-attached on B
with its last event id and the rest arrives once; a stop sent to B stops the turn A runs; a cron job due
once fires once across both; A killed mid-turn leaves no conversation running (B sweeps it). Skips where
PostgreSQL or redis-server is not installed."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from typing import Any, AsyncIterator, Callable, TypeVar, cast

import aiohttp
import pytest
import redis

from platform_server.features.cron import CRON_SWEEP
from platform_server.features.teams import TEAM_SWEEP
from platform_server.features.workflows import WORKFLOW_SWEEP
from platform_server.ports import events
from tests.helpers import postgres, redis_server
from tests.helpers.chat import make_agent, text_of
from tests.helpers.client import ApiClient, SseEvent, iter_sse
from tests.helpers.eventually import Timeout, eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.process import ADMIN, ServerProcess
from tests.helpers.server import create_personas, start_server
from tests.helpers.wiki import KB, page, pages_answer

WORDS = [f"w{i} " for i in range(60)]
T = TypeVar("T")


class Pair:
    def __init__(self, a: ServerProcess, b: ServerProcess, api_a: ApiClient, api_b: ApiClient, agent: str, database_url: str) -> None:
        self.a, self.b, self.api_a, self.api_b, self.agent, self.database_url = a, b, api_a, api_b, agent, database_url

    async def sql(self, statement: str) -> str:
        """psql in a thread: the scripted model server answers from this test's loop meanwhile."""
        name = self.database_url.rsplit("/", 1)[1]
        return (await asyncio.to_thread(postgres.cluster().psql, statement, name)).strip()


@pytest.fixture
async def pair(tmp_path: Any, llm: ScriptedOpenAI) -> AsyncIterator[Pair]:
    try:
        database_url = postgres.cluster().fresh_database()
    except RuntimeError as exc:
        pytest.skip(f"PostgreSQL is not installed: {exc}")
    redis_url = redis_server.server().url
    redis_server.server().flush()
    env = {"PLATFORM_DATABASE_URL": database_url, "PLATFORM_REDIS_URL": redis_url, "PLATFORM_CRON_TICK_S": "0.5"}
    data_dir = str(tmp_path / "data")  # the shared data directory: any process serves any file
    a, b = ServerProcess(data_dir, env=env), ServerProcess(data_dir, env=env)
    async with aiohttp.ClientSession() as session:
        try:
            await a.start()  # first: it creates the admin and takes the leader lock
            await b.start()
            api_a, api_b = ApiClient(a.url, session), ApiClient(b.url, session)
            r = await api_a.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
            api_a.tokens["admin"] = api_b.tokens["admin"] = r.data["token"]
            await use_fake_openai(api_a, llm.url, token="admin")
            yield Pair(a, b, api_a, api_b, await make_agent(api_a, token="admin"), database_url)
        finally:
            a.kill()
            b.kill()
            postgres.cluster().drop(database_url)


async def read_some(api: ApiClient, body: dict[str, Any], count: int) -> list[SseEvent]:
    return await api.sse("POST", "/api/v1/chat/stream", body, token="admin", stop_after=count)


async def test_a_turn_started_on_a_is_reattached_on_b_and_the_rest_arrives_once(pair: Pair, llm: ScriptedOpenAI) -> None:
    llm.enqueue(Script(text=WORDS, delay_s=0.05))
    first = await read_some(pair.api_a, {"agentId": pair.agent, "conversationId": "m1", "message": "go"}, 12)
    assert text_of(first), [e.event for e in first]  # some of the answer came from A before the client left
    last_id = max(e.id for e in first if e.id is not None)
    rest = await pair.api_b.sse(
        "POST", "/api/v1/chat/stream", {"conversationId": "m1", "reconnect": True, "lastEventId": str(last_id)}, token="admin"
    )
    ids = [e.id for e in rest if e.id is not None]
    assert ids and ids[0] > last_id and ids == sorted(set(ids)), ids  # no duplicate, increasing
    assert text_of(first) + text_of(rest) == "".join(WORDS)  # no gap, nothing twice
    assert rest[-1].event == "done" and rest[-1].data["status"] == "completed"
    # the conversation is stored once, whichever process is asked (the change feed crosses processes)
    r = await pair.api_b.get("/api/v1/conversations/m1/messages", token="admin")
    assert [m["content"] for m in r.data if m["role"] == "assistant"] == ["".join(WORDS)]
    # a cached read on A sees B's write at once (PostgreSQL NOTIFY invalidates A's caches)
    assert (await pair.api_a.get(f"/api/v1/agents/{pair.agent}", token="admin")).data["name"] == "Helper"
    r = await pair.api_b.put(f"/api/v1/agents/{pair.agent}", {"name": "Renamed on B"}, token="admin")
    assert r.status == 200, r.body

    async def renamed() -> bool:
        return (await pair.api_a.get(f"/api/v1/agents/{pair.agent}", token="admin")).data["name"] == "Renamed on B"

    await eventually(renamed, timeout=5, what="A reading B's rename")


async def test_a_stop_sent_to_b_stops_the_turn_that_runs_on_a(pair: Pair, llm: ScriptedOpenAI) -> None:
    llm.enqueue(Script(text=[f"s{i} " for i in range(400)], delay_s=0.05))
    stream = asyncio.ensure_future(
        pair.api_a.sse("POST", "/api/v1/chat/stream", {"agentId": pair.agent, "conversationId": "m2", "message": "go"}, token="admin")
    )
    await eventually(lambda: llm.requests, what="the turn's model call")
    await asyncio.sleep(0.3)
    # a second turn of the same conversation is refused on B too, as on the process that runs it
    busy = await pair.api_b.sse("POST", "/api/v1/chat/stream", {"agentId": pair.agent, "conversationId": "m2", "message": "too"}, token="admin")
    assert [(e.event, e.data["message"]) for e in busy] == [("error", "Agent busy")]
    r = await pair.api_b.post("/api/v1/chat/m2/stop", token="admin")
    assert r.status == 200 and r.data == {"stopped": True}, r.body
    events = await asyncio.wait_for(stream, 10)
    assert events[-1].event == "done" and events[-1].data["status"] == "stopped"
    assert 0 < len(text_of(events).split()) < 400
    r = await pair.api_b.post("/api/v1/chat/m2/stop", token="admin")
    assert r.data == {"stopped": False}  # nothing runs it any more


async def test_an_input_sent_to_b_is_queued_on_the_turn_that_runs_on_a(pair: Pair, llm: ScriptedOpenAI) -> None:
    llm.enqueue(Script(text=[f"q{i} " for i in range(100)], delay_s=0.05))  # 5 s: room for the hop through B
    llm.enqueue(Script(text="second answer"))
    stream = asyncio.ensure_future(
        pair.api_a.sse("POST", "/api/v1/chat/stream", {"agentId": pair.agent, "conversationId": "m3", "message": "go"}, token="admin")
    )
    await eventually(lambda: llm.requests, what="the turn's model call")
    r = await pair.api_b.post("/api/v1/chat/m3/interrupt", {"message": "and then?"}, token="admin")
    assert r.status == 200 and r.data == {"queued": True, "queueSize": 1}, r.body
    events = await asyncio.wait_for(stream, 20)
    assert "queued_input_accepted" in [e.event for e in events]
    assert text_of(events).endswith("second answer")


async def test_a_cron_job_due_once_fires_once_across_both_processes(pair: Pair) -> None:
    # each process makes ids of its own (the Snowflake node bits): rows two processes insert in one
    # millisecond no longer collide (seen as 500s under 100 concurrent chats on two workers)
    other = await make_agent(pair.api_b, token="admin")
    assert (int(other) >> 12) & 0x3FF != (int(pair.agent) >> 12) & 0x3FF
    r = await pair.api_b.post(
        "/api/v1/cron-jobs",
        {"name": "Yearly", "agentId": pair.agent, "cronExpression": "0 0 1 1 *", "message": "Write the digest"},
        token="admin",
    )
    assert r.status == 200, r.body
    job = r.data["id"]
    # due now (the schedule's own next time is next January): both processes' schedulers tick every 0.5 s
    # (stored as the server stores times: text, millisecond precision)
    due = "to_char(now() AT TIME ZONE 'UTC' - interval '1 second', 'YYYY-MM-DD HH24:MI:SS.MS')"
    await pair.sql(f"UPDATE cron_job SET next_fire_at = {due} WHERE id = {job}")

    async def fired() -> bool:
        return await pair.sql(f"SELECT count(*) FROM cron_run WHERE job_id = {job}") != "0"

    await eventually(fired, timeout=10, what="the fire")
    await asyncio.sleep(3)  # six more ticks of each process
    assert await pair.sql(f"SELECT count(*) FROM cron_run WHERE job_id = {job}") == "1"


async def test_a_killed_process_leaves_no_conversation_running(pair: Pair, llm: ScriptedOpenAI) -> None:
    llm.enqueue(Script(text=[f"k{i} " for i in range(400)], delay_s=0.05))
    first = await read_some(pair.api_a, {"agentId": pair.agent, "conversationId": "m4", "message": "go"}, 8)
    last_id = max(e.id for e in first if e.id is not None)
    assert await pair.sql("SELECT stream_status FROM conversation WHERE conversation_id = 'm4'") == "running"
    reader = asyncio.ensure_future(
        pair.api_b.sse("POST", "/api/v1/chat/stream", {"conversationId": "m4", "reconnect": True, "lastEventId": str(last_id)}, token="admin")
    )
    await asyncio.sleep(0.3)
    pair.a.kill()  # SIGKILL: no shutdown code runs on A; B takes the leader lock and sweeps the turn

    async def freed() -> bool:
        return await pair.sql("SELECT stream_status FROM conversation WHERE conversation_id = 'm4'") == "idle"

    await eventually(freed, timeout=30, interval=0.5, what="B setting the dead process's conversation idle")
    assert await pair.sql("SELECT status FROM message WHERE role = 'assistant'") in ("", "failed")
    rest = await asyncio.wait_for(reader, 15)  # the reader on B ends too (the sweep ends the stream)
    assert not any(e.id is not None and e.id <= last_id for e in rest)
    # the conversation takes a new turn, now on B
    llm.enqueue(Script(text="back"))
    again = await pair.api_b.sse("POST", "/api/v1/chat/stream", {"agentId": pair.agent, "conversationId": "m4", "message": "again"}, token="admin")
    assert text_of(again) == "back" and again[-1].data["status"] == "completed"


def workers_of(supervisor: int) -> set[int]:
    with open(f"/proc/{supervisor}/task/{supervisor}/children") as fh:
        return {int(pid) for pid in fh.read().split()}


def test_several_workers_on_the_sqlite_file_are_refused_with_the_reason(tmp_path: Any) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "platform_server", "serve", "--workers", "2", "--port", "0", "--data-dir", str(tmp_path / "d")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "--workers 2 needs database_url and redis_url" in done.stderr
    assert not (tmp_path / "d" / "platform.db").exists()  # refused before anything was written


LISTENING = re.compile(r"listening on \S+ \(pid (\d+)\)")  # each worker's line once its port is open (cli.serve)
DIED = re.compile(r"worker \d+ \(pid (\d+)\) died")  # the supervisor's line for a worker it starts again


class Supervised:
    """A `serve --workers` tree as the test sees it: the supervisor's children and what the log says of them.
    A wait that runs out says what it waited for, the pids seen and the log (not a bare timeout)."""

    def __init__(self, server: ServerProcess) -> None:
        assert server.proc is not None
        self.server, self.supervisor = server, server.proc.pid

    def listening(self) -> set[int]:
        return {int(pid) for pid in LISTENING.findall(self.server.log_text())}

    def died(self) -> list[int]:
        return [int(pid) for pid in DIED.findall(self.server.log_text())]

    def up(self, count: int) -> set[int] | None:
        """The workers when there are `count` and each has logged that it listens; None before."""
        workers = workers_of(self.supervisor) if os.path.exists(f"/proc/{self.supervisor}") else set()
        return workers if len(workers) == count and workers <= self.listening() else None

    def report(self, what: str) -> str:
        workers = workers_of(self.supervisor) if os.path.exists(f"/proc/{self.supervisor}") else "(supervisor gone)"
        lines = [line for line in self.server.log_text().splitlines() if "tornado.access" not in line and "migration applied" not in line]
        return (f"waited for {what}: workers now {workers}, listening {sorted(self.listening())}, died {self.died()}; "
                "the log (no access or migration lines):\n" + "\n".join(lines[-80:]))

    async def wait(self, check: Callable[[], T | None], what: str, timeout: float) -> T:
        try:
            return cast(T, await eventually(check, timeout=timeout, interval=0.1, what=what))
        except Timeout as exc:
            raise AssertionError(self.report(what)) from exc


@pytest.mark.timeout(300)  # its own waits (270 s at most in all) run out first and say which, with the log
async def test_serve_workers_runs_two_processes_on_one_port_and_replaces_one_that_dies(tmp_path: Any) -> None:
    """Each step waits for the event that matters (a worker's "listening" line, the supervisor's exit), not a
    count of forked pids: a worker forked is not yet serving, and one still starting when SIGTERM came was
    what made the budgets run out under load."""
    try:
        database_url = postgres.cluster().fresh_database()
    except RuntimeError as exc:
        pytest.skip(f"PostgreSQL is not installed: {exc}")
    env = {
        "PLATFORM_DATABASE_URL": database_url, "PLATFORM_REDIS_URL": redis_server.server().url, "PLATFORM_WORKERS": "2",
        "PLATFORM_LOG_LEVEL": "INFO",  # the supervisor's and the workers' start and stop lines
    }
    server = ServerProcess(str(tmp_path / "data"), env=env)
    try:
        try:
            await server.start(timeout=90)
        except (RuntimeError, Timeout) as exc:
            raise AssertionError(f"the first worker answering: {exc}\n{server.log_tail()}") from exc
        tree = Supervised(server)
        first = await tree.wait(lambda: tree.up(2), "two workers listening", 60)
        # Both started on an empty database: their start-up seeds once raced and one died of a duplicate key.
        assert tree.died() == [], tree.report("no worker dying at the start")
        async with aiohttp.ClientSession() as session:
            api = ApiClient(server.url, session)
            for _ in range(10):  # every connection is served, whichever worker the kernel gives it to
                r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
                assert r.status == 200, r.body
        killed = min(first)
        os.kill(killed, signal.SIGKILL)
        now = await tree.wait(
            lambda: (lambda w: w if w and killed not in w else None)(tree.up(2)), "the killed worker's replacement listening", 60
        )
        assert tree.died() == [killed] and len(now & first) == 1, tree.report("one replacement")
        server.proc.send_signal(signal.SIGTERM)  # the supervisor stops every worker and exits 0
        await tree.wait(lambda: server.proc is not None and server.proc.poll() is not None, "the supervisor's exit after SIGTERM", 60)
        assert server.proc.returncode == 0, tree.report("exit code 0")
        assert server.log_text().count("platform_server: stopped") == 2, tree.report("both workers' graceful stop")
        assert not any(os.path.exists(f"/proc/{pid}") for pid in now)
    finally:
        server.kill()
        postgres.cluster().drop(database_url)


async def test_a_process_joining_leaves_the_runs_another_process_runs_alone(pair: Pair, llm: ScriptedOpenAI, tmp_path: Any) -> None:
    """Start-up recovery (runs left `running` fail) is the leader's at its start: a worker the supervisor
    restarts, or a third process joining, used to fail the cron runs the others were running."""
    r = await pair.api_a.post(
        "/api/v1/cron-jobs",
        {"name": "Slow", "agentId": pair.agent, "cronExpression": "0 0 1 1 *", "message": "Write the digest"},
        token="admin",
    )
    llm.enqueue(Script(text=[f"c{i} " for i in range(200)], delay_s=0.05))
    run = await pair.api_a.post(f"/api/v1/cron-jobs/{r.data['id']}/run", token="admin")
    assert run.status == 200, run.body
    assert await pair.sql("SELECT status FROM cron_run") == "running"
    env = {"PLATFORM_DATABASE_URL": pair.database_url, "PLATFORM_REDIS_URL": redis_server.server().url}
    third = ServerProcess(pair.a.data_dir, env=env)
    try:
        await third.start()
        assert await pair.sql("SELECT status FROM cron_run") == "running"  # still A's, still running
    finally:
        third.kill()


async def test_with_redis_gone_a_stop_or_reattach_for_no_local_turn_answers_plainly(tmp_path: Any) -> None:
    """Redis stops answering while the server runs: the routes that would ask another process answer as when
    nothing runs there (no 500); this process's own turns do not depend on it."""
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    own = redis_server._start(shutil.which("redis-server") or "")  # a private one: this test stops it
    server = await start_server(str(tmp_path / "data"), redis_url=own.url)
    try:
        await create_personas(server.client)
        own.stop()
        r = await server.client.post("/api/v1/chat/gone/stop", token="alice")
        assert r.status == 200 and r.data == {"stopped": False}, r.body
        r = await server.client.post("/api/v1/chat/gone/interrupt", {"message": "and?"}, token="alice")
        assert r.status == 200 and r.data == {"queued": False, "reason": "no_active_stream"}, r.body
        events = await server.client.sse("POST", "/api/v1/chat/stream", {"conversationId": "gone", "reconnect": True}, token="alice")
        assert [(e.event, e.data["status"]) for e in events] == [("done", "completed")]
    finally:
        own.stop()
        await server.stop()


LOST = "Interrupted: the process running it stopped"  # platform_server/leases.py LOST_ERROR
LEASE_RENEWALS_S = 7.0  # longer than the lease (6 s): only renewals keep a living process's runs


async def test_a_killed_process_s_workflow_team_and_cron_runs_fail_within_the_lease_and_nothing_else_changes(pair: Pair, llm: ScriptedOpenAI) -> None:
    """Runs started on A (a workflow run, a team run with its member's delegation, a cron run, a wiki material's
    processing) hold leases A renews; A is killed with SIGKILL mid-run and B, leading then, fails them within the
    lease and processes the material again (they used to stay `running` until the next start of the whole
    deployment). B's own workflow run goes on, and the cron job's next occurrence fires once, on B."""
    api_a, api_b = pair.api_a, pair.api_b
    graph = {
        "nodes": [
            {"id": "start", "type": "start", "config": {}},
            {"id": "a", "type": "agent", "config": {"agentId": pair.agent, "message": "Please {{input.task}}"}},
            {"id": "end", "type": "end", "config": {}},
        ],
        "edges": [{"from": "start", "to": "a"}, {"from": "a", "to": "end"}],
    }
    wid = (await api_a.post("/api/v1/workflows", {"name": "Flow"}, token="admin")).data["id"]
    assert (await api_a.put(f"/api/v1/workflows/{wid}/draft", {"graph": graph}, token="admin")).status == 200
    assert (await api_a.post(f"/api/v1/workflows/{wid}/publish", token="admin")).status == 200
    lead, member = await make_agent(api_a, token="admin", name="Lead"), await make_agent(api_a, token="admin", name="Member")
    team = await api_a.post("/api/v1/teams", {"name": "Docs", "leadAgentId": lead, "memberAgentIds": [member]}, token="admin")
    assert team.status == 200, team.body
    job = await api_a.post(
        "/api/v1/cron-jobs", {"name": "Digest", "agentId": pair.agent, "cronExpression": "0 0 1 1 *", "message": "go"}, token="admin"
    )
    assert job.status == 200, job.body

    llm.enqueue(Script(text=[f"b{i} " for i in range(600)], delay_s=0.1))  # B's run answers slowly (a minute)
    on_b = (await api_b.post(f"/api/v1/workflows/{wid}/runs", {"input": {"task": "wait"}}, token="admin")).data["id"]
    await eventually(lambda: llm.requests, what="B's run's model call")
    # A's runs wait on their model calls until the kill; the team run in its member's delegation (a sub-agent run)
    llm.enqueue(Script(hang=True))
    on_a = (await api_a.post(f"/api/v1/workflows/{wid}/runs", {"input": {"task": "wait"}}, token="admin")).data["id"]
    await eventually(lambda: len(llm.requests) >= 2, what="A's workflow run's model call")
    llm.enqueue(Script(text=json.dumps({"tasks": [{"agent": "Member", "task": "draft"}]})), Script(hang=True))
    team_run = (await api_a.post(f"/api/v1/teams/{team.data['id']}/runs", {"goal": "write"}, token="admin")).data["id"]
    await eventually(lambda: len(llm.requests) >= 4, what="the team's plan and its member's model call")
    llm.enqueue(Script(hang=True))
    cron = await api_a.post(f"/api/v1/cron-jobs/{job.data['id']}/run", token="admin")
    assert cron.status == 200, cron.body
    await eventually(lambda: len(llm.requests) >= 5, what="the cron run's model call")
    assert await pair.sql("SELECT status FROM cron_run") == "running"
    # and a wiki material A is processing (waiting on its page-writing call)
    emb = await api_a.post("/api/v1/models/fake/models", {"modelName": "fake-embedding", "modelType": "embedding"}, token="admin")
    assert (await api_a.post("/api/v1/models/embedding/default", {"modelId": emb.data["id"]}, token="admin")).status == 200
    kb = (await api_a.post(KB, {"name": "Notes", "description": "test"}, token="admin")).data["id"]
    llm.enqueue(Script(hang=True))
    r = await api_a.post(f"{KB}/{kb}/raw/text", {"title": "Tides", "text": "The moon pulls the sea twice a day."}, token="admin")
    assert r.status == 200, r.body
    await eventually(lambda: sum("messages" in body for body in llm.requests) >= 6, what="A writing the wiki's pages")
    assert await pair.sql("SELECT status FROM subagent_run") == "running"
    await asyncio.sleep(LEASE_RENEWALS_S)  # the leases were renewed meanwhile: nothing is failed while A lives
    assert {(await api_b.get(f"/api/v1/workflows/runs/{r}", token="admin")).data["status"] for r in (on_a, on_b)} == {"running"}
    assert (await api_b.get(f"/api/v1/team-runs/{team_run}", token="admin")).data["status"] == "running"
    assert await pair.sql("SELECT status FROM subagent_run") == "running"

    killed_at = asyncio.get_running_loop().time()
    pair.a.kill()  # SIGKILL: no shutdown code runs on A
    llm.enqueue(Script(text=pages_answer(page("tides", "Tides", "The moon pulls the sea."))))  # the material, again on B

    async def all_failed() -> float:
        flow = (await api_b.get(f"/api/v1/workflows/runs/{on_a}", token="admin")).data
        run = (await api_b.get(f"/api/v1/team-runs/{team_run}", token="admin")).data
        cron_run = await pair.sql("SELECT status || '|' || error FROM cron_run")
        assert (flow["status"], flow["error"]) == ("failed", LOST), flow["status"]
        assert (run["status"], run["error"]) == ("failed", LOST), run["status"]
        assert cron_run == f"failed|{LOST}", cron_run
        assert await pair.sql("SELECT status || '|' || result FROM subagent_run") == f"interrupted|{LOST}"
        materials = (await api_b.get(f"{KB}/{kb}/processing-status", token="admin")).data["materials"]
        assert [m["status"] for m in materials] == ["completed"], materials  # queued again by B and processed there
        return asyncio.get_running_loop().time() - killed_at

    took = await eventually(all_failed, timeout=30, interval=0.5, what="B failing the dead process's runs")
    assert took < 20, took  # the lease (6 s), two sweeps 3 s apart, and B taking the leader lock
    print(f"the dead process's runs failed {took:.1f} s after the kill")
    steps = (await api_b.get(f"/api/v1/workflows/runs/{on_a}", token="admin")).data["steps"]
    assert [(s["nodeId"], s["status"]) for s in steps] == [("start", "succeeded"), ("a", "failed")]
    # nothing else changed: B's own run still waits on its model call, its conversation still running
    assert (await api_b.get(f"/api/v1/workflows/runs/{on_b}", token="admin")).data["status"] == "running"
    assert await pair.sql("SELECT count(*) FROM conversation WHERE stream_status = 'running'") == "1"

    # the job's next occurrence fires once, on B (the leader now)
    llm.enqueue(Script(text="The digest."))
    due = "to_char(now() AT TIME ZONE 'UTC' - interval '1 second', 'YYYY-MM-DD HH24:MI:SS.MS')"
    await pair.sql(f"UPDATE cron_job SET next_fire_at = {due} WHERE id = {job.data['id']}")

    async def fired() -> bool:
        return await pair.sql("SELECT string_agg(status, ',' ORDER BY started_at) FROM cron_run") == "failed,succeeded"

    await eventually(fired, timeout=15, what="the next occurrence")
    await asyncio.sleep(2)  # four more ticks of B's scheduler
    assert await pair.sql("SELECT count(*) FROM cron_run") == "2"


class Follower:
    """Reads one SSE route of one process (heartbeats left out) until `until(event)`; `ready` once a frame came
    (the route subscribed before it wrote anything)."""

    def __init__(self, api: ApiClient, path: str, until: Any) -> None:
        self.ready = asyncio.Event()
        self.task = asyncio.ensure_future(self._read(api, path, until))

    async def _read(self, api: ApiClient, path: str, until: Any) -> list[SseEvent]:
        out: list[SseEvent] = []
        async with api.session.get(api.base_url + path, headers={"Authorization": f"Bearer {api.tokens['admin']}"}) as r:
            assert r.status == 200, await r.text()
            async for event in iter_sse(r):
                self.ready.set()
                if event.event == "heartbeat":
                    continue
                out.append(event)
                if until(event):
                    return out
        return out

    async def events(self) -> list[SseEvent]:
        return await asyncio.wait_for(self.task, 30)


@pytest.fixture
def quick_heartbeats(monkeypatch: pytest.MonkeyPatch) -> None:
    """A live route writes its first frame within half a second (the processes read it at their start)."""
    monkeypatch.setenv("PLATFORM_HEARTBEAT_S", "0.5")


@pytest.mark.usefixtures("quick_heartbeats")
async def test_a_reader_on_b_gets_the_wiki_progress_and_team_board_events_of_work_on_a_in_order_once(pair: Pair, llm: ScriptedOpenAI) -> None:
    """Live topics cross processes with `redis_url`: readers on A and on B of the same wiki's progress and of the
    same team's board get the same frames, in the same order, each once (they used to reach A's readers only)."""
    api_a, api_b = pair.api_a, pair.api_b
    emb = await api_a.post("/api/v1/models/fake/models", {"modelName": "fake-embedding", "modelType": "embedding"}, token="admin")
    assert (await api_a.post("/api/v1/models/embedding/default", {"modelId": emb.data["id"]}, token="admin")).status == 200
    kb = (await api_a.post(KB, {"name": "Notes", "description": "test"}, token="admin")).data["id"]
    llm.enqueue(Script(text=pages_answer(page("tides", "Tides", "The moon pulls the sea.")), answer_after_s=3))
    r = await api_a.post(f"{KB}/{kb}/raw/text", {"title": "Tides", "text": "The moon pulls the sea twice a day."}, token="admin")
    assert r.status == 200, r.body
    # A waits 3 s on the page-writing call (after the embedding): both readers join in that quiet time
    await eventually(lambda: any("messages" in body for body in llm.requests), what="A writing the wiki's pages")
    idle = lambda event: event.event == "idle"  # noqa: E731
    on_a, on_b = Follower(api_a, f"{KB}/{kb}/progress", idle), Follower(api_b, f"{KB}/{kb}/progress", idle)
    seen_a, seen_b = await on_a.events(), await on_b.events()
    assert seen_a[0].event == seen_b[0].event == "snapshot"
    frames = [(e.event, e.data) for e in seen_a[1:]]
    assert len(frames) > 2 and frames[-1][0] == "idle", frames
    assert [(e.event, e.data) for e in seen_b[1:]] == frames  # the same frames, in order, once

    lead, member = await make_agent(api_a, token="admin", name="Lead"), await make_agent(api_a, token="admin", name="Member")
    team = (await api_a.post("/api/v1/teams", {"name": "Docs", "leadAgentId": lead, "memberAgentIds": [member]}, token="admin")).data
    done = lambda event: event.event == "team_run_completed"  # noqa: E731
    board_a, board_b = Follower(api_a, f"/api/v1/teams/{team['id']}/events", done), Follower(api_b, f"/api/v1/teams/{team['id']}/events", done)
    await asyncio.wait_for(asyncio.gather(board_a.ready.wait(), board_b.ready.wait()), 10)
    llm.enqueue(Script(text=json.dumps({"tasks": [{"agent": "Member", "task": "draft"}]})), Script(text="Drafted."), Script(text="Final."))
    assert (await api_a.post(f"/api/v1/teams/{team['id']}/runs", {"goal": "write"}, token="admin")).status == 200
    seen_a, seen_b = await board_a.events(), await board_b.events()
    names = [e.event for e in seen_a]
    assert names[0] == "team_run_planning" and names[-1] == "team_run_completed" and "team_task_completed" in names, names
    ids = [e.data["eventId"] for e in seen_a]
    assert len(set(ids)) == len(ids)
    assert [(e.event, e.data["eventId"]) for e in seen_b] == list(zip(names, ids))  # in order, once
    # nobody follows the team on A, the process running the next run: B's reader still gets all of it
    board_b = Follower(api_b, f"/api/v1/teams/{team['id']}/events", done)
    await asyncio.wait_for(board_b.ready.wait(), 10)
    llm.enqueue(Script(text=json.dumps({"tasks": [{"agent": "Member", "task": "draft"}]})), Script(text="Drafted."), Script(text="Final."))
    assert (await api_a.post(f"/api/v1/teams/{team['id']}/runs", {"goal": "write again"}, token="admin")).status == 200
    assert [e.event for e in await board_b.events()] == names


async def test_a_run_holds_a_lease_only_where_several_processes_may_run(tmp_path: Any, llm: ScriptedOpenAI) -> None:
    """With `redis_url` a cron run holds `owner:cron-run:<id>` (renewed with the turns' leases) and the leader sweeps
    each kind; on the default deployment (the SQLite file, no Redis) nothing is held and no sweep starts: no timer,
    no write, the start-up recovery as before."""
    redis = redis_server.server()
    redis.flush()
    for redis_url in ("", redis.url):
        server = await start_server(str(tmp_path / ("redis" if redis_url else "sqlite")), redis_url=redis_url)
        try:
            await create_personas(server.client)
            await use_fake_openai(server.client, llm.url, token="alice")
            agent = await make_agent(server.client, token="alice")
            job = await server.client.post(
                "/api/v1/cron-jobs", {"name": "Digest", "agentId": agent, "cronExpression": "0 0 1 1 *", "message": "go"}, token="alice"
            )
            llm.enqueue(Script(text=[f"d{i} " for i in range(40)], delay_s=0.05))
            run = await server.client.post(f"/api/v1/cron-jobs/{job.data['id']}/run", token="alice")
            assert run.status == 200, run.body
            await eventually(lambda: llm.requests, what="the run's model call")
            sweeps = [server.platform.find_runtime(key) for key in (CRON_SWEEP, WORKFLOW_SWEEP, TEAM_SWEEP)]
            bus = events.current()
            if not redis_url:
                assert sweeps == [None, None, None] and isinstance(bus, events.LocalEventBus)
                continue
            assert all(sweep is not None for sweep in sweeps)
            held = await bus.live([f"cron-run:{run.data['id']}", "cron-run:1"])  # held here, and one nobody holds
            assert held == {f"cron-run:{run.data['id']}"}
            owner = await eventually(lambda: redis_owner(redis.port, f"owner:cron-run:{run.data['id']}"), what="the lease in Redis")
            assert owner.startswith(socket.gethostname())
        finally:
            await server.stop()
        llm.requests.clear()


def redis_owner(port: int, key: str) -> str | None:
    with redis.Redis(port=port) as client:
        value = client.get(key)
    return value.decode() if value else None
