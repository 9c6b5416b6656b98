"""Cron jobs: scheduling with an injected clock, runs as the owner, run now, toggle, zones, validation, scoping."""
from __future__ import annotations

import datetime as dt
import os
import zoneinfo
from typing import Any

import pytest

from platform_server.features.cron.schedule import CRON_PATTERN, ZONE_PATTERN, next_fire
from platform_server.ids import CONVERSATION_ID_PATTERN
from tests.helpers.chat import ChatEnv, make_agent
from tests.helpers.cron import make_job, runs, scheduler, utc
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.models import use_fake_openai
from tests.helpers.openapi_inputs import conforms
from tests.helpers.server import RunningServer, create_personas, start_server


def slow(words: int = 40) -> Script:
    return Script(text=[f"w{i} " for i in range(words)], delay_s=0.05)


async def test_a_due_job_fires_once_per_tick_window_and_its_run_talks_in_a_cron_conversation(
    env: ChatEnv, server: RunningServer
) -> None:
    job = await make_job(env.api, env.agent_id, message="Summarize the news")
    assert job["enabled"] is True and job["timezone"] == "UTC" and job["conversationMode"] == "new"
    due = utc(job["nextFireTime"])
    assert due > dt.datetime.utcnow() - dt.timedelta(seconds=5) and due.minute % 5 == 0 and due.second == 0
    sched = scheduler(server)
    assert await sched.tick(due - dt.timedelta(seconds=1)) == []
    env.llm.enqueue(Script(text="Here is the news.", prompt_tokens=7, completion_tokens=4))
    fired = await sched.tick(due)
    assert len(fired) == 1
    assert await sched.tick(due) == [] and await sched.tick(due + dt.timedelta(seconds=30)) == []
    await sched.drain()
    page = await runs(env.api)
    assert page["total"] == 1
    run = page["records"][0]
    assert run["id"] == str(fired[0]) and run["status"] == "succeeded" and run["cause"] == "schedule"
    assert run["cronJobId"] == job["id"] and run["jobName"] == "Digest" and run["error"] is None
    assert run["scheduledTime"] == job["nextFireTime"] and run["finishTime"] is not None
    assert run["promptTokens"] == 7 and run["completionTokens"] == 4 and run["assistantMessageId"]
    cid = run["conversationId"]
    assert cid.startswith("cron-")
    convs = (await env.api.get("/api/v1/conversations", token="alice")).data
    conv = next(c for c in convs if c["conversationId"] == cid)
    assert conv["source"] == "cron" and conv["agentId"] == env.agent_id
    msgs = await env.messages(cid)
    assert [m["role"] for m in msgs] == ["user", "assistant"]
    assert msgs[0]["content"] == "Summarize the news" and msgs[1]["content"] == "Here is the news."
    assert msgs[1]["id"] == run["assistantMessageId"]
    again = (await env.api.get(f"/api/v1/cron-jobs/{job['id']}", token="alice")).data
    assert utc(again["nextFireTime"]) == due + dt.timedelta(minutes=5) and again["lastFireTime"] is not None


async def test_fires_missed_during_downtime_run_once_and_the_schedule_moves_past_now(env: ChatEnv, server: RunningServer) -> None:
    job = await make_job(env.api, env.agent_id)
    sched = scheduler(server)
    due = utc(job["nextFireTime"])
    later = due + dt.timedelta(days=3, minutes=2)
    assert len(await sched.tick(later)) == 1
    assert await sched.tick(later) == []
    await sched.drain()
    assert (await runs(env.api))["total"] == 1
    moved = (await env.api.get(f"/api/v1/cron-jobs/{job['id']}", token="alice")).data
    assert utc(moved["nextFireTime"]) == due + dt.timedelta(days=3, minutes=5)


