"""Security views over real guard data: approvals, tool-call logs and stats, the activity feed and badges."""
from __future__ import annotations

import datetime as dt
from typing import Any

from platform_server.db import utcnow
from platform_server.features.guard import service as guard
from tests.helpers.client import ApiClient
from tests.helpers.guard import conversation, ctx

WRITE = {"path": "notes.txt", "content": "hello"}


def call(user_id: Any, tool: str, success: bool = True, ms: int = 10, conversation_id: str = "c1",
         workspace_id: int = 1, args: dict | None = None) -> guard.Verdict:
    c = ctx(user_id, conversation_id, workspace_id=workspace_id)
    v = guard.evaluate(tool, args or {}, c)
    guard.record_tool_call(c, tool, "{}", v, success, ms, "ok" if success else "boom")
    return v


async def test_tool_calls_are_logged_filtered_and_counted(api: ApiClient, people: dict) -> None:
    bob = int(people["bob"]["id"])
    call(bob, "get_current_time", ms=10)
    call(bob, "read_file", ms=30, args={"path": "a.txt"})
    call(bob, "read_file", success=False, ms=50, args={"path": ".env"})
    r = await api.get("/api/v1/security/audit/logs", token="alice")
    assert r.status == 200 and r.data["total"] == 3
    newest = r.data["records"][0]
    assert (newest["toolName"], newest["decision"], newest["severity"], newest["success"], newest["durationMs"]) == (
        "read_file", "deny", "critical", False, 50)
    assert newest["ruleId"] == "file-guard" and newest["resultPreview"] == "boom"
    r = await api.get("/api/v1/security/audit/logs", params={"toolName": "read_file", "decision": "allow"}, token="alice")
    assert [x["durationMs"] for x in r.data["records"]] == [30]
    r = await api.get("/api/v1/security/audit/logs", params={"success": "false"}, token="alice")
    assert r.data["total"] == 1
    s = (await api.get("/api/v1/security/audit/stats", token="alice")).data
    assert s["total"] == 3 and s["failed"] == 1 and s["avgDurationMs"] == 30.0
    assert s["byDecision"] == {"allow": 2, "ask": 0, "deny": 1}
    assert s["byTool"] == {"get_current_time": 1, "read_file": 2}
    assert s["bySeverity"] == {"low": 2, "medium": 0, "high": 0, "critical": 1}
    assert (await api.get("/api/v1/security/audit/stats", params={"days": "0"}, token="alice")).status == 400
    assert (await api.get("/api/v1/security/audit/logs", token="bob")).status == 403
    assert (await api.get("/api/v1/security/audit/stats", token="carol")).status == 403


async def test_dave_sees_none_of_workspace_one_s_logs(api: ApiClient, people: dict) -> None:
    call(int(people["bob"]["id"]), "get_current_time")
    dave_ws = people["dave"]["workspace"]
    for path in ("/api/v1/security/audit/logs", "/api/v1/security/approvals", "/api/v1/activity/feed"):
        r = await api.get(path, token="dave", workspace=dave_ws)
        assert r.status == 200 and all(x.get("kind") == "audit" for x in r.data["records"]), path
        assert not any(x.get("kind") == "tool_call" for x in r.data["records"])
    s = (await api.get("/api/v1/security/audit/stats", token="dave", workspace=dave_ws)).data
    assert s["total"] == 0 and s["byTool"] == {}
    assert (await api.get("/api/v1/security/audit/logs", token="dave")).status == 403


async def test_the_approvals_view_lists_records_with_their_status(api: ApiClient, people: dict) -> None:
    alice = int(people["alice"]["id"])
    v = guard.evaluate("write_file", WRITE, ctx(alice))
    t0 = utcnow() - dt.timedelta(hours=1)
    guard.create_pending(ctx(alice), "old", "write_file", "{}", v, None, now=t0, expiry_s=60)
    guard.create_pending(ctx(alice), "a", "write_file", "{}", v, None)
    guard.create_pending(ctx(alice, "c2"), "b", "write_file", "{}", v, None)
    guard.resolve_oldest(alice, "c2", "approved", alice)
    r = await api.get("/api/v1/security/approvals", token="alice")
    assert r.status == 200 and r.data["total"] == 3
    assert sorted(x["status"] for x in r.data["records"]) == ["approved", "expired", "pending"]
    r = await api.get("/api/v1/security/approvals", params={"status": "pending"}, token="alice")
    assert [x["toolCallId"] for x in r.data["records"]] == ["a"]
    assert (await api.get("/api/v1/security/approvals", params={"status": "odd"}, token="alice")).status == 400
    # the status is the document's enum (it was a free string): empty is none of it
    assert (await api.get("/api/v1/security/approvals", params={"status": ""}, token="alice")).status == 400
    doc = (await api.get("/v3/api-docs")).body["paths"]["/api/v1/security/approvals"]["get"]["parameters"]
    assert next(p for p in doc if p["name"] == "status")["schema"]["enum"] == ["pending", "approved", "denied", "expired"]
    assert (await api.get("/api/v1/security/approvals", token="bob")).status == 403


