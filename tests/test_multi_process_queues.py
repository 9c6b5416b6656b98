"""Queued work across processes (issue 31, "nothing lost when a process dies"): work a process accepted but had
not started yet lives in the database, so another process takes it when the first is busy or killed, and each
piece is done once. Two server processes on one PostgreSQL and one Redis (the `pair` of test_multi_process.py);
skips where PostgreSQL or redis-server is not installed."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.chat import text_of
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.wiki import KB, page, pages_answer
from tests.test_multi_process import Pair, pair  # noqa: F401 - the two-process fixture
from tests.test_skill_install import GOOD_ZIP, Site, site  # noqa: F401 - a local site whose /slow.zip waits to be released

POLL_S = 3.0  # an idle worker's look at the queue with several processes (leases.Sweep.interval_s)


async def test_a_material_queued_on_a_busy_or_killed_process_is_processed_by_another_once(pair: Pair, llm: ScriptedOpenAI) -> None:  # noqa: F811
    """A's only wiki worker waits on a material's page-writing call. A material A accepts meanwhile is taken by B's
    idle worker (it used to wait in A's memory behind the first); one A accepts just before it is SIGKILLed is
    processed by B within its look at the queue (it used to wait for the next start of the whole deployment); the
    material A was processing comes back through its lease. Each ends completed, with one completed job."""
    api_a, api_b = pair.api_a, pair.api_b
    loop = asyncio.get_running_loop()
    emb = await api_a.post("/api/v1/models/fake/models", {"modelName": "fake-embedding", "modelType": "embedding"}, token="admin")
    assert (await api_a.post("/api/v1/models/embedding/default", {"modelId": emb.data["id"]}, token="admin")).status == 200
    kb = (await api_a.post(KB, {"name": "Notes", "description": "test"}, token="admin")).data["id"]

    async def add(title: str) -> str:
        r = await api_a.post(f"{KB}/{kb}/raw/text", {"title": title, "text": f"What {title} does, twice a day."}, token="admin")
        assert r.status == 200, r.body
        return str(r.data["id"])

    async def jobs(raw_id: str) -> list[str]:
        r = await api_b.get(f"/api/v1/wiki/kb/{kb}/jobs?rawId={raw_id}", token="admin")
        return [j["status"] for j in r.data]

    def completed(raw_id: str) -> object:
        async def check() -> bool:
            materials = (await api_b.get(f"{KB}/{kb}/processing-status", token="admin")).data["materials"]
            return [m["status"] for m in materials if m["rawId"] == raw_id] == ["completed"]

        return check

    writing = lambda: sum("messages" in body for body in llm.requests)  # noqa: E731 - page-writing calls so far
    llm.enqueue(Script(hang=True))
    tides = await add("Tides")
    await eventually(lambda: writing() >= 1, what="A writing the first material's pages")

    llm.enqueue(Script(text=pages_answer(page("moon", "Moon", "The moon pulls the sea."))))
    accepted = loop.time()
    moon = await add("Moon")
    await eventually(completed(moon), timeout=POLL_S + 7, interval=0.2, what="B processing what busy A accepted")
    took_busy = loop.time() - accepted
    assert await jobs(moon) == ["completed"]
    assert await pair.sql(f"SELECT status FROM wiki_raw WHERE id = {tides}") == "processing"  # A still on its first

    llm.enqueue(Script(text=pages_answer(page("sun", "Sun", "The sun pulls it too."))))
    llm.enqueue(Script(text=pages_answer(page("tides", "Tides", "Twice a day."))))
    sun = await add("Sun")
    killed_at = loop.time()
    pair.a.kill()  # SIGKILL: A's waiting material was never started there
    await eventually(completed(sun), timeout=POLL_S + 7, interval=0.2, what="B processing what the killed A had queued")
    took_killed = loop.time() - killed_at
    await eventually(completed(tides), timeout=30, interval=0.5, what="B processing again what A was processing")
    took_lease = loop.time() - killed_at
    print(f"pick-up: {took_busy:.1f} s while A was busy, {took_killed:.1f} s after A's kill; A's running one {took_lease:.1f} s")
    assert await jobs(moon) == ["completed"] and await jobs(sun) == ["completed"]  # once each
    assert await jobs(tides) == ["completed", "interrupted"]
    assert writing() == 4  # the hanging call, then one call per material: nothing processed twice



async def test_a_material_cancelled_and_requeued_through_b_while_a_still_processes_it_is_written_once(pair: Pair, llm: ScriptedOpenAI) -> None:  # noqa: F811
    """A processes a material and waits on its page-writing call; a cancel sent to B cannot stop A's task (only A
    could), and a reprocess sent to B lets B claim it at once. A's claim is superseded by B's: when A's answer comes,
    A writes nothing and records nothing (it used to write its pages too and mark the material done under B)."""
    api_a, api_b = pair.api_a, pair.api_b
    emb = await api_a.post("/api/v1/models/fake/models", {"modelName": "fake-embedding", "modelType": "embedding"}, token="admin")
    assert (await api_a.post("/api/v1/models/embedding/default", {"modelId": emb.data["id"]}, token="admin")).status == 200
    kb = (await api_a.post(KB, {"name": "Notes", "description": "test"}, token="admin")).data["id"]
    llm.enqueue(Script(text=pages_answer(page("stale", "Stale", "A's late answer.")), answer_after_s=3))
    r = await api_a.post(f"{KB}/{kb}/raw/text", {"title": "Tides", "text": "The moon pulls the sea."}, token="admin")
    assert r.status == 200, r.body
    raw = r.data["id"]
    await eventually(lambda: any("messages" in body for body in llm.requests), what="A writing the pages")
    assert (await api_b.post(f"{KB}/{kb}/raw/{raw}/cancel", token="admin")).status == 200
    llm.enqueue(Script(text=pages_answer(page("fresh", "Fresh", "B's answer.")), answer_after_s=5))  # B still on it when A's comes
    assert (await api_b.post(f"{KB}/{kb}/raw/{raw}/reprocess", token="admin")).status == 200

    async def done_on_b() -> bool:
        materials = (await api_b.get(f"{KB}/{kb}/processing-status", token="admin")).data["materials"]
        return [m["status"] for m in materials] == ["completed"]

    # A's late answer comes (3 s) while B waits on its own (5 s): A's store is refused, B's completes after it
    await eventually(done_on_b, timeout=15, what="B processing the requeued material")
    pages = (await api_b.get(f"{KB}/{kb}/pages", token="admin")).data
    assert sorted(p["slug"] for p in (pages.get("items", pages) if isinstance(pages, dict) else pages)) == ["fresh"], pages
    jobs = (await api_b.get(f"/api/v1/wiki/kb/{kb}/jobs?rawId={raw}", token="admin")).data
    superseded = "Cancelled, and claimed again before its processing stopped"
    assert [(j["status"], j["error"]) for j in jobs] == [("completed", None), ("cancelled", superseded)]
    materials = (await api_b.get(f"{KB}/{kb}/processing-status", token="admin")).data["materials"]
    assert [m["status"] for m in materials] == ["completed"]

@pytest.fixture
def local_downloads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The processes may download from the local site (set before `pair` starts them)."""
    monkeypatch.setenv("PLATFORM_WEB_FETCH_ALLOW_HOSTS", "127.0.0.1")


