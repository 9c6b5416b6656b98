"""Workspace roles (owner > admin > member > viewer, global admin as owner) on all ten routes."""
from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.server import PASSWORD, login

Team = dict[str, Any]


@pytest.fixture
async def team(api: ApiClient, people: dict) -> Team:
    """Workspace "Team" owned by dave (not a global admin): erin admin, bob member, carol viewer.

    frank is a plain user outside it; alice is the global admin and no member of it.
    """
    for name in ("erin", "frank"):
        res = await api.post("/api/v1/auth/users", {"username": name, "password": PASSWORD}, token="alice")
        people[name] = {"id": res.data["id"]}
        await login(api, name)
    res = await api.post("/api/v1/workspaces", {"name": "Team", "description": "team work"}, token="dave")
    assert res.status == 200 and res.data["memberRole"] == "owner"
    ws = res.data["id"]
    for name, role in (("erin", "admin"), ("bob", "member"), ("carol", "viewer")):
        res = await api.post(f"/api/v1/workspaces/{ws}/members", {"userId": people[name]["id"], "role": role}, token="dave")
        assert res.status == 200, res.body
    return {"ws": ws, "ids": {n: p["id"] for n, p in people.items()}}


def forbidden(res: Any) -> bool:
    return res.status == 403 and res.body["code"] == 403 and isinstance(res.msg, str) and res.data is None


async def test_anyone_logged_in_creates_a_workspace_and_becomes_its_owner(api: ApiClient, people: dict) -> None:
    res = await api.post("/api/v1/workspaces", {"name": "Carol's", "description": "mine"}, token="carol")
    assert res.status == 200
    data = res.data
    assert data["name"] == "Carol's" and data["description"] == "mine"
    assert data["memberRole"] == data["effectiveRole"] == "owner" and data["creatorUserId"] == people["carol"]["id"]
    listed = (await api.get("/api/v1/workspaces", token="carol")).data
    assert {(w["name"], w["memberRole"], w["effectiveRole"]) for w in listed} == {
        ("Default", "viewer", "viewer"), ("Carol's", "owner", "owner")}
    assert (await api.post("/api/v1/workspaces", {"name": ""}, token="carol")).status == 400
    assert (await api.post("/api/v1/workspaces", {"name": "x"})).status == 401


async def test_the_workspace_list_shows_member_and_effective_roles(api: ApiClient, team: Team) -> None:
    ws = team["ws"]
    expected = {"dave": "owner", "erin": "admin", "bob": "member", "carol": "viewer"}
    for name, role in expected.items():
        rows = {w["id"]: w for w in (await api.get("/api/v1/workspaces", token=name)).data}
        assert rows[ws]["memberRole"] == rows[ws]["effectiveRole"] == role
    frank = (await api.get("/api/v1/workspaces", token="frank")).data
    assert [w["id"] for w in frank] == ["1"]
    alice = {w["id"]: w for w in (await api.get("/api/v1/workspaces", token="alice")).data}
    assert alice[ws]["memberRole"] is None and alice[ws]["effectiveRole"] == "owner"
    assert alice["1"]["memberRole"] == "owner"


async def test_reading_a_workspace_and_its_members_needs_viewer(api: ApiClient, team: Team) -> None:
    ws = team["ws"]
    for name in ("carol", "bob", "erin", "dave", "alice"):
        res = await api.get(f"/api/v1/workspaces/{ws}", token=name)
        assert res.status == 200 and res.data["name"] == "Team" and res.data["memberCount"] == 4
        members = await api.get(f"/api/v1/workspaces/{ws}/members", token=name)
        assert members.status == 200
        assert {m["username"]: m["role"] for m in members.data} == {
            "dave": "owner", "erin": "admin", "bob": "member", "carol": "viewer"}
    assert forbidden(await api.get(f"/api/v1/workspaces/{ws}", token="frank"))
    assert forbidden(await api.get(f"/api/v1/workspaces/{ws}/members", token="frank"))
    assert (await api.get("/api/v1/workspaces/424242", token="alice")).status == 404


async def test_updating_a_workspace_needs_admin(api: ApiClient, team: Team) -> None:
    ws = team["ws"]
    for name in ("carol", "bob", "frank"):
        assert forbidden(await api.put(f"/api/v1/workspaces/{ws}", {"name": "Hacked"}, token=name))
    res = await api.put(f"/api/v1/workspaces/{ws}", {"description": "by erin"}, token="erin")
    assert res.status == 200 and res.data["name"] == "Team" and res.data["description"] == "by erin"
    res = await api.put(f"/api/v1/workspaces/{ws}", {"name": "Team 2"}, token="alice")
    assert res.status == 200 and res.data["name"] == "Team 2"
    assert (await api.put(f"/api/v1/workspaces/{ws}", {"name": ""}, token="dave")).status == 400
    assert (await api.get(f"/api/v1/workspaces/{ws}", token="bob")).data["name"] == "Team 2"


