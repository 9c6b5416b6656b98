"""User administration by global admins: disable/enable, global role, password reset, another user's tokens."""
from __future__ import annotations

from typing import Any

from tests.helpers.client import ApiClient
from tests.helpers.server import PASSWORD, login

UNAUTHORIZED = {"code": 401, "msg": "Token expired or invalid", "data": None}


async def whoami(api: ApiClient, token: str) -> Any:
    return await api.get("/api/v1/workspaces", token=token)


def uid(people: dict, name: str) -> str:
    return people[name]["id"]


async def test_disabling_a_user_stops_their_jwts_and_pats_and_enabling_restores_the_pat(api: ApiClient, people: dict) -> None:
    pat = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")).data["token"]
    r = await api.post(f"/api/v1/auth/users/{uid(people, 'bob')}/disable", token="alice")
    assert r.status == 200 and r.data["enabled"] is False and r.data["username"] == "bob"
    for token in ("bob", pat):
        assert (await whoami(api, token)).body == UNAUTHORIZED
    assert (await api.post("/api/v1/auth/login", {"username": "bob", "password": PASSWORD})).status == 401
    listed = (await api.get("/api/v1/auth/users", token="alice")).data
    assert next(u for u in listed if u["username"] == "bob")["enabled"] is False

    r = await api.post(f"/api/v1/auth/users/{uid(people, 'bob')}/enable", token="alice")
    assert r.status == 200 and r.data["enabled"] is True
    assert (await whoami(api, pat)).status == 200
    actions = (await api.get("/api/v1/audit/events", token="alice")).data["records"]
    assert any("bob disabled" in (e.get("detail") or e.get("summary") or str(e)) for e in actions)


async def test_an_admin_cannot_disable_themselves_or_the_last_global_admin(api: ApiClient, people: dict) -> None:
    r = await api.post(f"/api/v1/auth/users/{uid(people, 'alice')}/disable", token="alice")
    assert r.status == 409 and r.msg == "You cannot disable your own account"
    r = await api.put(f"/api/v1/auth/users/{uid(people, 'alice')}/role", {"role": "user"}, token="alice")
    assert r.status == 409 and "last enabled global admin" in r.msg
    assert (await whoami(api, "alice")).status == 200


async def test_a_promoted_user_administers_users_and_a_demoted_one_no_longer_does(api: ApiClient, people: dict) -> None:
    assert (await api.get("/api/v1/auth/users", token="bob")).status == 403
    r = await api.put(f"/api/v1/auth/users/{uid(people, 'bob')}/role", {"role": "admin"}, token="alice")
    assert r.status == 200 and r.data["role"] == "admin"
    assert (await api.get("/api/v1/auth/users", token="bob")).status == 200
    # with a second admin, alice may now be demoted (by bob) and loses the admin routes
    r = await api.put(f"/api/v1/auth/users/{uid(people, 'alice')}/role", {"role": "user"}, token="bob")
    assert r.status == 200 and r.data["role"] == "user"
    assert (await api.get("/api/v1/auth/users", token="alice")).status == 403
    bad = await api.put(f"/api/v1/auth/users/{uid(people, 'bob')}/role", {"role": "root"}, token="bob")
    assert bad.status == 400 and bad.msg.startswith("role:")


async def test_a_reset_password_ends_older_jwts_and_pats_and_the_new_one_logs_in(api: ApiClient, people: dict) -> None:
    old = api.tokens["bob"]
    pat = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")).data["token"]
    r = await api.post(f"/api/v1/auth/users/{uid(people, 'bob')}/reset-password", {"newPassword": "reset-pass-1"}, token="alice")
    assert r.status == 200 and r.data is None
    assert (await whoami(api, old)).body == UNAUTHORIZED
    assert (await whoami(api, pat)).body == UNAUTHORIZED
    assert (await whoami(api, await login(api, "bob", "reset-pass-1"))).status == 200
    short = await api.post(f"/api/v1/auth/users/{uid(people, 'bob')}/reset-password", {"newPassword": "short"}, token="alice")
    assert short.status == 400 and short.msg.startswith("newPassword:")


async def test_an_admin_lists_and_revokes_another_users_tokens(api: ApiClient, people: dict) -> None:
    made = (await api.post("/api/v1/auth/tokens", {"name": "bob's script"}, token="bob")).data
    listed = (await api.get(f"/api/v1/auth/users/{uid(people, 'bob')}/tokens", token="alice")).data
    assert [(t["id"], t["name"]) for t in listed] == [(made["id"], "bob's script")]
    assert all("token" not in t and "tokenHash" not in t for t in listed)
    foreign = await api.delete(f"/api/v1/auth/users/{uid(people, 'carol')}/tokens/{made['id']}", token="alice")
    assert foreign.status == 404  # the token is bob's, not carol's
    r = await api.delete(f"/api/v1/auth/users/{uid(people, 'bob')}/tokens/{made['id']}", token="alice")
    assert r.status == 200
    assert (await whoami(api, made["token"])).body == UNAUTHORIZED
    assert (await api.get(f"/api/v1/auth/users/{uid(people, 'bob')}/tokens", token="alice")).data == []
    again = await api.delete(f"/api/v1/auth/users/{uid(people, 'bob')}/tokens/{made['id']}", token="alice")
    assert again.status == 404


async def test_only_global_admins_reach_the_user_admin_routes_and_unknown_users_answer_404(api: ApiClient, people: dict) -> None:
    bob = uid(people, "bob")
    calls = [("POST", f"/api/v1/auth/users/{bob}/disable", None), ("POST", f"/api/v1/auth/users/{bob}/enable", None),
             ("PUT", f"/api/v1/auth/users/{bob}/role", {"role": "admin"}),
             ("POST", f"/api/v1/auth/users/{bob}/reset-password", {"newPassword": "whatever-1"}),
             ("GET", f"/api/v1/auth/users/{bob}/tokens", None), ("DELETE", f"/api/v1/auth/users/{bob}/tokens/1", None)]
    for method, path, body in calls:
        for who in ("bob", "carol", "dave"):
            r = await api.request(method, path, body, token=who)
            assert r.status == 403, (method, path, who, r.status)
    assert (await api.post("/api/v1/auth/users/99999/disable", token="alice")).status == 404
    assert (await api.get("/api/v1/auth/users/99999/tokens", token="alice")).status == 404
    assert (await api.post("/api/v1/auth/users/abc/disable", token="alice")).status == 400