LOST = "Interrupted: the process running it stopped"  # platform_server/leases.py LOST_ERROR


@pytest.mark.usefixtures("local_downloads")
async def test_what_a_killed_process_accepted_or_ran_is_kept_or_failed_by_the_other(pair: Pair, llm: ScriptedOpenAI, site: Site) -> None:  # noqa: F811
    """One SIGKILL of A, with on A: a chat turn with a follow-up sent to B and queued there (Redis), two skill installs
    downloading (B answers their status, where it used to answer 404, and cancels one), a wiki transformation run and
    a dream waiting on their model calls. B's sweep keeps the follow-up as the conversation's next user message (it
    lived only in A's memory) and fails the install, the run and the dream within the lease (they used to read
    `running`, or 404, until the next start, a dream for ever); the conversation takes a new turn on B."""
    api_a, api_b = pair.api_a, pair.api_b
    asked = lambda: sum("messages" in body for body in llm.requests)  # noqa: E731 - model calls so far
    llm.enqueue(Script(text=[f"k{i} " for i in range(400)], delay_s=0.05))
    turn = {"agentId": pair.agent, "conversationId": "q1", "message": "go"}
    stream = asyncio.ensure_future(api_a.sse("POST", "/api/v1/chat/stream", turn, token="admin"))
    await eventually(lambda: asked() >= 1, what="the turn's model call")
    r = await api_b.post("/api/v1/chat/q1/interrupt", {"message": "and then?"}, token="admin")
    assert r.status == 200 and r.data == {"queued": True, "queueSize": 1}, r.body

    site.served["/slow.zip"] = GOOD_ZIP
    installs = [await api_a.post("/api/v1/skills/install/start", {"url": site.base + "/slow.zip"}, token="admin") for _ in range(2)]
    assert all(i.status == 200 for i in installs), [i.body for i in installs]
    first, second = (i.data["taskId"] for i in installs)
    await eventually(lambda: site.hits.count("/slow.zip") == 2, what="A downloading both")
    status = await api_b.get(f"/api/v1/skills/install/status/{first}", token="admin")
    assert status.status == 200 and status.data["status"] == "downloading", status.body
    cancelled = await api_b.post(f"/api/v1/skills/install/cancel/{second}", token="admin")
    assert cancelled.status == 200 and cancelled.data["status"] == "cancelled", cancelled.body
    assert (await api_a.get(f"/api/v1/skills/install/status/{second}", token="admin")).data["status"] == "cancelled"

    kb = (await api_a.post(KB, {"name": "Notes", "description": "test"}, token="admin")).data["id"]
    assert (await api_a.put(f"{KB}/{kb}/config", {"autoProcess": False}, token="admin")).status == 200
    raw = (await api_a.post(f"{KB}/{kb}/raw/text", {"title": "Tides", "text": "The moon pulls the sea."}, token="admin")).data["id"]
    t = await api_a.post("/api/v1/wiki/transformations", {"name": "Points", "prompt": "Key points of {{title}}"}, token="admin")
    assert t.status == 200, t.body
    llm.enqueue(Script(hang=True))
    run = await api_a.post(f"/api/v1/wiki/transformations/{t.data['id']}/apply", {"kbId": kb, "rawId": raw}, token="admin")
    assert run.status == 200 and run.data["status"] == "running", run.body
    await eventually(lambda: asked() >= 2, what="the transformation's model call")
    llm.enqueue(Script(hang=True))
    dream = asyncio.ensure_future(api_a.post(f"/api/v1/memory/{pair.agent}/emergence", token="admin"))
    await eventually(lambda: asked() >= 3, what="the dream's model call")

    loop = asyncio.get_running_loop()
    killed_at = loop.time()
    pair.a.kill()
    stream.cancel()
    await asyncio.gather(stream, dream, return_exceptions=True)  # their requests end with A

    async def settled() -> bool:
        msgs = (await api_b.get("/api/v1/conversations/q1/messages", token="admin")).data
        assert [m["content"] for m in msgs if m["role"] == "user"] == ["go", "and then?"], msgs
        assert msgs[-1]["content"] == "and then?" and msgs[-1]["metadata"] == {"queuedWhenStopped": True}
        install = (await api_b.get(f"/api/v1/skills/install/status/{first}", token="admin")).data
        assert (install["status"], install["message"], install["finished"]) == ("failed", LOST, True), install
        transformed = (await api_b.get(f"/api/v1/wiki/transformations/runs/{run.data['id']}", token="admin")).data
        assert (transformed["status"], transformed["error"]) == ("failed", LOST), transformed
        reports = (await api_b.get(f"/api/v1/memory/{pair.agent}/dream/reports", token="admin")).data
        rows = reports["records"] if isinstance(reports, dict) else reports
        assert [(r["status"], r["error"]) for r in rows] == [("failed", LOST)], rows
        return True

    await eventually(settled, timeout=30, interval=0.5, what="B keeping and failing what the dead process held")
    print(f"kept and failed {loop.time() - killed_at:.1f} s after the kill")
    assert await pair.sql("SELECT count(*) FROM chat_pending_input") == "0"
    assert (await api_b.get(f"/api/v1/skills/install/status/{second}", token="admin")).data["status"] == "cancelled"
    assert "csv-tools" not in str((await api_b.get("/api/v1/skills", token="admin")).data)  # no install wrote its skill
    llm.enqueue(Script(text="back"))
    again = await api_b.sse("POST", "/api/v1/chat/stream", {"agentId": pair.agent, "conversationId": "q1", "message": "again"}, token="admin")
    assert text_of(again) == "back" and again[-1].data["status"] == "completed"