async def test_run_now_answers_the_running_run_at_once_and_the_job_never_runs_twice_at_the_same_time(
    env: ChatEnv, server: RunningServer
) -> None:
    job = await make_job(env.api, env.agent_id)
    env.llm.enqueue(slow())
    r = await env.api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")
    assert r.status == 200 and r.data["status"] == "running" and r.data["cause"] == "manual"
    run_id, cid = r.data["id"], r.data["conversationId"]
    active = (await env.api.get("/api/v1/cron-jobs/active-runs", token="carol")).data
    assert [a["id"] for a in active] == [run_id]
    only = await env.api.get("/api/v1/cron-jobs/active-runs", token="alice", params={"conversationId": cid})
    assert [a["id"] for a in only.data] == [run_id]
    other = await env.api.get("/api/v1/cron-jobs/active-runs", token="alice", params={"conversationId": "nope"})
    assert other.data == []
    busy = await env.api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")
    assert busy.status == 409 and "already" in busy.msg
    assert await scheduler(server).tick(utc(job["nextFireTime"])) == []  # the due fire is skipped, not queued
    await scheduler(server).drain()
    done = (await runs(env.api))["records"]
    assert [d["status"] for d in done] == ["succeeded"]
    assert (await env.api.get("/api/v1/cron-jobs/active-runs", token="alice")).data == []
    msgs = await env.messages(cid)
    assert msgs[-1]["content"] == "".join(f"w{i} " for i in range(40))


async def test_toggle_stops_and_restarts_firing(env: ChatEnv, server: RunningServer) -> None:
    job = await make_job(env.api, env.agent_id)
    off = await env.api.put(f"/api/v1/cron-jobs/{job['id']}/toggle", token="alice")
    assert off.status == 200 and off.data["enabled"] is False and off.data["nextFireTime"] is None
    sched = scheduler(server)
    assert await sched.tick(utc(job["nextFireTime"]) + dt.timedelta(days=1)) == []
    on = await env.api.put(f"/api/v1/cron-jobs/{job['id']}/toggle", {"enabled": True}, token="alice")
    assert on.data["enabled"] is True and on.data["nextFireTime"] is not None
    same = await env.api.put(f"/api/v1/cron-jobs/{job['id']}/toggle", {"enabled": True}, token="alice")
    assert same.data["enabled"] is True
    assert len(await sched.tick(utc(on.data["nextFireTime"]))) == 1
    await sched.drain()
    disabled = await env.api.put(f"/api/v1/cron-jobs/{job['id']}", {"enabled": False}, token="alice")
    assert disabled.data["enabled"] is False and disabled.data["nextFireTime"] is None
    assert await sched.tick(utc(on.data["nextFireTime"]) + dt.timedelta(days=2)) == []


def test_the_next_fire_of_nine_in_berlin_is_eight_utc_in_winter_and_seven_in_summer() -> None:
    assert next_fire("0 9 * * *", "Europe/Berlin", dt.datetime(2026, 1, 10)) == dt.datetime(2026, 1, 10, 8, 0)
    assert next_fire("0 9 * * *", "Europe/Berlin", dt.datetime(2026, 7, 10)) == dt.datetime(2026, 7, 10, 7, 0)
    assert next_fire("0 9 * * *", "Europe/Berlin", dt.datetime(2026, 7, 10, 7, 0)) == dt.datetime(2026, 7, 11, 7, 0)
    # across the spring change: Saturday 09:00 CET is 08:00Z, Sunday 09:00 CEST is 07:00Z
    assert next_fire("0 9 * * *", "Europe/Berlin", dt.datetime(2026, 3, 28, 8, 0)) == dt.datetime(2026, 3, 29, 7, 0)


