"""Grants and pending approvals at the service level, and the grant routes over HTTP."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from platform_server.db import utcnow
from platform_server.features.guard import grants
from platform_server.features.guard import service as guard
from platform_server.features.guard.models import ApprovalResolution, GuardRule
from platform_server.web.errors import BadRequest, Conflict, Forbidden, NotFound
from tests.helpers.client import ApiClient
from tests.helpers.guard import caller, conversation, ctx
from tests.helpers.server import RunningServer

WRITE = {"path": "notes.txt", "content": "hello"}


def grant(person: dict[str, Any], name: str, scope_type: str, scope_id: str, tool: str | None = "write_file",
          kind: str = "ALWAYS", expire_at: dt.datetime | None = None, max_severity: str = "high",
          rule_id: str | None = None, admin: bool = False) -> dict[str, Any]:
    who = caller(person, name, global_admin=admin)
    return grants.create(who, scope_type, scope_id, tool, rule_id, max_severity, kind, expire_at, None)


# ---- evaluate with grants -----------------------------------------------------------------------

async def test_a_conversation_grant_approves_without_asking_and_logs_a_resolution(server: RunningServer,
                                                                                 people: dict) -> None:
    bob = people["bob"]["id"]
    conversation(bob, "c1")
    g = grant(people["bob"], "bob", "CONVERSATION", "c1")
    v = guard.evaluate("write_file", WRITE, ctx(bob, "c1"))
    assert (v.decision, v.grant_id, v.rule_id) == ("allow", int(g["id"]), "builtin.write_file")
    (res,) = ApprovalResolution.select()
    assert (res.decision, res.source, res.grant_id, res.conversation_id) == ("approved", "grant", int(g["id"]), "c1")
    assert guard.evaluate("write_file", WRITE, ctx(bob, "c2")).decision == "ask"  # another conversation
    assert guard.evaluate("shell_exec", {"command": "ls"}, ctx(bob, "c1")).decision == "ask"  # another tool


async def test_grants_match_tool_names_exactly_never_by_substring(server: RunningServer, people: dict) -> None:
    bob = people["bob"]["id"]
    GuardRule.create(rule_id="w", name="w", tool_name="write", severity="high", decision="ask", argument_patterns={})
    grant(people["bob"], "bob", "USER", str(bob), tool="write_file")
    assert guard.evaluate("write", {}, ctx(bob)).decision == "ask"
    assert guard.evaluate("write_file", WRITE, ctx(bob)).decision == "allow"
    grant(people["bob"], "bob", "USER", str(bob), tool="write")
    assert guard.evaluate("write", {}, ctx(bob)).decision == "allow"


async def test_scope_severity_and_rule_must_all_cover_the_call(server: RunningServer, people: dict) -> None:
    bob, carol = people["bob"]["id"], people["carol"]["id"]
    grant(people["bob"], "bob", "USER", str(bob), tool=None, max_severity="medium")
    assert guard.evaluate("write_file", WRITE, ctx(bob)).decision == "ask"  # high > medium
    grant(people["bob"], "bob", "USER", str(bob), tool=None, rule_id="builtin.shell_exec")
    assert guard.evaluate("write_file", WRITE, ctx(bob)).decision == "ask"  # another rule
    assert guard.evaluate("shell_exec", {"command": "ls"}, ctx(bob)).decision == "allow"
    assert guard.evaluate("shell_exec", {"command": "ls"}, ctx(carol)).decision == "ask"  # another user
    assert guard.evaluate("shell_exec", {"command": "ls"}, ctx(bob, workspace_id=2)).decision == "ask"


async def test_agent_and_workspace_grants_cover_everyone_in_scope(server: RunningServer, api: ApiClient,
                                                                  people: dict) -> None:
    r = await api.post("/api/v1/agents", {"name": "Writer"}, token="alice")
    agent = r.data["id"]
    grant(people["alice"], "alice", "AGENT", agent, admin=True)
    assert guard.evaluate("write_file", WRITE, ctx(people["carol"]["id"], agent_id=agent)).decision == "allow"
    assert guard.evaluate("write_file", WRITE, ctx(people["carol"]["id"], agent_id=5)).decision == "ask"
    grant(people["alice"], "alice", "WORKSPACE", "1", tool="shell_exec", admin=True)
    assert guard.evaluate("shell_exec", {"command": "ls"}, ctx(people["bob"]["id"])).decision == "allow"


async def test_revoked_and_expired_grants_ask_again(server: RunningServer, people: dict) -> None:
    bob = people["bob"]["id"]
    g = grant(people["bob"], "bob", "USER", str(bob))
    assert guard.evaluate("write_file", WRITE, ctx(bob)).decision == "allow"
    grants.revoke(caller(people["bob"], "bob"), int(g["id"]))
    assert guard.evaluate("write_file", WRITE, ctx(bob)).decision == "ask"
    soon = utcnow() + dt.timedelta(minutes=5)
    grant(people["bob"], "bob", "USER", str(bob), kind="UNTIL_TIMESTAMP", expire_at=soon)
    assert guard.evaluate("write_file", WRITE, ctx(bob)).decision == "allow"
    later = soon + dt.timedelta(seconds=1)
    assert guard.evaluate("write_file", WRITE, ctx(bob), now=later).decision == "ask"


async def test_a_conversation_end_grant_ends_with_its_conversation(server: RunningServer, people: dict) -> None:
    bob = people["bob"]["id"]
    conv = conversation(bob, "c1")
    grant(people["bob"], "bob", "CONVERSATION", "c1", kind="UNTIL_CONVERSATION_END")
    assert guard.evaluate("write_file", WRITE, ctx(bob, "c1")).decision == "allow"
    conv.delete_instance()
    conversation(bob, "c1")  # a new conversation with the same id is not the one granted
    assert guard.evaluate("write_file", WRITE, ctx(bob, "c1")).decision == "ask"


async def test_critical_always_asks_whatever_the_grants(server: RunningServer, people: dict) -> None:
    bob = people["bob"]["id"]
    GuardRule.create(rule_id="crit", name="c", tool_name="write_file", severity="critical", decision="ask",
                     argument_patterns={})
    grant(people["bob"], "bob", "USER", str(bob), tool=None)
    v = guard.evaluate("write_file", WRITE, ctx(bob))
    assert (v.decision, v.severity, v.grant_id) == ("ask", "critical", None)
    with pytest.raises(BadRequest):
        grant(people["bob"], "bob", "USER", str(bob), max_severity="critical")


async def test_grant_creation_checks_kind_and_scope(server: RunningServer, people: dict) -> None:
    bob = people["bob"]
    with pytest.raises(BadRequest, match="expireAt"):
        grant(bob, "bob", "USER", str(bob["id"]), kind="UNTIL_TIMESTAMP")
    with pytest.raises(Conflict, match="future"):  # well-formed, but the clock has passed it
        grant(bob, "bob", "USER", str(bob["id"]), kind="UNTIL_TIMESTAMP", expire_at=utcnow() - dt.timedelta(1))
    with pytest.raises(BadRequest, match="CONVERSATION"):
        grant(bob, "bob", "USER", str(bob["id"]), kind="UNTIL_CONVERSATION_END")
    with pytest.raises(NotFound, match="conversations"):  # a scope naming nothing of the workspace: 404
        grant(bob, "bob", "CONVERSATION", "nope")
    conversation(people["alice"]["id"], "alices")
    with pytest.raises(NotFound, match="conversations"):
        grant(bob, "bob", "CONVERSATION", "alices")
    with pytest.raises(NotFound, match="member"):
        grant(bob, "bob", "USER", str(people["dave"]["id"]))
    with pytest.raises(Forbidden):
        grant(bob, "bob", "USER", str(people["carol"]["id"]))
    with pytest.raises(Forbidden):
        grant(bob, "bob", "WORKSPACE", "1")
    with pytest.raises(NotFound, match="ruleId"):  # the stored rules decide, as a scope's do
        grant(bob, "bob", "USER", str(bob["id"]), rule_id="nope")


# ---- pending approvals ------------------------------------------------------------------------------

def _ask(user_id: Any, conversation_id: str = "c1") -> guard.Verdict:
    v = guard.evaluate("write_file", WRITE, ctx(user_id, conversation_id))
    assert v.decision == "ask"
    return v


async def test_a_pending_call_is_listed_and_only_its_owner_resolves_it(server: RunningServer, people: dict) -> None:
    alice, bob = int(people["alice"]["id"]), int(people["bob"]["id"])
    v = _ask(alice)
    p = guard.create_pending(ctx(alice), "call-1", "write_file", '{"path":"notes.txt"}', v, 42)
    assert p["status"] == "pending" and p["toolCallId"] == "call-1" and p["maxSeverity"] == "high"
    assert p["ruleId"] == "builtin.write_file" and p["arguments"] == '{"path":"notes.txt"}'
    assert [x["pendingId"] for x in guard.pending_for(alice, "c1")] == [p["pendingId"]]
    assert guard.pending_for(bob, "c1") == []
    assert guard.resolve_oldest(bob, "c1", "approved", bob) is None
    assert guard.resolve_oldest(alice, "c1", "approved", bob) is None  # the actor must be the owner
    done = guard.resolve_oldest(alice, "c1", "approved", alice)
    assert done is not None and done["status"] == "approved" and done["assistantMessageId"] == "42"
    assert guard.pending_for(alice, "c1") == []
    assert guard.resolve_oldest(alice, "c1", "denied", alice) is None
    (res,) = ApprovalResolution.select().where(ApprovalResolution.pending_id == int(p["pendingId"]))
    assert (res.decision, res.source, res.actor_user_id, res.tool_name) == ("approved", "manual", alice, "write_file")


async def test_the_oldest_pending_call_resolves_first_and_stop_denies_the_rest(server: RunningServer,
                                                                              people: dict) -> None:
    alice = int(people["alice"]["id"])
    t0 = utcnow()
    first = guard.create_pending(ctx(alice), "a", "write_file", "{}", _ask(alice), 1, now=t0)
    second = guard.create_pending(ctx(alice), "b", "write_file", "{}", _ask(alice), 2, now=t0 + dt.timedelta(seconds=1))
    third = guard.create_pending(ctx(alice), "c", "write_file", "{}", _ask(alice), 3, now=t0 + dt.timedelta(seconds=2))
    denied = guard.resolve_oldest(alice, "c1", "denied", alice, now=t0 + dt.timedelta(seconds=3))
    assert denied is not None and denied["pendingId"] == first["pendingId"] and denied["status"] == "denied"
    assert guard.deny_all_pending(alice, "c1", alice, "stopped") == 2
    assert guard.pending_for(alice, "c1") == []
    sources = {r.pending_id: (r.decision, r.source) for r in ApprovalResolution.select()}
    assert sources[int(second["pendingId"])] == ("denied", "stop")
    assert sources[int(third["pendingId"])] == ("denied", "stop")


async def test_a_pending_call_expires_after_the_configured_time(server: RunningServer, people: dict) -> None:
    alice = int(people["alice"]["id"])
    t0 = utcnow()
    p = guard.create_pending(ctx(alice), "a", "write_file", "{}", _ask(alice), 1, now=t0, expiry_s=60)
    assert p["expiresAt"] is not None
    assert len(guard.pending_for(alice, "c1", now=t0 + dt.timedelta(seconds=59))) == 1
    assert guard.pending_for(alice, "c1", now=t0 + dt.timedelta(seconds=61)) == []
    assert guard.resolve_oldest(alice, "c1", "approved", alice, now=t0 + dt.timedelta(seconds=62)) is None
    (res,) = ApprovalResolution.select()
    assert (res.decision, res.source, res.pending_id) == ("expired", "expiry", int(p["pendingId"]))


async def test_the_default_expiry_comes_from_config(server: RunningServer, people: dict) -> None:
    alice = int(people["alice"]["id"])
    p = guard.create_pending(ctx(alice), "a", "write_file", "{}", _ask(alice), 1)
    from platform_server.db import parse_iso

    span = parse_iso(p["expiresAt"]) - parse_iso(p["createTime"])
    assert span == dt.timedelta(seconds=server.config.approval_expiry_s)


# ---- HTTP level: grant routes ---------------------------------------------------------------------

GRANTS = "/api/v1/approval/grants"


async def test_grants_are_created_listed_summarized_and_revoked(api: ApiClient, people: dict) -> None:
    conversation(people["bob"]["id"], "c1")
    later = (utcnow() + dt.timedelta(hours=1)).isoformat() + "Z"
    r = await api.post(GRANTS, {"scopeType": "CONVERSATION", "scopeId": "c1", "toolName": "write_file",
                                "maxSeverity": "high", "grantKind": "UNTIL_CONVERSATION_END", "note": "ok"}, token="bob")
    assert r.status == 200, r.body
    g1 = r.data
    assert (g1["scopeType"], g1["scopeId"], g1["toolName"], g1["active"], g1["revoked"]) == (
        "CONVERSATION", "c1", "write_file", True, False)
    r = await api.post(GRANTS, {"scopeType": "USER", "scopeId": int(people["bob"]["id"]), "maxSeverity": "medium",
                                "grantKind": "UNTIL_TIMESTAMP", "expireAt": later}, token="bob")
    assert r.status == 200 and r.data["expireAt"].endswith("Z") and r.data["toolName"] is None
    r = await api.get(GRANTS, token="carol")
    assert r.status == 200 and r.data["total"] == 2 and r.data["records"][0]["grantKind"] == "UNTIL_TIMESTAMP"
    r = await api.get(GRANTS, params={"size": "1", "page": "2"}, token="bob")
    assert [g["id"] for g in r.data["records"]] == [g1["id"]] and r.data["pages"] == 2
    r = await api.get(GRANTS + "/active", token="bob")
    assert r.data["total"] == 2 and r.data["byScopeType"]["CONVERSATION"] == 1 and r.data["byKind"]["UNTIL_TIMESTAMP"] == 1
    assert (await api.delete(f"{GRANTS}/{g1['id']}", token="carol")).status == 403  # viewer
    r = await api.delete(f"{GRANTS}/{g1['id']}", token="bob")
    assert r.status == 200 and r.data["revoked"] is True and r.data["active"] is False
    r = await api.get(GRANTS, params={"active": "true"}, token="bob")
    assert r.data["total"] == 1
    assert (await api.get(GRANTS + "/active", token="bob")).data["total"] == 1
    assert (await api.delete(f"{GRANTS}/12345", token="bob")).status == 404
    events = await api.get("/api/v1/audit/events", params={"resourceType": "APPROVAL_GRANT"}, token="alice")
    assert sorted(e["action"] for e in events.data["records"]) == ["CREATE", "CREATE", "DELETE"]


async def test_grant_bodies_are_validated(api: ApiClient, people: dict) -> None:
    bob = int(people["bob"]["id"])
    base = {"scopeType": "USER", "scopeId": bob, "maxSeverity": "high", "grantKind": "ALWAYS"}

    async def bad(change: dict, field: str, status: int = 400, token: str = "bob") -> None:
        r = await api.post(GRANTS, {**base, **change}, token=token)
        assert r.status == status and (status != 400 or r.msg.startswith(field)), (change, r.body)

    await bad({"maxSeverity": "critical"}, "maxSeverity")
    await bad({"maxSeverity": "huge"}, "maxSeverity")
    await bad({"grantKind": "FOREVER"}, "grantKind")
    await bad({"scopeType": "TEAM"}, "scopeType")
    await bad({"grantKind": "UNTIL_TIMESTAMP"}, "expireAt")
    await bad({"grantKind": "UNTIL_TIMESTAMP", "expireAt": "2001-01-01T00:00:00Z"}, "expireAt", status=409)  # a past time
    await bad({"expireAt": "2999-01-01T00:00:00Z"}, "expireAt")  # the document: only UNTIL_TIMESTAMP has one
    await bad({"grantKind": "UNTIL_TIMESTAMP", "expireAt": "soon"}, "expireAt")
    await bad({"toolName": "write file"}, "toolName")
    # A well-formed id naming nothing in this workspace: 404, as documented
    await bad({"scopeType": "CONVERSATION", "scopeId": "unknown"}, "scopeId", status=404)
    await bad({"scopeType": "AGENT", "scopeId": "999"}, "scopeId", status=404)
    await bad({"scopeType": "USER", "scopeId": int(people["dave"]["id"])}, "scopeId", status=404)
    await bad({"scopeType": "WORKSPACE", "scopeId": 1}, "", status=403)
    await bad({}, "", status=403, token="carol")
    r = await api.post(GRANTS, {**base, "scopeType": "WORKSPACE", "scopeId": 1}, token="alice")
    assert r.status == 200
    r = await api.post(GRANTS, {**base, "scopeType": "WORKSPACE", "scopeId": 2}, token="alice")
    assert r.status == 404  # a well-formed id naming no workspace this request is in
    r = await api.post(GRANTS, {**base, "scopeType": "AGENT", "scopeId": "²"}, token="alice")
    assert r.status == 404 and r.msg.startswith("scopeId")  # any text is an id the document allows: it names nothing


async def test_dave_sees_none_of_workspace_one_s_grants(api: ApiClient, people: dict) -> None:
    r = await api.post(GRANTS, {"scopeType": "USER", "scopeId": int(people["bob"]["id"]), "maxSeverity": "high",
                                "grantKind": "ALWAYS"}, token="bob")
    gid = r.data["id"]
    dave_ws = people["dave"]["workspace"]
    r = await api.get(GRANTS, token="dave", workspace=dave_ws)
    assert r.status == 200 and r.data["total"] == 0
    assert (await api.get(GRANTS + "/active", token="dave", workspace=dave_ws)).data["total"] == 0
    assert (await api.delete(f"{GRANTS}/{gid}", token="dave", workspace=dave_ws)).status == 404
    assert (await api.get(GRANTS, token="dave")).status == 403  # not a member of workspace 1
    r = await api.post(GRANTS, {"scopeType": "USER", "scopeId": int(people["bob"]["id"]), "maxSeverity": "high",
                                "grantKind": "ALWAYS"}, token="dave", workspace=dave_ws)
    assert r.status == 404  # bob is not in dave's workspace


async def test_resolutions_are_filtered_by_grant_and_conversation(api: ApiClient, people: dict) -> None:
    bob, alice = int(people["bob"]["id"]), int(people["alice"]["id"])
    conversation(bob, "c1")
    r = await api.post(GRANTS, {"scopeType": "CONVERSATION", "scopeId": "c1", "maxSeverity": "high",
                                "grantKind": "ALWAYS"}, token="bob")
    gid = r.data["id"]
    guard.evaluate("write_file", WRITE, ctx(bob, "c1"))
    p = guard.create_pending(ctx(alice, "a1"), "x", "write_file", "{}", _ask(alice, "a1"), None)
    guard.resolve_oldest(alice, "a1", "denied", alice)
    r = await api.get("/api/v1/approval/resolutions", params={"grantId": gid}, token="bob")
    (res,) = r.data["records"]
    assert (res["grantId"], res["decision"], res["source"], res["conversationId"]) == (gid, "approved", "grant", "c1")
    r = await api.get("/api/v1/approval/resolutions", params={"conversationId": "a1"}, token="alice")
    (res,) = r.data["records"]
    assert (res["pendingId"], res["decision"], res["source"]) == (p["pendingId"], "denied", "manual")
    assert (await api.get("/api/v1/approval/resolutions", token="alice")).data["total"] == 2
    assert (await api.get("/api/v1/approval/resolutions", token="bob")).data["total"] == 1  # own only
    r = await api.get("/api/v1/approval/resolutions", token="dave", workspace=people["dave"]["workspace"])
    assert r.data["total"] == 0
    assert (await api.get("/api/v1/approval/resolutions", params={"grantId": "x"}, token="bob")).status == 400


async def test_an_agents_creator_cannot_auto_approve_other_users_calls_with_a_wildcard_grant(env: Any) -> None:
    from tests.helpers.chat import make_agent
    from tests.helpers.fake_openai import Script, ScriptedToolCall

    agent = await make_agent(env.api, token="bob", name="Bob's helper")
    wildcard = {"scopeType": "AGENT", "scopeId": agent, "maxSeverity": "high", "grantKind": "ALWAYS"}
    r = await env.api.post("/api/v1/approval/grants", wildcard, token="bob")
    assert r.status == 403 and r.body["code"] == 403 and "admin" in r.body["msg"], r.body
    # made while bob was a workspace admin: it stops covering others' calls when he is not one any more
    member = f"/api/v1/workspaces/1/members/{env.people['bob']['id']}"
    assert (await env.api.put(member, {"role": "admin"}, token="alice")).status == 200
    assert (await env.api.post("/api/v1/approval/grants", wildcard, token="bob")).status == 200
    assert (await env.api.put(member, {"role": "member"}, token="alice")).status == 200

    def write(name: str) -> Script:
        return Script(tool_calls=[ScriptedToolCall("write_file", {"path": name, "content": "x"})])

    env.llm.enqueue(write("alice.txt"))
    events = await env.stream("write", token="alice", conversation_id="a1", agentId=agent)
    assert "tool_approval_requested" in [e.event for e in events]  # the global admin's call still asks
    env.llm.enqueue(write("bob.txt"), Script(text="done"))
    events = await env.stream("write", token="bob", conversation_id="b1", agentId=agent)
    done = next(e.data for e in events if e.event == "tool_call_completed")
    assert done["success"] is True  # its creator's own calls stay covered


async def test_a_grant_names_who_or_what_it_covers_and_who_made_it(server: RunningServer, api: ApiClient, people: dict) -> None:
    bob = people["bob"]
    conv = conversation(bob["id"], "c-names")
    conv.title = "Trip plan"
    conv.save()
    made = [grant(bob, "bob", "USER", str(bob["id"])), grant(bob, "bob", "CONVERSATION", "c-names")]
    names = {g["scopeType"]: (g["scopeName"], g["createdByName"]) for g in made}
    person = bob.get("nickname") or "bob"
    assert names == {"USER": (person, person), "CONVERSATION": ("Trip plan", person)}, names
    listed = (await api.get("/api/v1/approval/grants", token="bob")).data["records"]
    assert {g["scopeName"] for g in listed} == {person, "Trip plan"}  # the list shows names, not raw ids
