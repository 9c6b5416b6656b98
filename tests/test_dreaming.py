"""Dreaming: the nightly loop, manual and focused dreams, reports, entry edits, the morning card, events."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
from typing import Any

import aiohttp
import pytest

from platform_server.features.memory.models import DreamReport
from tests.helpers.chat import ChatEnv, make_agent
from tests.helpers.client import ApiClient, iter_sse
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script
from tests.helpers.memory import base, dream_answer, fact, folder, summarize
from tests.helpers.wiki import restart


def at(hour: int, day: int = 2) -> dt.datetime:
    return dt.datetime(2030, 1, day, hour, 30, tzinfo=dt.timezone.utc)


async def emergence(env: ChatEnv, script: Script, token: str = "alice", **params: Any) -> Any:
    env.llm.enqueue(script)
    return await env.api.post(f"{base(env)}/emergence", token=token, params=params or None)


@pytest.mark.config(dreaming_hour=3, dreaming_timezone="Europe/Lisbon")
async def test_the_nightly_loop_dreams_once_a_day_and_chat_sends_the_new_memory(env: ChatEnv, server: Any) -> None:
    await summarize(env, [fact("coffee", "Drinks coffee black"), fact("job", "Works as a nurse")])
    loop = server.platform.services.memory_nightly
    loop.clock = lambda: at(4)
    r = await env.api.put("/api/v1/feature-flags/dreaming", {"enabled": False}, token="alice")
    assert await loop.tick() == 0  # the `dreaming` feature flag is off
    r = await env.api.put("/api/v1/feature-flags/dreaming", {"enabled": True}, token="alice")
    assert r.status == 200, r.body
    loop.clock = lambda: at(2)
    assert await loop.tick() == 0  # before the hour
    env.llm.enqueue(dream_answer("You switched jobs.", {"key": "job", "action": "update", "after": "Works as a doctor"},
                                 {"key": "coffee", "action": "remove"},
                                 {"key": "Home Town", "action": "add", "after": "Grew up in Porto"}))
    loop.clock = lambda: at(4)
    assert await loop.tick() == 1
    prompt = json.loads(env.llm.requests[-1]["messages"][1]["content"])
    assert {m["key"] for m in prompt["memory"]} == {"coffee", "job"} and "conversation c1" in prompt["dailyNotes"]
    assert await loop.tick() == 0  # once a day
    reports = (await env.api.get(f"{base(env)}/dream/reports", token="alice")).data
    assert reports["total"] == 1
    report = reports["records"][0]
    assert report["mode"] == "NIGHTLY" and report["trigger"] == "schedule" and report["status"] == "completed"
    assert report["counts"] == {"add": 1, "update": 1, "remove": 1}
    by_key = {e["key"]: e for e in report["entries"]}
    assert by_key["job"]["before"] == "Works as a nurse" and by_key["job"]["after"] == "Works as a doctor"
    assert by_key["coffee"]["action"] == "remove" and by_key["home_town"]["before"] is None
    memory = (folder(server, env) / "MEMORY.md").read_text()
    assert "Works as a doctor" in memory and "coffee" not in memory and "Porto" in memory
    diary = (await env.api.get(f"{base(env)}/dreaming/dreams", token="alice")).data
    assert "NIGHTLY dream" in diary["content"] and "You switched jobs." in diary["content"]
    assert (folder(server, env) / "DREAMS.md").read_text() == diary["content"]
    await env.stream("who am I?", conversation_id="c2")
    system = env.llm.requests[-1]["messages"][0]["content"]
    assert "Works as a doctor" in system and "Grew up in Porto" in system and "nurse" not in system
    status = (await env.api.get(f"{base(env)}/dreaming/status", token="alice")).data
    assert status["enabled"] and status["featureFlag"] and status["hour"] == 3 and status["timezone"] == "Europe/Lisbon"
    assert status["lastReportId"] == report["id"] and status["stats"]["activeFacts"] == 2
    assert status["stats"]["forgottenFacts"] == 1 and status["stats"]["dailyNotes"] == 1 and not status["running"]
    # Nothing new since: the next night dreams nobody.
    loop.clock = lambda: at(5, day=3)
    assert await loop.tick() == 0


async def test_a_user_edit_survives_the_next_dream(env: ChatEnv, server: Any) -> None:
    await summarize(env, [fact("city", "Lives in Rome")])
    r = await emergence(env, dream_answer("Moved.", {"key": "city", "action": "update", "after": "Lives in Milan"}))
    assert r.status == 200 and r.data["mode"] == "NIGHTLY" and r.data["trigger"] == "manual"
    report_id = r.data["id"]
    r = await env.api.post(f"{base(env)}/dream/reports/{report_id}/entries/city/edit", {"after": "Lives in Turin"},
                           token="alice")
    assert r.status == 200 and r.data["userEdited"] and r.data["after"] == "Lives in Turin"
    memory = (folder(server, env) / "MEMORY.md").read_text()
    assert "Lives in Turin" in memory and "user-edited" in memory and "Milan" not in memory
    r = await emergence(env, dream_answer("Tidied.", {"key": "city", "action": "update", "after": "Lives in Naples"},
                                          {"key": "city", "action": "remove"}))
    assert r.data["entries"] == [] and {s["reason"] for s in r.data["skipped"]} == {"user-edited"}
    assert json.loads(env.llm.requests[-1]["messages"][1]["content"])["protectedKeys"] == ["city"]
    assert "Lives in Turin" in (folder(server, env) / "MEMORY.md").read_text()
    facts = (await env.api.get(f"{base(env)}/facts", token="alice")).data
    assert [(f["statement"], f["userEdited"]) for f in facts] == [("Lives in Turin", True)]
    report = (await env.api.get(f"{base(env)}/dream/reports/{report_id}", token="alice")).data
    assert report["entries"][0]["after"] == "Lives in Turin" and report["entries"][0]["editTime"]
    assert (await env.api.post(f"{base(env)}/dream/reports/{report_id}/entries/nope/edit", {"after": "x"},
                               token="alice")).status == 404
    assert (await env.api.post(f"{base(env)}/dream/reports/{report_id}/entries/city/edit", {"after": ""},
                               token="alice")).status == 400


async def test_confirming_an_entry_records_it_and_changes_nothing(env: ChatEnv, server: Any) -> None:
    await summarize(env, [fact("lang", "Speaks Dutch")])
    r = await emergence(env, dream_answer("Added.", {"key": "lang2", "action": "add", "after": "Learns Spanish"}))
    before = (folder(server, env) / "MEMORY.md").read_text()
    c = await env.api.post(f"{base(env)}/dream/reports/{r.data['id']}/entries/lang2/confirm", token="alice")
    assert c.status == 200 and c.data["confirmed"] and c.data["confirmTime"]
    assert (folder(server, env) / "MEMORY.md").read_text() == before
    report = (await env.api.get(f"{base(env)}/dream/reports/{r.data['id']}", token="alice")).data
    assert report["entries"][0]["confirmed"]
    assert (await env.api.get(f"{base(env)}/dream/reports/{r.data['id']}", token="bob")).status == 404
    assert (await env.api.get(f"{base(env)}/dream/reports/1", token="alice")).status == 404


async def test_the_morning_card_summarizes_the_last_dream_until_seen(env: ChatEnv) -> None:
    card = await env.api.get(f"{base(env)}/dream/morning-card", token="alice")
    assert card.status == 200 and card.data is None
    assert (await env.api.post(f"{base(env)}/dream/morning-card/seen", token="alice")).status == 404
    await summarize(env, [fact("a", "A")])
    await emergence(env, dream_answer("First night."))
    r = await emergence(env, dream_answer("Second night.", {"key": "b", "action": "add", "after": "B"}))
    card = (await env.api.get(f"{base(env)}/dream/morning-card", token="alice")).data
    assert card["reportId"] == r.data["id"] and card["summary"] == "Second night." and card["seen"] is False
    assert card["counts"]["add"] == 1 and card["highlights"][0]["key"] == "b"
    seen = await env.api.post(f"{base(env)}/dream/morning-card/seen", token="alice")
    assert seen.status == 200 and seen.data["seen"] is True
    assert (await env.api.get(f"{base(env)}/dream/morning-card", token="alice")).data["seen"] is True
    assert (await env.api.get(f"{base(env)}/dream/morning-card", token="bob")).data is None
    page = (await env.api.get(f"{base(env)}/dream/reports", token="alice", params={"size": 1})).data
    assert page["total"] == 2 and page["pages"] == 2 and page["records"][0]["summary"] == "Second night."


async def test_a_focused_dream_only_touches_facts_of_its_topic(env: ChatEnv, server: Any) -> None:
    await summarize(env, [fact("garden_roses", "Grows red roses"), fact("car", "Drives a blue car")])
    env.llm.enqueue(Script(text="I dreamt of roses."))
    r = await env.api.post(f"{base(env)}/dreaming/focused", {"topic": "garden"}, token="alice")
    assert r.status == 500 and r.code == 2001  # not JSON: the report fails
    env.llm.enqueue(dream_answer("Garden tidy.", {"key": "garden_roses", "action": "update", "after": "Grows white roses"},
                                 {"key": "car", "action": "remove"}))
    r = await env.api.post(f"{base(env)}/dreaming/focused", {"topic": "garden"}, token="alice")
    assert r.status == 200 and r.data["mode"] == "FOCUSED" and r.data["topic"] == "garden"
    assert [e["key"] for e in r.data["entries"]] == ["garden_roses"] and r.data["skipped"][0]["key"] == "car"
    assert [m["key"] for m in json.loads(env.llm.requests[-1]["messages"][1]["content"])["memory"]] == ["garden_roses"]
    memory = (folder(server, env) / "MEMORY.md").read_text()
    assert "white roses" in memory and "blue car" in memory
    r = await env.api.post(f"{base(env)}/dreaming/focused", {"topic": "astronomy"}, token="alice")
    assert r.status == 404 and r.msg.startswith("topic: no remembered facts")  # nothing to dream about
    assert (await env.api.post(f"{base(env)}/dreaming/focused", {}, token="alice")).status == 400
    failed = (await env.api.get(f"{base(env)}/dream/reports", token="alice")).data["records"][-1]
    assert failed["status"] == "failed" and "JSON" in failed["error"]


async def test_dream_events_stream_progress_and_failures(env: ChatEnv, api: ApiClient, server: Any) -> None:
    await summarize(env, [fact("k", "Some fact")])
    url = f"{api.base_url}{base(env)}/dream/events?token={api.tokens['alice']}"
    async with api.session.get(url, timeout=aiohttp.ClientTimeout(total=20)) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
        events = iter_sse(resp)
        first = await events.__anext__()
        assert first.event == "snapshot" and first.data["running"] == []
        run = asyncio.ensure_future(emergence(env, dream_answer("ok", {"key": "k2", "action": "add", "after": "X"})))
        seen = []
        while not seen or seen[-1].event != "dream_completed":
            seen.append(await events.__anext__())
        assert (await run).status == 200
        assert seen[0].event == "dream_started" and seen[0].data["mode"] == "NIGHTLY"
        assert [e.data["stage"] for e in seen if e.event == "dream_progress"] == ["gathering", "consolidating", "writing"]
        assert seen[-1].data["counts"]["add"] == 1
        env.llm.enqueue(Script(error_status=500, error_message="boom"))
        run = asyncio.ensure_future(api.post(f"{base(env)}/emergence", token="alice"))
        frame = await events.__anext__()
        while frame.event != "error":
            frame = await events.__anext__()
        # What failed, in words, with an error id; the provider's answer ("boom") is only in the log under that id.
        assert frame.data["message"].startswith("Memory model call failed: The model provider failed to answer. (error ")
        assert "boom" not in frame.data["message"]
        failed = await run
        assert failed.code == 2001 and failed.msg == frame.data["message"]
    bus = server.platform.services.memory.bus
    await eventually(lambda: bus.subscribers == [], what="a closed stream unsubscribes")
    r = await api.sse("GET", "/api/v1/memory/999/dream/events", token="alice")
    assert r[0].event == "error" and r[0].data["message"] == "Agent not found"
    r = await api.sse("GET", f"{base(env)}/dream/events")
    assert r[0].event == "error" and r[0].data["code"] == 401


async def test_dreaming_without_a_model_is_2001_and_people_stay_apart(env: ChatEnv, api: ApiClient) -> None:
    await summarize(env, [fact("k", "Alice fact")])
    r = await emergence(env, dream_answer("bob's night"), token="bob")
    assert r.status == 200 and r.data["entries"] == []
    assert "Alice fact" not in env.llm.requests[-1]["messages"][1]["content"]
    assert (await api.get(f"{base(env)}/dream/reports", token="alice")).data["total"] == 0
    assert (await api.post(f"{base(env)}/emergence", token="carol")).status == 403
    assert (await api.get(f"{base(env)}/dreaming/status", token="dave")).status == 403
    for provider in ("fake", "local"):
        await api.post(f"/api/v1/models/{provider}/disable", token="alice")
    r = await api.post(f"{base(env)}/emergence", token="alice")
    assert r.code == 2001 and r.msg == "No chat model configured"
    assert (await api.get(f"{base(env)}/dream/reports", token="alice")).data["total"] == 0


async def test_a_dream_left_running_by_a_stopped_server_reads_failed_after_the_restart(server: Any, api: ApiClient, people: dict) -> None:
    """A dream's report used to read `running` for ever once its process stopped mid-dream; the next start fails it."""
    agent = await make_agent(api)
    DreamReport.create(workspace_id=1, user_id=int(people["alice"]["id"]), agent_id=int(agent), mode="NIGHTLY", trigger="manual")
    again = await restart(server)
    reports = (await again.client.get(f"/api/v1/memory/{agent}/dream/reports", token="alice")).data
    rows = reports["records"] if isinstance(reports, dict) else reports
    assert [(r["status"], r["error"]) for r in rows] == [("failed", "Interrupted: the process running it stopped")]
