"""Triggers: event matching with filters and templates, de-duplication, cron triggers, pattern versions, scoping."""
from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.cron import runs, scheduler, utc
from tests.helpers.openapi_inputs import conforms
from tests.helpers.server import RunningServer


async def make_trigger(env: ChatEnv, token: str = "alice", **fields: Any) -> dict[str, Any]:
    body = {"name": "Orders", "agentId": env.agent_id, "type": "event", "eventType": "order.created",
            "message": "New order {{event.id}} from {{event.customer.name}}", **fields}
    r = await env.api.post("/api/v1/triggers", body, token=token)
    assert r.status == 200, r.body
    return r.data


async def send(env: ChatEnv, envelope: dict[str, Any], token: str = "alice", workspace: Any = None) -> Any:
    r = await env.api.post("/api/v1/triggers/events", envelope, token=token, workspace=workspace)
    assert r.status == 200, r.body
    return r.data


ORDER = {"id": 42, "customer": {"name": "Ann", "tier": "gold"}, "items": [{"sku": "A1"}, {"sku": "B2"}]}


async def test_an_event_trigger_fires_on_a_matching_event_and_drops_the_others_with_a_reason(
    env: ChatEnv, server: RunningServer
) -> None:
    t = await make_trigger(env, filter={"customer.tier": "gold", "items.0.sku": "A1"})
    assert t["type"] == "event" and t["filter"] == {"customer.tier": "gold", "items.0.sku": "A1"}
    assert t["nextFireTime"] is None and t["patternVersion"] == 1
    fired = await send(env, {"type": "order.created", "source": "shop", "payload": ORDER})
    assert len(fired) == 1 and fired[0]["triggerId"] == t["id"] and fired[0]["fired"] is True
    assert fired[0]["reason"] == "matched" and fired[0]["runId"]
    await scheduler(server).drain()
    run = (await runs(env.api, job_id=t["id"]))["records"][0]
    assert run["id"] == fired[0]["runId"] and run["status"] == "succeeded" and run["jobType"] == "trigger"
    assert run["triggerId"] == t["id"] and run["cause"] == "event" and run["conversationId"].startswith("trigger-")
    msgs = await env.messages(run["conversationId"])
    assert msgs[0]["content"] == "New order 42 from Ann"
    conv = next(c for c in (await env.api.get("/api/v1/conversations", token="alice")).data
                if c["conversationId"] == run["conversationId"])
    assert conv["source"] == "cron"

    silver = await send(env, {"type": "order.created", "payload": {**ORDER, "customer": {"name": "Bo", "tier": "silver"}}})
    assert silver == [{"triggerId": t["id"], "triggerName": "Orders", "fired": False, "runId": None,
                       "reason": "filter: 'customer.tier' does not equal \"gold\""}]
    missing = await send(env, {"type": "order.created", "payload": {"customer": {"tier": "gold"}}})
    assert missing[0]["fired"] is False and "'items.0.sku' is missing" in missing[0]["reason"]
    typed = await send(env, {"type": "order.created", "payload": {**ORDER, "items": [{"sku": 1}]}})
    assert typed[0]["fired"] is False
    assert await send(env, {"type": "order.deleted", "payload": ORDER}) == []
    await env.api.put(f"/api/v1/triggers/{t['id']}", {"enabled": False}, token="alice")
    off = await send(env, {"type": "order.created", "payload": ORDER})
    assert off[0]["fired"] is False and off[0]["reason"] == "disabled"
    await scheduler(server).drain()
    assert (await runs(env.api))["total"] == 1


async def test_an_event_with_a_seen_id_is_answered_as_a_duplicate_and_runs_nothing(env: ChatEnv, server: RunningServer) -> None:
    t = await make_trigger(env)
    first = await send(env, {"type": "order.created", "payload": ORDER, "id": "evt-1"})
    await scheduler(server).drain()
    again = await send(env, {"type": "order.created", "payload": ORDER, "id": "evt-1"})
    assert again == [{**first[0], "fired": False, "reason": "duplicate"}]
    other = await send(env, {"type": "order.created", "payload": ORDER, "id": "evt-2"})
    assert other[0]["fired"] is True
    await scheduler(server).drain()
    page = await runs(env.api, job_id=t["id"])
    assert page["total"] == 2 and {r["eventId"] for r in page["records"]} == {"evt-1", "evt-2"}


async def test_the_message_template_substitutes_once_strips_control_characters_and_caps_values(
    env: ChatEnv, server: RunningServer
) -> None:
    await make_trigger(env, message="A={{event.a}} B={{ event.b.c }} L={{event.list}} N={{event.none}} "
                                    "T={{envelope.type}} S={{envelope.source}} X={{event.long}}")
    payload = {"a": "{{event.secret}}\x00\x1b[31m!", "b": {"c": 3}, "list": [1, "x"], "secret": "s3cret",
               "long": "y" * 5000}
    fired = await send(env, {"type": "order.created", "source": "shop", "payload": payload})
    await scheduler(server).drain()
    run = (await runs(env.api))["records"][0]
    assert run["id"] == fired[0]["runId"]
    text = (await env.messages(run["conversationId"]))[0]["content"]
    assert text.startswith('A={{event.secret}}[31m! B=3 L=[1, "x"] N= T=order.created S=shop X=')
    assert "s3cret" not in text and text.endswith("y" * 2000) and "y" * 2001 not in text


