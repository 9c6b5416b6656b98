"""Grants and pending approvals at the service level, and the grant routes over HTTP."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from platform_server.db import utcnow
from platform_server.features.guard import grants
from platform_server.features.guard import service as guard
from platform_server.features.guard.models import ApprovalResolution, GuardRule
from platform_server.web.errors import BadRequest, Forbidden
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
    with pytest.raises(BadRequest, match="future"):
        grant(bob, "bob", "USER", str(bob["id"]), kind="UNTIL_TIMESTAMP", expire_at=utcnow() - dt.timedelta(1))
    with pytest.raises(BadRequest, match="CONVERSATION"):
        grant(bob, "bob", "USER", str(bob["id"]), kind="UNTIL_CONVERSATION_END")
    with pytest.raises(BadRequest, match="conversations"):
        grant(bob, "bob", "CONVERSATION", "nope")
    conversation(people["alice"]["id"], "alices")
    with pytest.raises(BadRequest, match="conversations"):
        grant(bob, "bob", "CONVERSATION", "alices")
    with pytest.raises(BadRequest, match="member"):
        grant(bob, "bob", "USER", str(people["dave"]["id"]))
    with pytest.raises(Forbidden):
        grant(bob, "bob", "USER", str(people["carol"]["id"]))
    with pytest.raises(Forbidden):
        grant(bob, "bob", "WORKSPACE", "1")
    with pytest.raises(BadRequest, match="ruleId"):
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