async def test_a_job_at_nine_in_berlin_fires_at_the_matching_utc_instant(env: ChatEnv, server: RunningServer) -> None:
    job = await make_job(env.api, env.agent_id, cronExpression="0 9 * * *", timezone="Europe/Berlin")
    assert job["timezone"] == "Europe/Berlin"
    due = utc(job["nextFireTime"])
    local = due.replace(tzinfo=dt.timezone.utc).astimezone(zoneinfo.ZoneInfo("Europe/Berlin"))
    assert (local.hour, local.minute) == (9, 0)
    assert due.hour == 9 - int(local.utcoffset().total_seconds() // 3600)
    assert due - dt.datetime.utcnow() <= dt.timedelta(days=1)
    sched = scheduler(server)
    assert await sched.tick(due - dt.timedelta(minutes=1)) == []
    assert len(await sched.tick(due)) == 1
    await sched.drain()
    moved = (await env.api.get(f"/api/v1/cron-jobs/{job['id']}", token="alice")).data
    nxt = utc(moved["nextFireTime"]).replace(tzinfo=dt.timezone.utc).astimezone(zoneinfo.ZoneInfo("Europe/Berlin"))
    assert (nxt.hour, nxt.minute) == (9, 0) and nxt.date() == local.date() + dt.timedelta(days=1)


@pytest.mark.config(timezone="Asia/Tokyo")
async def test_a_job_without_a_zone_takes_the_servers_configured_timezone(env: ChatEnv) -> None:
    job = await make_job(env.api, env.agent_id, cronExpression="30 6 * * *")
    assert job["timezone"] == "Asia/Tokyo"
    local = utc(job["nextFireTime"]).replace(tzinfo=dt.timezone.utc).astimezone(zoneinfo.ZoneInfo("Asia/Tokyo"))
    assert (local.hour, local.minute) == (6, 30)
    assert (await env.api.put("/api/v1/settings", {"timezone": "America/New_York"}, token="alice")).status == 200
    assert (await make_job(env.api, env.agent_id))["timezone"] == "America/New_York"


async def test_a_run_whose_tool_call_needs_approval_ends_awaiting_approval_until_the_owner_approves(
    env: ChatEnv, server: RunningServer
) -> None:
    job = await make_job(env.api, env.agent_id, message="Save the report")
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("write_file", {"path": "report.txt", "content": "ok"})]),
                    Script(text="Saved."))
    run = (await env.api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")).data
    await scheduler(server).drain()
    done = (await runs(env.api))["records"][0]
    assert done["id"] == run["id"] and done["status"] == "awaiting_approval" and done["error"] is None
    report = server.config.data_dir + f"/agents/{env.agent_id}/workspace/report.txt"
    assert not os.path.exists(report)
    pending = await env.api.get(f"/api/v1/chat/{run['conversationId']}/pending-approvals", token="alice")
    assert pending.status == 200 and [p["toolName"] for p in pending.data] == ["write_file"]
    events = await env.stream("/approve", conversation_id=run["conversationId"])
    assert events[-1].data["status"] == "completed" and os.path.exists(report)


@pytest.mark.parametrize("fields, msg", [
    ({"cronExpression": "* * * *"}, "cronExpression: must have 5 fields"),
    ({"cronExpression": "0 0 * * * *"}, "cronExpression: must have 5 fields"),
    ({"cronExpression": "61 * * * *"}, "cronExpression: Bad minute"),
    ({"cronExpression": "every day"}, "cronExpression: "),
    ({"timezone": "../../etc/passwd"}, "timezone: not a time zone name"),
    ({"timezone": " UTC"}, "timezone: not a time zone name"),
    ({"message": "   "}, "message: must not be blank"),
    ({"agentId": "abc"}, "Invalid value for parameter 'agentId'"),
    ({"conversationMode": "fixed"}, "conversationId: required"),
    ({"conversationId": "x1"}, "conversationId: only allowed"),
    ({"conversationMode": "sometimes"}, "conversationMode: "),
])
async def test_invalid_jobs_are_refused_with_400_naming_the_field(env: ChatEnv, fields: dict[str, Any], msg: str) -> None:
    body = {"name": "Bad", "agentId": env.agent_id, "cronExpression": "0 * * * *", "message": "m", **fields}
    r = await env.api.post("/api/v1/cron-jobs", body, token="alice")
    assert r.status == 400 and r.body["code"] == 400 and r.msg.startswith(msg), r.body
    assert (await env.api.get("/api/v1/cron-jobs", token="alice")).data == []


async def test_a_job_for_an_agent_not_in_the_workspace_is_a_404(env: ChatEnv) -> None:
    body = {"name": "Bad", "agentId": "123", "cronExpression": "0 * * * *", "message": "m"}
    r = await env.api.post("/api/v1/cron-jobs", body, token="alice")
    assert r.status == 404 and r.msg.startswith("agentId: no such agent"), r.body
    body = {"name": "Bad", "agentId": env.agent_id, "cronExpression": "0 * * * *", "message": "m", "timezone": "Mars/Olympus"}
    r = await env.api.post("/api/v1/cron-jobs", body, token="alice")  # a zone's shape, but no zone the database has
    assert r.status == 404 and r.msg == "timezone: unknown time zone 'Mars/Olympus'", r.body


async def test_an_expression_of_the_pattern_naming_no_date_is_unprocessable(env: ChatEnv) -> None:
    """`0 0 30 2 *` (February 30) matches the document's pattern, so it is no malformed request: 422, documented."""
    for expression in ("0 0 30 2 *", "0 0 31 4,6 *"):
        body = {"name": "Never", "agentId": env.agent_id, "cronExpression": expression, "message": "m"}
        r = await env.api.post("/api/v1/cron-jobs", body, token="alice")
        assert r.status == 422 and r.body["code"] == 422 and r.msg.startswith("cronExpression: "), r.body
    assert (await env.api.get("/api/v1/cron-jobs", token="alice")).data == []
    op = (await env.api.get("/v3/api-docs")).body["paths"]["/api/v1/cron-jobs"]["post"]
    assert "names no date" in op["responses"]["422"]["description"]


async def test_the_document_states_a_jobs_expression_zone_text_and_conversation_rules(env: ChatEnv) -> None:
    job = (await env.api.get("/v3/api-docs")).body["components"]["schemas"]["CronJobCreate"]
    assert job["properties"]["cronExpression"]["pattern"] == CRON_PATTERN and job["properties"]["timezone"]["pattern"] == ZONE_PATTERN
    assert "pattern" in job["properties"]["name"] and "pattern" in job["properties"]["message"]  # not blank
    fixed = job["allOf"][0]["oneOf"][1]
    assert fixed["required"] == ["conversationMode", "conversationId"]
    assert fixed["properties"]["conversationId"]["pattern"] == CONVERSATION_ID_PATTERN
    for blank in ("\ufeff", "\u3000 "):  # blank as the document's pattern reads it (ECMA's spaces and Python's)
        body = {"name": "Job", "agentId": env.agent_id, "cronExpression": "0 * * * *", "message": blank}
        r = await env.api.post("/api/v1/cron-jobs", body, token="alice")
        assert r.status == 400 and r.msg == "message: must not be blank", r.body


async def test_a_bad_update_changes_nothing(env: ChatEnv) -> None:
    job = await make_job(env.api, env.agent_id)
    for body in ({"cronExpression": "* * *", "name": "Renamed"}, {"timezone": "Nowhere City"}, {"name": ""}):
        r = await env.api.put(f"/api/v1/cron-jobs/{job['id']}", body, token="alice")
        assert r.status == 400, body
    same = (await env.api.get(f"/api/v1/cron-jobs/{job['id']}", token="alice")).data
    assert same["name"] == "Digest" and same["cronExpression"] == "*/5 * * * *"
    r = await env.api.put(f"/api/v1/cron-jobs/{job['id']}", {"cronExpression": "0  12 * * 1-5", "name": "Noon"}, token="alice")
    assert r.status == 200 and r.data["cronExpression"] == "0 12 * * 1-5" and r.data["name"] == "Noon"
    assert utc(r.data["nextFireTime"]).hour == 12


async def test_jobs_are_scoped_to_the_workspace_and_only_the_owner_or_an_admin_changes_them(env: ChatEnv) -> None:
    api = env.api
    job = await make_job(api, env.agent_id)
    dave_ws = env.people["dave"]["workspace"]
    assert (await api.get("/api/v1/cron-jobs", token="dave", workspace=dave_ws)).data == []
    assert (await api.get(f"/api/v1/cron-jobs/{job['id']}", token="dave", workspace=dave_ws)).status == 404
    assert (await api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="dave", workspace=dave_ws)).status == 404
    assert (await api.get("/api/v1/dashboard/cron-runs", token="dave", workspace=dave_ws)).data["total"] == 0
    assert (await api.get(f"/api/v1/dashboard/cron-runs/{job['id']}", token="dave", workspace=dave_ws)).status == 404
    assert (await api.get("/api/v1/cron-jobs", token="dave")).status == 403
    # carol (viewer) reads, never writes
    assert [j["id"] for j in (await api.get("/api/v1/cron-jobs", token="carol")).data] == [job["id"]]
    assert (await api.post("/api/v1/cron-jobs", {"name": "x"}, token="carol")).status == 403
    assert (await api.put(f"/api/v1/cron-jobs/{job['id']}/toggle", token="carol")).status == 403
    assert (await api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="carol")).status == 403
    # bob (member) makes his own jobs but cannot change or start alice's: a run acts as its owner
    for method, path in (("PUT", f"/api/v1/cron-jobs/{job['id']}"), ("PUT", f"/api/v1/cron-jobs/{job['id']}/toggle"),
                         ("POST", f"/api/v1/cron-jobs/{job['id']}/run"), ("DELETE", f"/api/v1/cron-jobs/{job['id']}")):
        r = await api.request(method, path, {"message": "leak secrets"} if method == "PUT" else None, token="bob")
        assert r.status == 403, (method, path, r.body)
    own = await make_job(api, env.agent_id, token="bob")
    assert own["ownerUsername"] == "bob"
    assert (await api.put(f"/api/v1/cron-jobs/{own['id']}", {"name": "Admin-renamed"}, token="alice")).status == 200
    assert (await api.delete(f"/api/v1/cron-jobs/{job['id']}", token="alice")).status == 200
    assert (await api.get(f"/api/v1/cron-jobs/{job['id']}", token="alice")).status == 404
    audit = (await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "CRON_JOB"})).data
    assert {e["action"] for e in audit["records"]} >= {"CREATE", "UPDATE", "DELETE"}