async def test_a_cron_trigger_is_scheduled_fires_on_tick_and_counts_pattern_versions(env: ChatEnv, server: RunningServer) -> None:
    r = await env.api.post("/api/v1/triggers", {"name": "Hourly", "agentId": env.agent_id, "type": "cron",
                                                "cronExpression": "0 * * * *", "message": "Check {{event.x}}in"},
                           token="alice")
    assert r.status == 200, r.body
    t = r.data
    assert t["timezone"] == "UTC" and t["eventType"] is None and t["patternVersion"] == 1 and t["nextFireTime"]
    sched = scheduler(server)
    fired = await sched.tick(utc(t["nextFireTime"]))
    assert len(fired) == 1
    await sched.drain()
    run = (await runs(env.api, job_id=t["id"]))["records"][0]
    assert run["status"] == "succeeded" and run["cause"] == "schedule"
    assert (await env.messages(run["conversationId"]))[0]["content"] == "Check in"
    put = lambda body: env.api.put(f"/api/v1/triggers/{t['id']}", body, token="alice")  # noqa: E731
    assert (await put({"cronExpression": "30 * * * *"})).data["patternVersion"] == 2
    assert (await put({"cronExpression": "30  *  * * *", "name": "Half past"})).data["patternVersion"] == 2
    moved = (await put({"timezone": "Asia/Kolkata"})).data
    assert moved["patternVersion"] == 2 and utc(moved["nextFireTime"]).minute == 0  # :30 in +05:30 is :00 UTC
    off = (await put({"enabled": False})).data
    assert off["nextFireTime"] is None
    assert await sched.tick(utc(moved["nextFireTime"])) == []
    on = (await put({"enabled": True})).data
    assert on["nextFireTime"] is not None
    assert (await env.api.delete(f"/api/v1/triggers/{t['id']}", token="alice")).status == 200
    assert (await env.api.get(f"/api/v1/triggers/{t['id']}", token="alice")).status == 404
    assert await sched.tick(utc(on["nextFireTime"])) == []


async def test_switching_a_trigger_from_cron_to_event_unregisters_its_schedule(env: ChatEnv) -> None:
    r = await env.api.post("/api/v1/triggers", {"name": "T", "agentId": env.agent_id, "type": "cron",
                                                "cronExpression": "0 * * * *", "message": "m"}, token="alice")
    t = r.data
    ev = await env.api.put(f"/api/v1/triggers/{t['id']}", {"type": "event", "eventType": "ping"}, token="alice")
    assert ev.status == 200 and ev.data["cronExpression"] is None and ev.data["nextFireTime"] is None
    assert ev.data["patternVersion"] == 2
    back = await env.api.put(f"/api/v1/triggers/{t['id']}", {"type": "cron"}, token="alice")  # no stored expression: 409
    assert back.status == 409 and back.msg.startswith("cronExpression: required")


@pytest.mark.parametrize("fields, msg", [
    ({"type": "cron", "eventType": None}, "cronExpression: required"),
    ({"type": "cron", "cronExpression": "0 * * * *"}, "eventType: only for"),
    ({"eventType": None}, "eventType: required"),
    ({"eventType": "bad type!"}, "eventType: "),
    ({"cronExpression": "0 * * * *"}, "cronExpression: only for"),
    ({"type": "webhook"}, "type: "),
    ({"filter": {"a": {"nested": 1}}}, "filter."),
    ({"filter": {f"k{i}": i for i in range(21)}}, "filter: at most 20"),
    ({"message": " "}, "message: must not be blank"),
])
async def test_invalid_triggers_are_refused_with_400(env: ChatEnv, fields: dict[str, Any], msg: str) -> None:
    body = {"name": "Bad", "agentId": env.agent_id, "type": "event", "eventType": "x", "message": "m", **fields}
    body = {k: v for k, v in body.items() if v is not None}
    r = await env.api.post("/api/v1/triggers", body, token="alice")
    assert r.status == 400 and r.msg.startswith(msg), r.body
    assert (await env.api.get("/api/v1/triggers", token="alice")).data == []


async def test_a_trigger_for_an_agent_not_in_the_workspace_is_a_404(env: ChatEnv) -> None:
    body = {"name": "Bad", "agentId": "1", "type": "event", "eventType": "x", "message": "m"}
    r = await env.api.post("/api/v1/triggers", body, token="alice")
    assert r.status == 404 and r.msg.startswith("agentId: no such agent"), r.body


@pytest.mark.parametrize("envelope", [{}, {"type": ""}, {"type": "x", "payload": [1]}, {"type": "x", "id": ""},
                                      {"type": "no spaces allowed"}])
async def test_a_malformed_event_envelope_is_a_400(env: ChatEnv, envelope: dict[str, Any]) -> None:
    r = await env.api.post("/api/v1/triggers/events", envelope, token="alice")
    assert r.status == 400 and r.body["code"] == 400


