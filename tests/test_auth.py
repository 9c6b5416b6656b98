"""Login, JWTs and their renewal, rate limits, disabled users, passwords, PATs and users."""
from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import time
from typing import Any

import jwt as pyjwt
import pytest

from platform_server.config import Config
from platform_server.db import iso
from platform_server.features.auth.models import AccessToken, User
from platform_server.features.auth.service import LoginLimiter
from platform_server.web.base import ApiHandler
from platform_server.web.context import LOGIN
from platform_server.web.errors import TooManyRequests
from platform_server.web.sse import SseWriter
from tests.helpers.client import ApiClient
from tests.helpers.server import PASSWORD, RunningServer, login

UNAUTHORIZED = {"code": 401, "msg": "Token expired or invalid", "data": None}
PAT_PATTERN = re.compile(r"^mc_[A-Za-z0-9_-]{43}$")


def secret_of(server: RunningServer) -> bytes:
    with open(os.path.join(server.config.data_dir, "jwt_secret"), "rb") as fh:
        return fh.read().strip()


def claims_of(token: str) -> dict[str, Any]:
    return pyjwt.decode(token, options={"verify_signature": False})


async def login_raw(api: ApiClient, username: str, password: str) -> Any:
    return await api.post("/api/v1/auth/login", {"username": username, "password": password})


async def whoami(api: ApiClient, token: str) -> Any:
    """Any protected call; 200 when the token authenticates."""
    return await api.get("/api/v1/workspaces", token=token)


# ---- login -------------------------------------------------------------------


async def test_login_answers_a_jwt_with_the_decided_claims(api: ApiClient, people: dict) -> None:
    res = await login_raw(api, "bob", PASSWORD)
    assert res.status == 200 and res.body["code"] == 200 and res.msg == "success"
    data = res.data
    assert set(data) == {"id", "token", "username", "nickname", "role"}
    assert data["id"] == people["bob"]["id"] and data["username"] == "bob" and data["role"] == "user"
    assert data["token"].startswith("eyJ")
    header = json.loads(base64.urlsafe_b64decode(data["token"].split(".")[0] + "=="))
    assert header["alg"] == "HS256"
    claims = claims_of(data["token"])
    assert claims["sub"] == "bob" and claims["userId"] == people["bob"]["id"] and claims["role"] == "user"
    assert abs(claims["exp"] - claims["iat"] - 86_400) <= 1
    assert (await whoami(api, data["token"])).status == 200


async def test_a_wrong_password_or_unknown_user_answers_401_with_the_same_message(api: ApiClient, people: dict) -> None:
    wrong = await login_raw(api, "bob", "not-the-password")
    unknown = await login_raw(api, "nobody", "not-the-password")
    for res in (wrong, unknown):
        assert res.status == 401
        assert res.body["code"] == 401 and isinstance(res.msg, str) and res.msg and res.data is None
        assert "token" not in res.raw.decode()
    assert wrong.msg == unknown.msg


async def test_login_validates_its_body(api: ApiClient) -> None:
    res = await api.post("/api/v1/auth/login", {"username": "bob"})
    assert res.status == 400 and res.msg.startswith("password: ")


async def test_five_failures_lock_that_username_with_429_while_others_still_log_in(api: ApiClient, people: dict) -> None:
    for _ in range(5):
        assert (await login_raw(api, "bob", "wrong-password")).status == 401
    locked = await login_raw(api, "bob", PASSWORD)
    assert locked.status == 429
    assert locked.body["code"] == 429 and locked.msg and locked.data is None
    assert (await login_raw(api, "BOB", PASSWORD)).status == 429
    assert (await login_raw(api, "carol", PASSWORD)).status == 200


async def test_a_successful_login_resets_the_usernames_failure_count(api: ApiClient, people: dict) -> None:
    for _ in range(4):
        assert (await login_raw(api, "bob", "wrong-password")).status == 401
    assert (await login_raw(api, "bob", PASSWORD)).status == 200
    for _ in range(4):
        assert (await login_raw(api, "bob", "wrong-password")).status == 401
    assert (await login_raw(api, "bob", PASSWORD)).status == 200