async def test_pending_approvals_of_a_conversation_are_for_its_owner_only(api: ApiClient, people: dict) -> None:
    alice = int(people["alice"]["id"])
    conversation(alice, "c1")
    v = guard.evaluate("write_file", WRITE, ctx(alice))
    p = guard.create_pending(ctx(alice), "call-1", "write_file", '{"path":"notes.txt"}', v, 7)
    r = await api.get("/api/v1/chat/c1/pending-approvals", token="alice")
    assert r.status == 200
    (item,) = r.data
    assert {k: item[k] for k in ("pendingId", "toolName", "arguments", "maxSeverity", "status")} == {
        "pendingId": p["pendingId"], "toolName": "write_file", "arguments": '{"path":"notes.txt"}',
        "maxSeverity": "high", "status": "pending"}
    assert (await api.get("/api/v1/chat/c1/pending-approvals", token="bob")).status == 403
    r = await api.get("/api/v1/chat/unknown/pending-approvals", token="bob")
    assert r.status == 200 and r.data == []
    r = await api.get("/api/v1/chat/default/pending-approvals", token="carol")
    assert r.status == 200 and r.data == []


async def test_the_activity_feed_merges_audit_approvals_and_tool_calls_newest_first(api: ApiClient,
                                                                                   people: dict) -> None:
    bob, alice = int(people["bob"]["id"]), int(people["alice"]["id"])
    await api.post("/api/v1/agents", {"name": "Feed"}, token="bob")  # an audit event by bob
    call(bob, "get_current_time")
    v = guard.evaluate("write_file", WRITE, ctx(alice))
    guard.create_pending(ctx(alice), "x", "write_file", "{}", v, None)
    guard.resolve_oldest(alice, "c1", "denied", alice)
    r = await api.get("/api/v1/activity/feed", params={"size": "3"}, token="alice")
    assert r.status == 200
    assert [x["kind"] for x in r.data["records"]] == ["approval", "tool_call", "audit"]
    approval, tool_call, audit = r.data["records"]
    assert approval["summary"] == "write_file denied by the owner" and approval["data"]["decision"] == "denied"
    assert tool_call["data"]["toolName"] == "get_current_time" and "succeeded" in tool_call["summary"]
    assert audit["data"]["resourceType"] == "AGENT" and audit["time"].endswith("Z")
    times = [x["time"] for x in (await api.get("/api/v1/activity/feed", params={"size": "100"}, token="alice")).data["records"]]
    assert times == sorted(times, reverse=True)
    r = await api.get("/api/v1/activity/feed", params={"kind": "tool_call"}, token="alice")
    assert r.data["total"] == 1
    mine = await api.get("/api/v1/activity/feed", params={"size": "100"}, token="bob")
    assert {x["kind"] for x in mine.data["records"]} == {"audit", "tool_call"}  # not alice's approval
    assert all(x["data"].get("actorUserId", str(bob)) == str(bob) for x in mine.data["records"])
    assert (await api.get("/api/v1/activity/feed", params={"kind": "nope"}, token="bob")).status == 400


async def test_the_notification_summary_counts_real_data(api: ApiClient, people: dict) -> None:
    alice, bob = int(people["alice"]["id"]), int(people["bob"]["id"])
    v = guard.evaluate("write_file", WRITE, ctx(alice))
    guard.create_pending(ctx(alice), "a", "write_file", "{}", v, None)
    guard.create_pending(ctx(bob), "b", "write_file", "{}", v, None)
    call(bob, "read_file", success=False, args={"path": "x"})
    call(alice, "read_file", success=False, args={"path": "y"})
    await api.post("/api/v1/approval/grants", {"scopeType": "USER", "scopeId": bob, "maxSeverity": "high",
                                               "grantKind": "ALWAYS"}, token="bob")
    s = (await api.get("/api/v1/notifications/summary", token="alice")).data
    assert s["pendingApprovals"] == 1 and s["workspacePendingApprovals"] == 2
    assert s["failedToolCalls24h"] == 2 and s["activeGrants"] == 1
    s = (await api.get("/api/v1/notifications/summary", token="bob")).data
    assert s["pendingApprovals"] == 1 and s["failedToolCalls24h"] == 1 and s["workspacePendingApprovals"] is None
    s = (await api.get("/api/v1/notifications/summary", token="dave", workspace=people["dave"]["workspace"])).data
    assert s["pendingApprovals"] == 0 and s["failedToolCalls24h"] == 0 and s["activeGrants"] == 0