async def test_deleting_a_workspace_needs_owner_and_workspace_1_stays(api: ApiClient, team: Team) -> None:
    ws = team["ws"]
    for name in ("carol", "bob", "erin", "frank"):
        assert forbidden(await api.delete(f"/api/v1/workspaces/{ws}", token=name))
    assert (await api.get(f"/api/v1/workspaces/{ws}", token="dave")).status == 200
    res = await api.delete(f"/api/v1/workspaces/{ws}", token="dave")
    assert res.status == 200
    assert (await api.get(f"/api/v1/workspaces/{ws}", token="dave")).status == 404
    assert ws not in [w["id"] for w in (await api.get("/api/v1/workspaces", token="bob")).data]
    other = (await api.post("/api/v1/workspaces", {"name": "Temp"}, token="bob")).data["id"]
    assert (await api.delete(f"/api/v1/workspaces/{other}", token="alice")).status == 200
    res = await api.delete("/api/v1/workspaces/1", token="alice")
    assert res.status == 409 and res.msg == "The default workspace cannot be deleted"  # a state conflict
    assert (await api.get("/api/v1/workspaces/1", token="alice")).status == 200


async def test_the_access_route_describes_each_role(api: ApiClient, team: Team) -> None:
    ws = team["ws"]
    expected = {
        "frank": (None, None, False, False, False, False),
        "carol": ("viewer", "viewer", True, False, False, False),
        "bob": ("member", "member", True, True, False, False),
        "erin": ("admin", "admin", True, True, True, False),
        "dave": ("owner", "owner", True, True, True, True),
        "alice": (None, "owner", True, True, True, True),
    }
    for name, values in expected.items():
        res = await api.get(f"/api/v1/workspaces/{ws}/access", token=name)
        assert res.status == 200
        d = res.data
        got = (d["memberRole"], d["effectiveRole"], d["canRead"], d["canWrite"], d["canManage"], d["canDelete"])
        assert got == values, name
        assert d["globalAdmin"] is (name == "alice") and d["workspaceId"] == ws
    assert (await api.get("/api/v1/workspaces/424242/access", token="bob")).status == 404


async def test_adding_members_needs_admin_and_only_an_owner_grants_owner(api: ApiClient, team: Team) -> None:
    ws, ids = team["ws"], team["ids"]
    for name in ("carol", "bob", "frank"):
        assert forbidden(await api.post(f"/api/v1/workspaces/{ws}/members",
                                        {"userId": ids["frank"], "role": "viewer"}, token=name))
    res = await api.post(f"/api/v1/workspaces/{ws}/members", {"userId": ids["frank"], "role": "owner"}, token="erin")
    assert forbidden(res)
    res = await api.post(f"/api/v1/workspaces/{ws}/members", {"userId": ids["frank"], "role": "admin"}, token="erin")
    assert res.status == 200 and res.data == {"userId": ids["frank"], "username": "frank", "role": "admin"}
    res = await api.post(f"/api/v1/workspaces/{ws}/members", {"userId": ids["frank"], "role": "viewer"}, token="erin")
    assert res.status == 409 and res.msg == "userId: already a member of this workspace"  # the workspace's state
    res = await api.post(f"/api/v1/workspaces/{ws}/members", {"userId": ids["alice"], "role": "owner"}, token="dave")
    assert res.status == 200 and res.data["role"] == "owner"
    res = await api.post(f"/api/v1/workspaces/{ws}/members", {"userId": "424242", "role": "viewer"}, token="dave")
    assert res.status == 404
    res = await api.post(f"/api/v1/workspaces/{ws}/members", {"userId": ids["frank"], "role": "king"}, token="dave")
    assert res.status == 400 and res.msg.startswith("role: ")


