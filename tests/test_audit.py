"""Audit events: written for every create, update and delete; filtered, paged and workspace-scoped."""
from __future__ import annotations

from typing import Any

from platform_server.features.audit.models import AuditEvent
from tests.helpers.client import ApiClient
from tests.helpers.server import PASSWORD

EVENTS = "/api/v1/audit/events"


async def all_events(api: ApiClient, token: str = "alice", workspace: Any = None, **params: Any) -> list[dict]:
    res = await api.get(EVENTS, token=token, workspace=workspace, params={"size": 100, **params})
    assert res.status == 200, res.body
    return res.data["records"]


def keyed(events: list[dict]) -> set[tuple[str, str, str | None]]:
    return {(e["action"], e["resourceType"], e["resourceId"]) for e in events}


async def test_creates_updates_and_deletes_write_audit_events_with_actor_and_detail(api: ApiClient, people: dict) -> None:
    ws = (await api.post("/api/v1/workspaces", {"name": "Audited"}, token="bob")).data["id"]
    bob_id, carol_id = people["bob"]["id"], people["carol"]["id"]
    await api.put(f"/api/v1/workspaces/{ws}", {"name": "Audited 2"}, token="bob")
    await api.post(f"/api/v1/workspaces/{ws}/members", {"userId": carol_id, "role": "viewer"}, token="bob")
    await api.put(f"/api/v1/workspaces/{ws}/members/{carol_id}", {"role": "member"}, token="bob")
    await api.delete(f"/api/v1/workspaces/{ws}/members/{carol_id}", token="bob")
    events = await all_events(api, token="bob", workspace=ws)
    assert keyed(events) == {
        ("CREATE", "WORKSPACE", ws), ("UPDATE", "WORKSPACE", ws), ("CREATE", "WORKSPACE_MEMBER", carol_id),
        ("UPDATE", "WORKSPACE_MEMBER", carol_id), ("DELETE", "WORKSPACE_MEMBER", carol_id),
    }
    for e in events:
        assert e["workspaceId"] == ws and e["actorUserId"] == bob_id and e["actorUsername"] == "bob"
        assert e["detail"] and e["createTime"].endswith("Z") and e["id"].isdigit()
    assert [e["action"] for e in events][0] == "DELETE"  # newest first

    await api.delete(f"/api/v1/workspaces/{ws}", token="bob")
    assert ("DELETE", "WORKSPACE", ws) in keyed(await all_events(api, workspace=ws))


async def test_users_tokens_passwords_settings_and_flags_are_audited_in_workspace_1(api: ApiClient, people: dict) -> None:
    token = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="alice")).data
    await api.delete(f"/api/v1/auth/tokens/{token['id']}", token="alice")
    await api.put(f"/api/v1/auth/users/{people['bob']['id']}/password", token="bob",
                  params={"oldPassword": PASSWORD, "newPassword": "another-pass"})
    await api.put("/api/v1/settings", {"siteName": "Ours"}, token="alice")
    await api.put("/api/v1/feature-flags/dreaming", {"enabled": True}, token="alice")
    events = await all_events(api)
    got = keyed(events)
    for name in ("alice", "bob", "carol", "dave"):
        assert ("CREATE", "USER", people[name]["id"]) in got
    assert {("CREATE", "TOKEN", token["id"]), ("DELETE", "TOKEN", token["id"]),
            ("UPDATE", "USER", people["bob"]["id"]), ("UPDATE", "SETTINGS", None),
            ("UPDATE", "FEATURE_FLAG", "dreaming")} <= got
    password = next(e for e in events if e["resourceType"] == "USER" and e["action"] == "UPDATE")
    assert password["actorUsername"] == "bob" and "password" in password["detail"]
    setup = next(e for e in events if e["resourceId"] == people["alice"]["id"])
    assert setup["actorUserId"] is None  # first-run setup has no actor yet


