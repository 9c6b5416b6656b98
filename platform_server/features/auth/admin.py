"""User administration for global admins: disable/enable, global role, password reset, another user's tokens.

A disabled user's JWTs and personal access tokens stop working on the next request (`authenticate` refuses
disabled users; the auth cache empties itself on any user row change). A reset password ends every JWT
issued before it. The platform always keeps one enabled global admin: nobody disables or demotes the last.
"""

from __future__ import annotations

from platform_server.blocking import run_blocking
from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.auth import service
from platform_server.features.auth.models import AccessToken, User
from platform_server.features.auth.schemas import ResetPasswordRequest, RoleRequest
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN, Caller
from platform_server.web.errors import Conflict, NotFound
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route

TAGS = ("Authentication",)


def _user(user_id: int) -> User:
    user = User.get_or_none((User.id == user_id) & (User.deleted == False))  # noqa: E712
    if user is None:
        raise NotFound("User not found")
    return user


def _other_enabled_admins(user_id: int) -> int:
    return (
        User.select()
        .where(
            (User.role == "admin")
            & (User.enabled == True)  # noqa: E712
            & (User.deleted == False)  # noqa: E712
            & (User.id != user_id)
        )
        .count()
    )


def set_enabled(caller: Caller, user_id: int, enabled: bool) -> dict[str, object]:
    """Disable or enable a user; disabling yourself or the last enabled global admin is refused."""
    with database.atomic():
        user = _user(user_id)
        if not enabled:
            if user.id == caller.user_id:
                raise Conflict("You cannot disable your own account")
            if user.role == "admin" and _other_enabled_admins(user.id) == 0:
                raise Conflict("The last enabled global admin cannot be disabled")
        if bool(user.enabled) != enabled:
            User.update(enabled=enabled, update_time=utcnow()).where(User.id == user.id).execute()
            audit.record(caller, "UPDATE", "USER", user.id, f"user {user.username} {'enabled' if enabled else 'disabled'}")
        return service.user_to_dict(_user(user.id))


def set_role(caller: Caller, user_id: int, role: str) -> dict[str, object]:
    """Make a user a global admin or a plain user; the last enabled global admin keeps the role."""
    with database.atomic():
        user = _user(user_id)
        if role != "admin" and user.role == "admin" and user.enabled and _other_enabled_admins(user.id) == 0:
            raise Conflict("The last enabled global admin cannot lose the role")
        if user.role != role:
            User.update(role=role, update_time=utcnow()).where(User.id == user.id).execute()
            audit.record(caller, "UPDATE", "USER", user.id, f"user {user.username} global role {role}")
        return service.user_to_dict(_user(user.id))


def list_tokens(user_id: int) -> list[dict[str, object]]:
    return service.list_pats(_user(user_id).id)


def revoke_token(caller: Caller, user_id: int, token_id: int) -> None:
    """Revoke (soft-delete) one of the user's personal access tokens."""
    with database.atomic():
        user = _user(user_id)
        updated = (
            AccessToken.update(deleted_at=utcnow())
            .where((AccessToken.id == token_id) & (AccessToken.user == user.id) & AccessToken.deleted_at.is_null())
            .execute()
        )
        if not updated:
            raise NotFound("Token not found")
        audit.record(caller, "DELETE", "TOKEN", token_id, f"personal access token of {user.username} revoked")


class _AdminHandler(ApiHandler):
    access = {"GET": GLOBAL_ADMIN, "POST": GLOBAL_ADMIN, "PUT": GLOBAL_ADMIN, "DELETE": GLOBAL_ADMIN}
    tags = TAGS


class DisableUserHandler(_AdminHandler):
    answers = {"POST": one(service.UserView)}
    access = {"POST": GLOBAL_ADMIN}

    def post(self, id: int) -> None:
        """Disable a user (global admin): their tokens stop working; not yourself, not the last global admin."""
        self.ok(set_enabled(self.require_caller(), id, False))


class EnableUserHandler(_AdminHandler):
    answers = {"POST": one(service.UserView)}
    access = {"POST": GLOBAL_ADMIN}

    def post(self, id: int) -> None:
        """Enable a disabled user again (global admin); their unexpired tokens work again."""
        self.ok(set_enabled(self.require_caller(), id, True))


class UserRoleHandler(_AdminHandler):
    answers = {"PUT": one(service.UserView)}
    access = {"PUT": GLOBAL_ADMIN}
    body_models = {"PUT": RoleRequest}

    def put(self, id: int) -> None:
        """Set a user's global role, `admin` or `user` (global admin)."""
        self.ok(set_role(self.require_caller(), id, self.body(RoleRequest).role))


class ResetPasswordHandler(_AdminHandler):
    answers = {"POST": NOTHING}
    access = {"POST": GLOBAL_ADMIN}
    body_models = {"POST": ResetPasswordRequest}

    async def post(self, id: int) -> None:
        """Set a new password for a user (global admin); their JWTs issued before now stop working."""
        req = self.body(ResetPasswordRequest)
        user = _user(id)
        new_hash = await run_blocking(service.hash_password, req.newPassword, self.config.password_hash_rounds)
        service.set_password(self.require_caller(), user, new_hash)
        self.ok(None)


class UserTokensHandler(_AdminHandler):
    answers = {"GET": list_of(service.TokenView)}
    access = {"GET": GLOBAL_ADMIN}

    def get(self, id: int) -> None:
        """A user's personal access tokens, metadata only (global admin)."""
        self.ok(list_tokens(id))


class UserTokenHandler(_AdminHandler):
    answers = {"DELETE": NOTHING}
    access = {"DELETE": GLOBAL_ADMIN}

    def delete(self, id: int, tokenId: int) -> None:
        """Revoke one of a user's personal access tokens (global admin)."""
        revoke_token(self.require_caller(), id, tokenId)
        self.ok(None)


ROUTES = [
    route("/api/v1/auth/users/{id}/disable", DisableUserHandler),
    route("/api/v1/auth/users/{id}/enable", EnableUserHandler),
    route("/api/v1/auth/users/{id}/role", UserRoleHandler),
    route("/api/v1/auth/users/{id}/reset-password", ResetPasswordHandler),
    route("/api/v1/auth/users/{id}/tokens", UserTokensHandler),
    route("/api/v1/auth/users/{id}/tokens/{tokenId}", UserTokenHandler),
]