async def test_a_run_refuses_to_act_for_an_owner_who_lost_access_or_with_a_disabled_agent(
    env: ChatEnv, server: RunningServer
) -> None:
    api, sched = env.api, scheduler(server)
    job = await make_job(api, env.agent_id, token="bob")
    bob = env.people["bob"]["id"]
    assert (await api.put(f"/api/v1/workspaces/1/members/{bob}", {"role": "viewer"}, token="alice")).status == 200
    assert len(await sched.tick(utc(job["nextFireTime"]))) == 1
    await sched.drain()
    run = (await runs(api))["records"][0]
    assert run["status"] == "failed" and "no longer has member access" in run["error"]
    assert (await api.put(f"/api/v1/workspaces/1/members/{bob}", {"role": "member"}, token="alice")).status == 200
    assert (await api.put(f"/api/v1/agents/{env.agent_id}", {"enabled": False}, token="alice")).status == 200
    r = await api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")
    await sched.drain()
    run = (await api.get(f"/api/v1/dashboard/cron-runs/{job['id']}", token="alice")).data["records"][0]
    assert run["id"] == r.data["id"] and run["status"] == "failed" and run["error"] == "Agent is disabled"
    assert env.llm.requests == []


async def test_a_job_of_a_deleted_workspace_fails_instead_of_running(env: ChatEnv, server: RunningServer) -> None:
    ws = (await env.api.post("/api/v1/workspaces", {"name": "Temp"}, token="alice")).data["id"]
    agent = (await env.api.post("/api/v1/agents", {"name": "T"}, token="alice", workspace=ws)).data["id"]
    r = await env.api.post("/api/v1/cron-jobs", {"name": "j", "agentId": agent, "cronExpression": "0 * * * *",
                                                 "message": "m"}, token="alice", workspace=ws)
    assert r.status == 200, r.body
    assert (await env.api.delete(f"/api/v1/workspaces/{ws}", token="alice")).status == 200
    assert len(await scheduler(server).tick(utc(r.data["nextFireTime"]))) == 1
    await scheduler(server).drain()
    run = (await env.api.get("/api/v1/dashboard/cron-runs", token="alice", workspace=ws)).data["records"][0]
    assert run["status"] == "failed" and run["error"] == "The job's workspace no longer exists"
    assert env.llm.requests == []