@pytest.mark.config(login_max_failures_per_address=6)
async def test_failures_from_one_address_over_its_limit_answer_429_for_every_username(api: ApiClient, people: dict) -> None:
    for i in range(6):
        assert (await login_raw(api, f"ghost{i}", "wrong-password")).status == 401
    res = await login_raw(api, "carol", PASSWORD)
    assert res.status == 429 and res.body["code"] == 429


def test_the_default_limits_are_5_failures_per_username_and_50_per_address_for_5_minutes() -> None:
    config = Config()
    assert (config.login_max_failures_per_user, config.login_max_failures_per_address) == (5, 50)
    assert config.login_lockout_seconds == 300
    limiter = LoginLimiter(config.login_max_failures_per_user, config.login_max_failures_per_address,
                           config.login_lockout_seconds)
    for i in range(49):
        limiter.check(f"user{i}", "10.0.0.1")
        limiter.failed(f"user{i}", "10.0.0.1")
    limiter.check("someone", "10.0.0.1")
    limiter.failed("someone", "10.0.0.1")
    with pytest.raises(TooManyRequests):
        limiter.check("another", "10.0.0.1")
    limiter.check("another", "10.0.0.2")


# ---- JWTs ----------------------------------------------------------------------


async def test_a_fresh_jwt_gets_no_new_token(api: ApiClient, people: dict) -> None:
    res = await whoami(api, "bob")
    assert res.status == 200
    assert "X-New-Token" not in res.headers


@pytest.mark.config(jwt_ttl_ms=3_600_000, jwt_renew_threshold_ms=7_200_000)
async def test_a_jwt_near_expiry_receives_x_new_token_and_the_expose_header(api: ApiClient, people: dict) -> None:
    old = api.tokens["bob"]
    res = await whoami(api, "bob")
    assert res.status == 200
    new = res.headers["X-New-Token"]
    assert res.headers["Access-Control-Expose-Headers"] == "X-New-Token"
    assert new != old and claims_of(new)["sub"] == "bob" and claims_of(new)["userId"] == people["bob"]["id"]
    assert claims_of(new)["exp"] >= claims_of(old)["exp"]
    assert (await whoami(api, new)).status == 200


async def test_a_pat_never_receives_x_new_token(api: ApiClient, people: dict) -> None:
    pat = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")).data["token"]
    res = await whoami(api, pat)
    assert res.status == 200 and "X-New-Token" not in res.headers


async def test_expired_tampered_alg_none_and_wrong_secret_jwts_answer_401(server: RunningServer, api: ApiClient, people: dict) -> None:
    secret = secret_of(server)
    now = time.time()
    base = {"sub": "bob", "userId": people["bob"]["id"], "role": "user", "iat": now, "exp": int(now) + 3600}
    valid = pyjwt.encode(base, secret, algorithm="HS256")
    assert (await whoami(api, valid)).status == 200

    expired = pyjwt.encode({**base, "exp": int(now) - 10}, secret, algorithm="HS256")
    head, payload, signature = valid.split(".")
    forged = base64.urlsafe_b64encode(json.dumps({**base, "sub": "alice", "userId": people["alice"]["id"],
                                                  "role": "admin"}).encode()).decode().rstrip("=")
    tampered = f"{head}.{forged}.{signature}"
    none_head = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').decode().rstrip("=")
    alg_none = f"{none_head}.{payload}."
    wrong_secret = pyjwt.encode(base, b"another-secret-that-is-long-enough-32b", algorithm="HS256")
    missing_user_id = pyjwt.encode({k: v for k, v in base.items() if k != "userId"}, secret, algorithm="HS256")
    other_user = pyjwt.encode({**base, "sub": "carol"}, secret, algorithm="HS256")
    for token in (expired, tampered, alg_none, wrong_secret, missing_user_id, other_user, "eyJgarbage", "x"):
        res = await whoami(api, token)
        assert res.status == 401, token
        assert res.body == UNAUTHORIZED
    res = await api.get("/api/v1/workspaces", headers={"Authorization": "Basic Ym9iOnB3"})
    assert res.status == 401 and res.body == UNAUTHORIZED