async def test_a_callers_user_level_events_never_land_in_a_workspace_they_do_not_belong_to(api: ApiClient, people: dict) -> None:
    dave_ws = people["dave"]["workspace"]
    first = (await api.post("/api/v1/auth/tokens", {"name": "no header"}, token="dave")).data
    second = (await api.post("/api/v1/auth/tokens", {"name": "own"}, token="dave", workspace=dave_ws)).data
    ws1 = keyed(await all_events(api))
    assert ("CREATE", "TOKEN", first["id"]) not in ws1 and ("CREATE", "TOKEN", second["id"]) not in ws1
    assert ("CREATE", "TOKEN", second["id"]) in keyed(await all_events(api, token="dave", workspace=dave_ws))
    assert AuditEvent.get(AuditEvent.resource_id == first["id"]).actor_username == "dave"


async def test_events_filter_by_action_and_resource_type(api: ApiClient, people: dict) -> None:
    await api.put(f"/api/v1/workspaces/1/members/{people['bob']['id']}", {"role": "admin"}, token="alice")
    creates = await all_events(api, action="CREATE")
    assert creates and {e["action"] for e in creates} == {"CREATE"}
    assert await all_events(api, action="create") == creates
    members = await all_events(api, resourceType="WORKSPACE_MEMBER")
    assert {(e["action"], e["resourceId"]) for e in members} == {
        ("UPDATE", people["carol"]["id"]), ("DELETE", people["dave"]["id"]), ("UPDATE", people["bob"]["id"])}
    both = await all_events(api, action="UPDATE", resourceType="workspace_member")
    assert {e["resourceId"] for e in both} == {people["carol"]["id"], people["bob"]["id"]}
    assert await all_events(api, action="ARCHIVE") == []