async def test_a_fixed_conversation_job_keeps_talking_in_the_same_conversation(env: ChatEnv, server: RunningServer) -> None:
    await env.stream("hello", conversation_id="daily", token="bob")
    taken = await env.api.post("/api/v1/cron-jobs", {"name": "x", "agentId": env.agent_id, "cronExpression": "0 * * * *",
                                                     "message": "m", "conversationMode": "fixed", "conversationId": "daily"},
                               token="alice")
    assert taken.status == 403
    job = await make_job(env.api, env.agent_id, conversationMode="fixed", conversationId="standup")
    sched = scheduler(server)
    for _ in range(2):
        await env.api.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")
        await sched.drain()
    page = await runs(env.api, job_id=job["id"], size=1)
    assert page["total"] == 2 and page["pages"] == 2 and len(page["records"]) == 1
    assert {r["conversationId"] for r in (await runs(env.api))["records"]} == {"standup"}
    assert [m["role"] for m in await env.messages("standup")] == ["user", "assistant", "user", "assistant"]
    assert (await runs(env.api, status="failed"))["total"] == 0
    assert (await env.api.get("/api/v1/dashboard/cron-runs", token="alice", params={"status": "odd"})).status == 400


async def test_schedules_survive_a_restart_and_a_run_cut_short_is_recorded_as_failed(
    tmp_path: Any, llm: ScriptedOpenAI
) -> None:
    data_dir = str(tmp_path / "data")
    first = await start_server(data_dir)
    try:
        await create_personas(first.client)
        await use_fake_openai(first.client, llm.url)
        agent = await make_agent(first.client)
        job = await make_job(first.client, agent)
        llm.enqueue(Script(text=[f"w{i} " for i in range(200)], delay_s=0.05))
        r = await first.client.post(f"/api/v1/cron-jobs/{job['id']}/run", token="alice")
        assert r.data["status"] == "running"
    finally:
        await first.stop()
    second = await start_server(data_dir)
    try:
        second.client.tokens.update(first.client.tokens)
        run = (await runs(second.client))["records"][0]
        assert run["status"] == "failed" and run["error"].startswith("Interrupted")
        kept = (await second.client.get(f"/api/v1/cron-jobs/{job['id']}", token="alice")).data
        assert kept["nextFireTime"] == job["nextFireTime"]
        sched = scheduler(second)
        assert len(await sched.tick(utc(kept["nextFireTime"]))) == 1
        await sched.drain()
        assert [r["status"] for r in (await runs(second.client))["records"]] == ["succeeded", "failed"]
    finally:
        await second.stop()