# ---- disabled users ----------------------------------------------------------


async def test_a_user_created_disabled_cannot_log_in(api: ApiClient, people: dict) -> None:
    res = await api.post("/api/v1/auth/users", {"username": "erin", "password": PASSWORD, "enabled": False}, token="alice")
    assert res.status == 200 and res.data["enabled"] is False
    res = await login_raw(api, "erin", PASSWORD)
    assert res.status == 401 and res.body["code"] == 401 and "token" not in (res.data or {})


async def test_disabling_a_user_refuses_their_jwts_and_pats(api: ApiClient, people: dict) -> None:
    pat = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")).data["token"]
    assert (await whoami(api, pat)).status == 200
    User.update(enabled=False).where(User.id == int(people["bob"]["id"])).execute()
    for token in ("bob", pat):
        res = await whoami(api, token)
        assert res.status == 401 and res.body == UNAUTHORIZED
    assert (await login_raw(api, "bob", PASSWORD)).status == 401
    User.update(enabled=True).where(User.id == int(people["bob"]["id"])).execute()
    assert (await whoami(api, pat)).status == 200


# ---- passwords -----------------------------------------------------------------


async def test_changing_the_password_invalidates_older_jwts_and_the_new_password_logs_in(api: ApiClient, people: dict) -> None:
    old_token = api.tokens["bob"]
    pat = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")).data["token"]
    res = await api.put(f"/api/v1/auth/users/{people['bob']['id']}/password", token="bob",
                        params={"oldPassword": PASSWORD, "newPassword": "brand-new-pass"})
    assert res.status == 200 and res.body == {"code": 200, "msg": "success", "data": None}
    assert (await whoami(api, old_token)).body == UNAUTHORIZED
    assert (await login_raw(api, "bob", PASSWORD)).status == 401
    new_token = await login(api, "bob", "brand-new-pass")
    assert (await whoami(api, new_token)).status == 200
    assert (await whoami(api, pat)).status == 401  # a password change revokes the user's PATs too


async def test_a_wrong_old_password_answers_403_and_changes_nothing(api: ApiClient, people: dict) -> None:
    """A well-formed change with the wrong old password is refused by the account's state (403), not as bad input."""
    path = f"/api/v1/auth/users/{people['bob']['id']}/password"
    res = await api.put(path, token="bob", params={"oldPassword": "wrong-password", "newPassword": "brand-new-pass"})
    assert res.status == 403 and res.msg == "oldPassword: does not match"
    res = await api.put(path, token="bob", params={"newPassword": "brand-new-pass"})
    assert res.status == 400 and res.msg.startswith("oldPassword: ")
    res = await api.put(path, token="bob", params={"oldPassword": PASSWORD, "newPassword": "short"})
    assert res.status == 400 and res.msg.startswith("newPassword: ")
    assert (await whoami(api, "bob")).status == 200
    assert (await login_raw(api, "bob", PASSWORD)).status == 200


async def test_the_path_id_of_a_password_change_is_informational(api: ApiClient, people: dict) -> None:
    res = await api.put(f"/api/v1/auth/users/{people['alice']['id']}/password", token="bob",
                        params={"oldPassword": PASSWORD, "newPassword": "bobs-new-pass"})
    assert res.status == 200
    assert (await login_raw(api, "bob", "bobs-new-pass")).status == 200
    assert (await login_raw(api, "alice", PASSWORD)).status == 200
    assert (await login_raw(api, "alice", "bobs-new-pass")).status == 401


