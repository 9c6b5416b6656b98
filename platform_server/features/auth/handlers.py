"""Login, personal access tokens, users, password change."""

from __future__ import annotations

import asyncio

from platform_server.blocking import run_blocking
from platform_server.date_time import parse_date_time
from platform_server.features.auth import JWT, LOGIN_LIMITER, admin, members, service
from platform_server.features.auth.schemas import CreateTokenRequest, CreateUserRequest, LoginRequest, LoginView, NewTokenView
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN, LOGIN, PUBLIC
from platform_server.web.errors import BadRequest, Conflict, Forbidden, Unauthorized
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route


class LoginHandler(ApiHandler):
    answers = {"POST": one(LoginView)}
    access = {"POST": PUBLIC}
    body_models = {"POST": LoginRequest}
    max_body_setting = "public_max_body_bytes"  # anyone may send one: a large body is refused unread
    read_only_methods = frozenset({"POST"})  # a login is served while storage is read-only (reads need a token)
    tags = ("Authentication",)

    async def post(self) -> None:
        """Log in with username and password; returns a JWT."""
        req = self.body(LoginRequest)
        address = self.client_ip
        limiter = self.platform.runtime(LOGIN_LIMITER)
        if delay := await limiter.before_login(req.username, address):
            await asyncio.sleep(delay)  # a username guessed from many addresses: every attempt waits
        user = service.find_active_user(req.username)
        valid = await run_blocking(service.check_login, req.password, user, self.config.password_hash_rounds)
        if not user or not valid:
            await limiter.failed_login(req.username, address)
            raise Unauthorized("Invalid username or password")
        if not user.enabled:
            await limiter.failed_login(req.username, address)
            raise Unauthorized("User is disabled")
        await limiter.succeeded_login(req.username, address)
        self.ok(service.login_response(user, self.platform.runtime(JWT).issue(user.id, user.username, user.role)))


class TokensHandler(ApiHandler):
    answers = {"GET": list_of(service.TokenView), "POST": one(NewTokenView)}
    access = {"GET": LOGIN, "POST": LOGIN}
    body_models = {"POST": CreateTokenRequest}
    tags = ("Authentication",)

    def get(self) -> None:
        """List the caller's personal access tokens (metadata only)."""
        self.ok(service.list_pats(self.require_caller().user_id))

    def post(self) -> None:
        """Create a personal access token; the plaintext is shown once."""
        req = self.body(CreateTokenRequest)
        expires = parse_date_time(req.expiresAt) if req.expiresAt else None
        self.ok(service.create_pat(self.require_caller(), req.name, expires))


class TokenHandler(ApiHandler):
    answers = {"DELETE": NOTHING}
    access = {"DELETE": LOGIN}
    tags = ("Authentication",)

    def delete(self, id: int) -> None:
        """Revoke one of the caller's tokens (soft delete)."""
        service.revoke_pat(self.require_caller(), id)
        self.ok(None)


class UsersHandler(ApiHandler):
    answers = {"GET": list_of(service.UserView), "POST": one(service.UserView)}
    access = {"GET": GLOBAL_ADMIN, "POST": GLOBAL_ADMIN}
    body_models = {"POST": CreateUserRequest}
    tags = ("Authentication",)

    def get(self) -> None:
        """List users (global admin)."""
        self.ok(service.list_users())

    async def post(self) -> None:
        """Create a user (global admin); they join workspace 1 as member."""
        req = self.body(CreateUserRequest)
        if service.find_active_user(req.username) is not None:
            raise Conflict("username: already exists")
        password_hash = await run_blocking(service.hash_password, req.password, self.config.password_hash_rounds)
        user = service.create_user(self.require_caller(), req.username, password_hash, req.nickname, req.email, req.role, req.enabled)
        self.ok(service.user_to_dict(user))


class PasswordHandler(ApiHandler):
    answers = {"PUT": NOTHING}
    access = {"PUT": LOGIN}
    tags = ("Authentication",)

    async def put(self, id: int) -> None:
        """Change the caller's own password (`oldPassword`, `newPassword` query parameters)."""
        caller = self.require_caller()
        old = self.get_query_argument("oldPassword", None, strip=False)  # a password's spaces are part of it
        new = self.get_query_argument("newPassword", None, strip=False)
        if not old:
            raise BadRequest("oldPassword: must not be blank")
        if not new or len(new) < 8:
            raise BadRequest("newPassword: size must be at least 8")
        user = service.get_user(caller.user_id)
        if not await run_blocking(service.check_password, old, user.password_hash):
            raise Forbidden("oldPassword: does not match")  # a fact of the account, not of the request's shape
        service.set_password(caller, user, await run_blocking(service.hash_password, new, self.config.password_hash_rounds))
        self.ok(None)


ROUTES = [
    route("/api/v1/auth/login", LoginHandler),
    route("/api/v1/auth/tokens", TokensHandler),
    route("/api/v1/auth/tokens/{id}", TokenHandler),
    route("/api/v1/auth/users", UsersHandler),
    route("/api/v1/auth/users/{id}/password", PasswordHandler),
    *admin.ROUTES,
    *members.ROUTES,
]