async def test_the_document_states_an_event_type_s_characters(env: ChatEnv) -> None:
    doc = (await env.api.get("/v3/api-docs")).body
    kind = doc["components"]["schemas"]["EventEnvelope"]["properties"]["type"]
    assert kind["pattern"] == "^[A-Za-z0-9_.:/\\-]{1,100}$" and kind["maxLength"] == 100
    r = await env.api.post("/api/v1/triggers/events", {"type": "tab\there"}, token="alice")
    assert r.status == 400 and r.msg == "type: 1-100 characters of letters, digits and _ . : / -"  # the hint, not the regex


async def test_triggers_and_events_stay_inside_their_workspace(env: ChatEnv, server: RunningServer) -> None:
    t = await make_trigger(env)
    dave_ws = env.people["dave"]["workspace"]
    assert (await env.api.get("/api/v1/triggers", token="dave", workspace=dave_ws)).data == []
    assert (await env.api.get(f"/api/v1/triggers/{t['id']}", token="dave", workspace=dave_ws)).status == 404
    assert (await env.api.put(f"/api/v1/triggers/{t['id']}", {"name": "x"}, token="dave", workspace=dave_ws)).status == 404
    assert await send(env, {"type": "order.created", "payload": ORDER}, token="dave", workspace=dave_ws) == []
    assert (await env.api.get(f"/api/v1/triggers/{t['id']}", token="carol")).data["id"] == t["id"]
    assert (await env.api.post("/api/v1/triggers/events", {"type": "order.created"}, token="carol")).status == 403
    assert (await env.api.delete(f"/api/v1/triggers/{t['id']}", token="bob")).status == 403
    assert (await runs(env.api))["total"] == 0


async def test_an_update_states_the_console_patterns_json_and_an_unknown_pattern_type_only_echoes_the_stored_one(
    env: ChatEnv,
) -> None:
    """A console pattern in an update follows the create's per-type patternJson (400 otherwise, in the document too);
    the pattern type of an API-made event trigger can only be sent back as shown (409: stored state decides)."""
    doc = (await env.api.get("/v3/api-docs")).body
    t = await make_trigger(env)  # event order.created: the console shows patternType "order.created", patternJson "{}"
    shown = {"patternType": t["patternType"], "patternJson": t["patternJson"]}
    answers: dict[int, list[dict[str, Any]]] = {
        200: [shown, {"patternType": "webhook", "patternJson": None}],
        409: [{"patternType": "order.updated"}, {"patternType": "order.created", "patternJson": '{"a": "b"}'}],
        400: [{"patternType": "cron", "patternJson": '{"cron": "every day"}'}, {"patternType": "cron"},
              {"patternType": "webhook", "patternJson": '{"cron": 5}'}],
    }
    for status, bodies in answers.items():
        for body in bodies:
            r = await env.api.put(f"/api/v1/triggers/{t['id']}", body, token="alice")
            assert r.status == status, (body, r.body)
            assert conforms(doc, "TriggerUpdate", body) == (status != 400), body
    r = await env.api.put(f"/api/v1/triggers/{t['id']}", {"patternType": "cron", "patternJson": '{"cron": "0 9 * * *"}'}, token="alice")
    assert r.status == 200 and r.data["type"] == "cron" and r.data["cronExpression"] == "0 9 * * *", r.body
    assert conforms(doc, "TriggerUpdate", {"patternType": "cron", "patternJson": '{"cron": "0 9 * * *"}'})
    # the console's pattern sent back unchanged beside the API's kind fields: the pattern decides, as on create (seed 11)
    echo = {"patternType": "cron", "patternJson": r.data["patternJson"], "eventType": "order.created", "cronExpression": "5 * * * *"}
    again = await env.api.put(f"/api/v1/triggers/{t['id']}", echo, token="alice")
    assert again.status == 200 and again.data["cronExpression"] == "0 9 * * *" and again.data["type"] == "cron", again.body
    assert conforms(doc, "TriggerUpdate", echo)


async def test_an_update_without_a_type_leaves_the_kind_to_the_stored_one_and_a_type_given_states_its_fields(
    env: ChatEnv,
) -> None:
    """Seed 2718 sent an event type to a stored cron trigger without `type`: the document cannot know the stored
    kind (a 409); with `type` given the document states which kind's fields go with it (a 400 otherwise)."""
    doc = (await env.api.get("/v3/api-docs")).body
    t = await make_trigger(env, type="cron", eventType=None, cronExpression="0 9 * * *")
    answers: dict[int, list[dict[str, Any]]] = {
        409: [{"eventType": "order.created"}, {"type": "event"}],  # the stored kind; a switch with no stored event type
        400: [{"type": "cron", "eventType": "order.created"}, {"type": "event", "cronExpression": "0 9 * * *"}],
        200: [{"cronExpression": "0 10 * * *"}, {"type": "event", "eventType": "order.created"}],
    }
    for status, bodies in answers.items():
        for body in bodies:
            r = await env.api.put(f"/api/v1/triggers/{t['id']}", body, token="alice")
            assert r.status == status, (body, r.body)
            assert conforms(doc, "TriggerUpdate", body) == (status != 400), body