# ---- personal access tokens --------------------------------------------------


async def test_a_pat_is_shown_once_and_authenticates_in_the_authorization_header(api: ApiClient, people: dict) -> None:
    created = await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")
    assert created.status == 200
    data = created.data
    assert set(data) == {"id", "name", "token", "tokenPrefix", "createTime", "expiresAt"}
    assert PAT_PATTERN.match(data["token"]) and data["token"].startswith(data["tokenPrefix"])
    assert data["name"] == "ci" and data["expiresAt"] is None
    stored = AccessToken.get_by_id(int(data["id"]))
    assert data["token"] not in (stored.token_hash, stored.token_prefix) and len(stored.token_hash) == 64

    listed = await api.get("/api/v1/auth/tokens", token="bob")
    assert listed.status == 200 and [t["id"] for t in listed.data] == [data["id"]]
    assert set(listed.data[0]) == {"id", "name", "tokenPrefix", "createTime", "expiresAt", "lastUsedAt"}
    assert listed.data[0]["lastUsedAt"] is None
    assert data["token"].encode() not in listed.raw

    res = await api.get("/api/v1/workspaces", headers={"Authorization": "Bearer " + data["token"]})
    assert res.status == 200 and res.data[0]["memberRole"] == "member"
    last_used = (await api.get("/api/v1/auth/tokens", token="bob")).data[0]["lastUsedAt"]
    assert last_used is not None
    assert abs(dt.datetime.fromisoformat(last_used.replace("Z", "+00:00")).timestamp() - time.time()) < 60
    assert (await api.get("/api/v1/auth/tokens", token="alice")).data == []


async def test_a_pat_in_the_token_query_parameter_is_refused_on_a_non_sse_route(api: ApiClient, people: dict) -> None:
    pat = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")).data["token"]
    for token in (pat, api.tokens["bob"]):
        res = await api.get("/api/v1/workspaces", params={"token": token})
        assert res.status == 401 and res.body == UNAUTHORIZED


class WhoAmIStream(ApiHandler):
    """A test-only SSE route: accepts ?token= like the chat stream routes."""

    access = {"GET": LOGIN}
    sse_methods = frozenset({"GET"})
    query_token = True

    async def get(self) -> None:
        """Send the caller's name as one event."""
        writer = SseWriter(self)
        await writer.send("whoami", {"username": self.require_caller().username})
        writer.finish()


async def test_a_pat_works_in_the_token_query_parameter_of_an_sse_route(server: RunningServer, api: ApiClient, people: dict) -> None:
    server.add_route("/api/v1/test/whoami-stream", WhoAmIStream)
    pat = (await api.post("/api/v1/auth/tokens", {"name": "browser"}, token="bob")).data["token"]
    events = await api.sse("GET", "/api/v1/test/whoami-stream", params={"token": pat})
    assert [(e.event, e.data) for e in events] == [("whoami", {"username": "bob"})]
    events = await api.sse("GET", "/api/v1/test/whoami-stream", params={"token": api.tokens["carol"]})
    assert events[0].data == {"username": "carol"}
    await api.delete(f"/api/v1/auth/tokens/{(await api.get('/api/v1/auth/tokens', token='bob')).data[0]['id']}",
                     token="bob")
    for params in ({"token": pat}, None):
        events = await api.sse("GET", "/api/v1/test/whoami-stream", params=params)
        assert [e.event for e in events] == ["error"]
        assert events[0].data["message"] == "Token expired or invalid"


