"""Resolved tokens and roles are cached, yet any write to users, tokens or memberships applies at once."""
from __future__ import annotations

from typing import Any

from platform_server.features.auth.models import AccessToken, User
from platform_server.features.workspaces.models import WorkspaceMember
from tests.helpers.client import ApiClient


async def test_a_disabled_user_is_refused_on_the_very_next_request_even_with_a_cached_token(
    api: ApiClient, people: dict
) -> None:
    assert (await api.get("/api/v1/agents", token="bob")).status == 200  # cached now
    assert (await api.get("/api/v1/agents", token="bob")).status == 200
    User.update(enabled=False).where(User.id == int(people["bob"]["id"])).execute()
    r = await api.get("/api/v1/agents", token="bob")
    assert r.status == 401 and r.body["msg"] == "Token expired or invalid"
    User.update(enabled=True).where(User.id == int(people["bob"]["id"])).execute()
    assert (await api.get("/api/v1/agents", token="bob")).status == 200


async def test_a_changed_workspace_role_applies_on_the_next_request(api: ApiClient, people: dict) -> None:
    body = {"name": "Cached", "systemPrompt": "x", "agentType": "react"}
    assert (await api.post("/api/v1/agents", body, token="bob")).status == 200  # member may create
    r = await api.put(f"/api/v1/workspaces/1/members/{people['bob']['id']}", {"role": "viewer"}, token="alice")
    assert r.status == 200, r.body
    r = await api.post("/api/v1/agents", body, token="bob")
    assert r.status == 403, r.body
    WorkspaceMember.delete().where(WorkspaceMember.user_id == int(people["bob"]["id"])).execute()
    assert (await api.get("/api/v1/agents", token="bob")).status == 403


async def test_a_revoked_personal_access_token_stops_working_at_once(api: ApiClient, people: dict) -> None:
    r = await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")
    assert r.status == 200, r.body
    pat = r.data["token"]
    assert (await api.get("/api/v1/agents", token=pat)).status == 200
    AccessToken.delete().where(AccessToken.id == int(r.data["id"])).execute()
    assert (await api.get("/api/v1/agents", token=pat)).status == 401


async def test_a_cached_principal_and_role_cost_no_query(api: ApiClient, people: dict, monkeypatch) -> None:
    from platform_server.db import database

    assert (await api.get("/api/v1/agents", token="bob")).status == 200  # cached now
    seen: list[str] = []
    original = database.obj.execute_sql

    def counting(sql: str, params: Any = None, *args: Any) -> Any:
        seen.append(sql)
        return original(sql, params, *args)

    monkeypatch.setattr(database.obj, "execute_sql", counting)
    assert (await api.get("/api/v1/agents", token="bob")).status == 200
    assert not [sql for sql in seen if "auth_epoch" in sql or '"user"' in sql or "workspace_member" in sql], seen


async def test_a_change_made_by_another_process_applies_within_the_recheck_window(
    api: ApiClient, people: dict, monkeypatch
) -> None:
    import apsw

    from platform_server.db import database
    from platform_server.features.auth import cache

    monkeypatch.setattr(cache, "EPOCH_RECHECK_S", 0.0)
    assert (await api.get("/api/v1/agents", token="bob")).status == 200  # cached now
    other = apsw.Connection(database.obj.database)  # another connection without this process's hook
    other.execute('UPDATE "user" SET enabled = 0 WHERE id = ?', (int(people["bob"]["id"]),))
    other.close()
    assert (await api.get("/api/v1/agents", token="bob")).status == 401