async def test_events_filter_by_start_and_end_time(api: ApiClient, people: dict) -> None:
    events = list(reversed(await all_events(api)))  # oldest first
    assert len(events) >= 5
    times = [e["createTime"] for e in events]
    middle = times[len(times) // 2]
    after = await all_events(api, startTime=middle)
    assert after and all(e["createTime"] >= middle for e in after)
    assert {e["id"] for e in after} == {e["id"] for e in events if e["createTime"] >= middle}
    before = await all_events(api, endTime=middle)
    assert {e["id"] for e in before} == {e["id"] for e in events if e["createTime"] <= middle}
    window = await all_events(api, startTime=middle, endTime=middle)
    assert window and all(e["createTime"] == middle for e in window)
    assert await all_events(api, startTime="2999-01-01T00:00:00Z") == []
    assert len(await all_events(api, endTime="2999-01-01T00:00:00+02:00")) == len(events)
    res = await api.get(EVENTS, token="alice", params={"startTime": "yesterday"})
    assert res.status == 400 and res.msg.startswith("Invalid value for parameter 'startTime': expected an RFC 3339 date-time")


async def test_the_time_filters_take_every_rfc_3339_form_the_document_allows_and_nothing_else(api: ApiClient, people: dict) -> None:
    """`format: date-time` is RFC 3339: lower-case t and z, any fraction, a leap second, offsets up to 23:59 even
    where they move the time past year 1 or 9999; no offset, a bare date or an empty value is not one."""
    events = await all_events(api)
    for value in ("2000-01-01t00:00:00z", "2000-01-01T00:00:00.1234567+05:30", "2016-12-31T23:59:60Z", "0001-01-01T00:00:00+23:59"):
        assert len(await all_events(api, endTime=value)) == 0, value
    for value in ("9999-12-31T23:59:59.999999-23:59", "2999-01-01T00:00:00-00:00"):
        assert len(await all_events(api, endTime=value)) == len(events), value
    for value in ("2000-01-01T00:00:00", "2000-01-01", "", " 2000-01-01T00:00:00Z", "2000-02-30T00:00:00Z"):
        res = await api.get(EVENTS, token="alice", params={"endTime": value})
        assert res.status == 400 and res.msg.startswith("Invalid value for parameter 'endTime'"), value
    res = await api.get("/api/v1/token-usage", token="alice", params={"startTime": "0001-01-01T00:00:00+23:59", "endTime": "9999-12-31T23:59:59Z"})
    assert res.status == 200, res.body
    for params in ({"endTime": ""}, {"groupBy": ""}):
        assert (await api.get("/api/v1/token-usage", token="alice", params=params)).status == 400, params
    for params in ({"page": ""}, {"size": ""}):  # integers, so empty is not "the default" (schemathesis' empty object)
        res = await api.get(EVENTS, token="alice", params=params)
        assert res.status == 400 and "expected Integer" in res.msg, (params, res.body)


async def test_events_are_paged_with_defaults_a_size_clamp_and_400_below_1(api: ApiClient, people: dict) -> None:
    for i in range(3):
        await api.post("/api/v1/workspaces", {"name": f"w{i}"}, token="alice", workspace=1)
    total = (await api.get(EVENTS, token="alice")).data["total"]
    res = await api.get(EVENTS, token="alice")
    assert res.data["size"] == 20 and res.data["current"] == 1
    assert set(res.data) == {"records", "total", "size", "current", "pages"}
    page1 = (await api.get(EVENTS, token="alice", params={"page": 1, "size": 2})).data
    page2 = (await api.get(EVENTS, token="alice", params={"page": 2, "size": 2})).data
    assert len(page1["records"]) == 2 and page1["total"] == total and page1["pages"] == -(-total // 2)
    assert page2["current"] == 2 and not {e["id"] for e in page1["records"]} & {e["id"] for e in page2["records"]}
    beyond = (await api.get(EVENTS, token="alice", params={"page": 999, "size": 2})).data
    assert beyond["records"] == [] and beyond["total"] == total
    assert (await api.get(EVENTS, token="alice", params={"size": 1000})).data["size"] == 100
    for params in ({"page": 0}, {"size": 0}, {"page": -1}):
        res = await api.get(EVENTS, token="alice", params=params)
        assert res.status == 400 and res.body["code"] == 400, params
    res = await api.get(EVENTS, token="alice", params={"page": "abc"})
    assert res.status == 400 and "page" in res.msg


async def test_events_need_workspace_admin(api: ApiClient, people: dict) -> None:
    assert (await api.get(EVENTS)).status == 401
    for name in ("bob", "carol"):
        res = await api.get(EVENTS, token=name)
        assert res.status == 403 and res.body["code"] == 403
    await api.put(f"/api/v1/workspaces/1/members/{people['bob']['id']}", {"role": "admin"}, token="alice")
    assert (await api.get(EVENTS, token="bob")).status == 200


async def test_an_absent_or_unparseable_workspace_header_means_workspace_1(api: ApiClient, people: dict) -> None:
    dave_ws = people["dave"]["workspace"]
    ws1 = await all_events(api, workspace=1)
    assert ws1 and {e["workspaceId"] for e in ws1} == {"1"}
    for header in (None, "", "abc", "-3", "1.5", "0", "99999999999999999999999"):
        assert await all_events(api, workspace=header) == ws1, header
    other = await all_events(api, workspace=dave_ws)
    assert other and {e["workspaceId"] for e in other} == {dave_ws}
    assert (await api.get(EVENTS, token="dave", workspace=f" {dave_ws} ")).status == 200


async def test_events_filter_by_actor_name_or_id_and_by_resource_id(api: ApiClient, people: dict) -> None:
    await api.put(f"/api/v1/workspaces/1/members/{people['carol']['id']}", {"role": "member"}, token="alice")
    await api.post("/api/v1/agents", {"name": "Bob's"}, token="bob")
    by_bob = await all_events(api, actor="bob")
    assert by_bob and {e["actorUsername"] for e in by_bob} == {"bob"}
    assert await all_events(api, actor=people["bob"]["id"]) == by_bob
    assert await all_events(api, actor="nobody") == []
    assert await all_events(api, actor="9" * 40) == []  # a long number is a name, not an id
    carol = await all_events(api, resourceType="WORKSPACE_MEMBER", resourceId=people["carol"]["id"])
    assert carol and {e["resourceId"] for e in carol} == {people["carol"]["id"]}