async def test_a_revoked_pat_fails_and_leaves_the_list(api: ApiClient, people: dict) -> None:
    created = (await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob")).data
    keep = (await api.post("/api/v1/auth/tokens", {"name": "keep"}, token="bob")).data
    assert (await api.delete(f"/api/v1/auth/tokens/{created['id']}", token="carol")).status == 404
    assert (await whoami(api, created["token"])).status == 200
    res = await api.delete(f"/api/v1/auth/tokens/{created['id']}", token="bob")
    assert res.status == 200
    assert (await whoami(api, created["token"])).body == UNAUTHORIZED
    assert [t["id"] for t in (await api.get("/api/v1/auth/tokens", token="bob")).data] == [keep["id"]]
    assert (await api.delete(f"/api/v1/auth/tokens/{created['id']}", token="bob")).status == 404
    assert AccessToken.get_by_id(int(created["id"])).deleted_at is not None
    assert (await whoami(api, keep["token"])).status == 200


async def test_an_expired_pat_fails_like_a_revoked_one(api: ApiClient, people: dict) -> None:
    future = iso(dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1))
    created = (await api.post("/api/v1/auth/tokens", {"name": "ci", "expiresAt": future}, token="bob")).data
    assert created["expiresAt"] is not None
    assert (await whoami(api, created["token"])).status == 200
    past = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=1)
    AccessToken.update(expires_at=past).where(AccessToken.id == int(created["id"])).execute()
    res = await whoami(api, created["token"])
    assert res.status == 401 and res.body == UNAUTHORIZED


async def test_a_pat_expiry_must_be_a_future_iso_time(api: ApiClient, people: dict) -> None:
    past = iso(dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=1))
    res = await api.post("/api/v1/auth/tokens", {"name": "ci", "expiresAt": past}, token="bob")
    assert res.status == 409 and res.msg == "expiresAt: must be in the future"  # the clock's state, not the shape
    for later in ("9999-12-31t23:59:59.1234567-23:59", "2999-06-30T23:59:60+01:00"):  # every RFC 3339 form
        res = await api.post("/api/v1/auth/tokens", {"name": "ci", "expiresAt": later}, token="bob")
        assert res.status == 200 and res.data["expiresAt"].startswith(later[:4]), res.body
    res = await api.post("/api/v1/auth/tokens", {"name": "ci", "expiresAt": "2999-01-01T00:00:00"}, token="bob")
    assert res.status == 400 and res.msg.startswith("expiresAt: must be an RFC 3339 date-time")
    res = await api.post("/api/v1/auth/tokens", {"name": "ci", "expiresAt": "tomorrow"}, token="bob")
    assert res.status == 400 and res.msg.startswith("expiresAt: ")
    res = await api.post("/api/v1/auth/tokens", {"name": ""}, token="bob")
    assert res.status == 400 and res.msg.startswith("name: ")


async def test_a_password_past_bcrypts_72_bytes_counts_every_character(api: ApiClient, people: dict) -> None:
    """The document allows 256 characters: a long passphrase is taken, and one differing after byte 72 does not log in."""
    long = "correct horse battery staple " * 4 + "é" * 20  # 116 + 40 bytes
    res = await api.post(f"/api/v1/auth/users/{people['bob']['id']}/reset-password", {"newPassword": long}, token="alice")
    assert res.status == 200, res.body
    assert (await login_raw(api, "bob", long)).status == 200
    assert (await login_raw(api, "bob", long[:-1] + "x")).status == 401
    res = await api.put(f"/api/v1/auth/users/{people['bob']['id']}/password", token=await login(api, "bob", long),
                        params={"oldPassword": long, "newPassword": "  spaced out  "})  # a password's spaces are kept
    assert res.status == 200, res.body
    assert (await login_raw(api, "bob", "  spaced out  ")).status == 200


async def test_an_unknown_pat_answers_401(api: ApiClient) -> None:
    res = await whoami(api, "mc_" + "A" * 43)
    assert res.status == 401 and res.body == UNAUTHORIZED


# ---- users -----------------------------------------------------------------------