async def test_changing_roles_needs_admin_and_an_admin_cannot_touch_owners(api: ApiClient, team: Team) -> None:
    ws, ids = team["ws"], team["ids"]
    base = f"/api/v1/workspaces/{ws}/members"
    for name in ("carol", "bob", "frank"):
        assert forbidden(await api.put(f"{base}/{ids['carol']}", {"role": "member"}, token=name))
    res = await api.put(f"{base}/{ids['carol']}", {"role": "member"}, token="erin")
    assert res.status == 200 and res.data == {"userId": ids["carol"], "role": "member"}
    assert forbidden(await api.put(f"{base}/{ids['bob']}", {"role": "owner"}, token="erin"))
    assert forbidden(await api.put(f"{base}/{ids['dave']}", {"role": "viewer"}, token="erin"))
    assert (await api.put(f"{base}/{ids['frank']}", {"role": "viewer"}, token="erin")).status == 404
    res = await api.put(f"{base}/{ids['bob']}", {"role": "owner"}, token="dave")
    assert res.status == 200
    res = await api.get(f"/api/v1/workspaces/{ws}/access", token="bob")
    assert res.data["effectiveRole"] == "owner"


async def test_removing_members_needs_admin_and_an_admin_cannot_remove_an_owner(api: ApiClient, team: Team) -> None:
    ws, ids = team["ws"], team["ids"]
    base = f"/api/v1/workspaces/{ws}/members"
    for name in ("carol", "bob", "frank"):
        assert forbidden(await api.delete(f"{base}/{ids['carol']}", token=name))
    assert forbidden(await api.delete(f"{base}/{ids['dave']}", token="erin"))
    assert (await api.delete(f"{base}/{ids['carol']}", token="erin")).status == 200
    assert forbidden(await api.get(f"/api/v1/workspaces/{ws}", token="carol"))
    assert (await api.delete(f"{base}/{ids['carol']}", token="erin")).status == 404
    assert (await api.delete(f"{base}/{ids['bob']}", token="alice")).status == 200


async def test_nobody_removes_or_demotes_the_last_owner(api: ApiClient, team: Team) -> None:
    ws, ids = team["ws"], team["ids"]
    base = f"/api/v1/workspaces/{ws}/members"
    for token in ("dave", "alice"):
        res = await api.put(f"{base}/{ids['dave']}", {"role": "admin"}, token=token)
        assert res.status == 409 and res.msg == "The last owner cannot be demoted"  # the workspace's state
        res = await api.delete(f"{base}/{ids['dave']}", token=token)
        assert res.status == 409 and res.msg == "The last owner cannot be removed"
    assert (await api.put(f"{base}/{ids['erin']}", {"role": "owner"}, token="dave")).status == 200
    assert (await api.put(f"{base}/{ids['dave']}", {"role": "member"}, token="dave")).status == 200
    res = await api.delete(f"{base}/{ids['erin']}", token="erin")
    assert res.status == 409 and res.msg == "The last owner cannot be removed"
    members = {m["username"]: m["role"] for m in (await api.get(base, token="erin")).data}
    assert members["erin"] == "owner" and members["dave"] == "member"


async def test_a_user_of_another_workspace_sees_none_of_workspace_1(api: ApiClient, people: dict) -> None:
    dave_ws = people["dave"]["workspace"]
    listed = (await api.get("/api/v1/workspaces", token="dave")).data
    assert [w["id"] for w in listed] == [dave_ws]
    assert forbidden(await api.get("/api/v1/workspaces/1", token="dave"))
    assert forbidden(await api.get("/api/v1/workspaces/1/members", token="dave"))
    assert forbidden(await api.put("/api/v1/workspaces/1", {"name": "Mine"}, token="dave"))
    assert forbidden(await api.post("/api/v1/workspaces/1/members",
                                    {"userId": people["dave"]["id"], "role": "owner"}, token="dave"))
    assert forbidden(await api.put(f"/api/v1/workspaces/1/members/{people['bob']['id']}", {"role": "viewer"}, token="dave"))
    assert forbidden(await api.delete(f"/api/v1/workspaces/1/members/{people['bob']['id']}", token="dave"))
    access = (await api.get("/api/v1/workspaces/1/access", token="dave")).data
    assert access["canRead"] is False and access["memberRole"] is None
    for header in (None, "1", "abc"):
        res = await api.get("/api/v1/audit/events", token="dave", workspace=header)
        assert forbidden(res), header
    own = await api.get("/api/v1/audit/events", token="dave", workspace=dave_ws)
    assert own.status == 200 and own.data["total"] >= 1
    assert {e["workspaceId"] for e in own.data["records"]} == {dave_ws}
    assert not any(e["actorUsername"] in ("bob", "carol") for e in own.data["records"])
    members = (await api.get(f"/api/v1/workspaces/{dave_ws}/members", token="dave")).data
    assert sorted(m["username"] for m in members) == ["alice", "dave"]  # alice created it for dave