async def test_an_update_that_keeps_the_stored_conversation_mode_and_contradicts_it_is_a_409(env: ChatEnv) -> None:
    """The document cannot know a job's stored conversationMode: a conversationId sent to a `new` job without a mode
    is a state conflict (409, documented); with the mode in the body the document's own rule (400) applies."""
    job = await make_job(env.api, env.agent_id)
    r = await env.api.put(f"/api/v1/cron-jobs/{job['id']}", {"conversationId": "daily"}, token="alice")
    assert r.status == 409 and r.msg == "conversationId: only allowed with conversationMode 'fixed'", r.body
    r = await env.api.put(f"/api/v1/cron-jobs/{job['id']}", {"conversationMode": "new", "conversationId": "daily"}, token="alice")
    assert r.status == 400, r.body
    doc = (await env.api.get("/v3/api-docs")).body
    assert "409" in doc["paths"]["/api/v1/cron-jobs/{id}"]["put"]["responses"]
    assert "409" in doc["paths"]["/api/v1/cron-jobs/{id}/run"]["post"]["responses"]
    assert "pattern" in doc["components"]["schemas"]["TriggerUpdate"]["properties"]["eventType"]
    for model in ("CronJobUpdate", "TriggerUpdate"):  # a sparse update states the create's rules for what it gives
        fields = doc["components"]["schemas"][model]["properties"]
        assert "pattern" in fields["cronExpression"] and "pattern" in fields["timezone"] and "pattern" in fields["name"], model
    r = await env.api.put(f"/api/v1/cron-jobs/{job['id']}", {"cronExpression": "false"}, token="alice")
    assert r.status == 400, r.body


async def test_a_jobs_update_states_which_conversation_fields_the_body_decides_and_which_the_stored_job_does(
    env: ChatEnv,
) -> None:
    """Every body the document allows is taken or refused by stored state (409); every body it refuses is a 400."""
    doc = (await env.api.get("/v3/api-docs")).body
    job = await make_job(env.api, env.agent_id)  # conversationMode new, no id stored
    answers = {
        409: [{"conversationId": "daily"}, {"conversationMode": "fixed"}],  # the stored mode, the stored (missing) id
        400: [{"conversationMode": "new", "conversationId": "daily"}, {"conversationMode": "fixed", "conversationId": ""},
              {"conversationMode": "fixed", "conversationId": None}, {"conversationId": " padded "}],
        200: [{"conversationMode": "new", "conversationId": ""}, {"conversationId": None}, {"conversationMode": None}],
    }
    for status, bodies in answers.items():
        for body in bodies:
            r = await env.api.put(f"/api/v1/cron-jobs/{job['id']}", body, token="alice")
            assert r.status == status, (body, r.body)
            assert conforms(doc, "CronJobUpdate", body) == (status != 400), body
    kept = (await env.api.get(f"/api/v1/cron-jobs/{job['id']}", token="alice")).data
    assert kept["conversationMode"] == "new" and not kept.get("conversationId"), kept