async def test_only_a_global_admin_lists_and_creates_users(api: ApiClient, people: dict) -> None:
    for name in ("bob", "carol", "dave"):
        assert (await api.get("/api/v1/auth/users", token=name)).status == 403
        res = await api.post("/api/v1/auth/users", {"username": "erin", "password": PASSWORD}, token=name)
        assert res.status == 403 and res.body["code"] == 403 and res.data is None
    listed = await api.get("/api/v1/auth/users", token="alice")
    assert [u["username"] for u in listed.data] == ["alice", "bob", "carol", "dave"]
    assert listed.data[0]["role"] == "admin"
    res = await api.post("/api/v1/auth/users", {"username": "erin", "password": PASSWORD, "nickname": "Erin",
                                                "email": "erin@example.com"}, token="alice")
    assert res.status == 200
    assert res.data["username"] == "erin" and res.data["nickname"] == "Erin" and res.data["role"] == "user"
    erin_token = await login(api, "erin", PASSWORD)
    ws = (await api.get("/api/v1/workspaces", token=erin_token)).data
    assert [(w["id"], w["memberRole"]) for w in ws] == [("1", "member")]


async def test_creating_a_user_validates_the_body_and_refuses_a_taken_username(api: ApiClient, people: dict) -> None:
    cases = [
        ({"username": "x", "password": PASSWORD}, "username: "),
        ({"username": "erin", "password": "short"}, "password: "),
        ({"username": "erin", "password": PASSWORD, "role": "root"}, "role: "),
    ]
    for body, msg in cases:
        res = await api.post("/api/v1/auth/users", body, token="alice")
        assert res.status == 400 and res.msg.startswith(msg), (body, res.body)
    # A taken name is the server's state, not a malformed body: 409, as documented on the operation
    res = await api.post("/api/v1/auth/users", {"username": "bob", "password": PASSWORD}, token="alice")
    assert res.status == 409 and res.body == {"code": 409, "msg": "username: already exists", "data": None}


def _find_secrets(value: Any, path: str = "") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if "password" in key.lower() or "hash" in key.lower():
                found.append(f"{path}.{key}")
            found += _find_secrets(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _find_secrets(item, f"{path}[{i}]")
    elif isinstance(value, str) and (value.startswith("$2") or value == PASSWORD):
        found.append(path)
    return found


async def test_no_response_carries_a_password_or_its_hash(server: RunningServer, api: ApiClient) -> None:
    responses = [await api.post("/api/v1/setup/init", {"username": "alice", "password": PASSWORD})]
    api.tokens["alice"] = responses[0].data["token"]
    responses.append(await api.post("/api/v1/auth/users", {"username": "bob", "password": PASSWORD}, token="alice"))
    bob_id = responses[-1].data["id"]
    responses.append(await login_raw(api, "bob", PASSWORD))
    api.tokens["bob"] = responses[-1].data["token"]
    responses.append(await login_raw(api, "bob", "wrong-password"))
    responses.append(await api.get("/api/v1/auth/users", token="alice"))
    responses.append(await api.post("/api/v1/auth/tokens", {"name": "ci"}, token="bob"))
    responses.append(await api.get("/api/v1/auth/tokens", token="bob"))
    responses.append(await api.put(f"/api/v1/auth/users/{bob_id}/password", token="bob",
                                   params={"oldPassword": PASSWORD, "newPassword": "bobs-new-pass"}))
    responses.append(await api.get("/api/v1/workspaces/1/members", token="alice"))
    responses.append(await api.get("/api/v1/workspaces", token="alice"))
    responses.append(await api.get("/api/v1/audit/events", token="alice", params={"size": 100}))
    responses.append(await api.get("/api/v1/setup/status"))
    responses.append(await api.get("/api/v1/setup/onboarding-status", token="alice"))
    responses.append(await api.get("/api/v1/settings", token="alice"))
    hashes = [u.password_hash for u in User.select()]
    for res in responses:
        assert res.status in (200, 401), res.body
        assert _find_secrets(res.body) == [], res.body
        assert b"bobs-new-pass" not in res.raw and PASSWORD.encode() not in res.raw
        for h in hashes:
            assert h.encode() not in res.raw
