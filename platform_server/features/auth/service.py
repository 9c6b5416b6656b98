"""Users, passwords, login rate limits, personal access tokens and token resolution."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import secrets
import threading
import time
from collections import defaultdict, deque
from typing import Any

import bcrypt
import peewee

from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.auth.models import AccessToken, User
from platform_server.features.auth.tokens import JwtIssuer
from platform_server.features.workspaces import service as workspaces
from platform_server.features.workspaces.service import member_role
from platform_server.ports.database import storage_fault
from platform_server.serialize import Fields, flag, ident, typed, when
from platform_server.web.context import Caller, Principal
from platform_server.web.errors import Conflict, Forbidden, NotFound, TooManyRequests, Unauthorized

PAT_PREFIX = "mc_"
_LAST_USED_RESOLUTION = dt.timedelta(seconds=60)


# ---- passwords (blocking: call from an executor) ---------------------------


def check_rounds(rounds: int) -> None:
    """Refuse a bcrypt cost outside 4..15 at start (config `password_hash_rounds`)."""
    if not 4 <= rounds <= 15:
        raise SystemExit("password_hash_rounds must be between 4 and 15")


BCRYPT_BYTES = 72  # bcrypt reads no further


def _bcrypt_input(password: str) -> bytes:
    """What bcrypt hashes: the password's UTF-8 bytes, or past bcrypt's 72 the base64 of their SHA-256 (44 bytes),
    so every character of a long passphrase counts and the document's length limit is the only one. Passwords
    over 72 bytes were refused before, so no stored hash was made from a cut one: the length picks the form."""
    raw = password.encode("utf-8", "surrogatepass")  # a lone surrogate (valid JSON) is hashed, not a 500
    return raw if len(raw) <= BCRYPT_BYTES else base64.b64encode(hashlib.sha256(raw).digest())


def hash_password(password: str, rounds: int = 10) -> str:
    return bcrypt.hashpw(_bcrypt_input(password), bcrypt.gensalt(rounds=rounds)).decode()


def check_password(password: str, password_hash: str) -> bool:
    try:
        return bcrypt.checkpw(_bcrypt_input(password), password_hash.encode())
    except ValueError:
        return False


_DUMMY_HASHES: dict[int, str] = {}
_DUMMY_LOCK = threading.Lock()


def dummy_hash(rounds: int) -> str:
    """A hash of the configured cost to check when the user does not exist, so timing does not reveal usernames.

    Computed once (the server does it right after it starts listening); a login that arrives while it is
    being computed waits for that computation instead of starting another."""
    with _DUMMY_LOCK:
        if rounds not in _DUMMY_HASHES:
            _DUMMY_HASHES[rounds] = hash_password("not-a-password", rounds)
        return _DUMMY_HASHES[rounds]


def check_login(password: str, user: User | None, rounds: int) -> bool:
    """The password check of a login (blocking); an unknown user costs the same bcrypt work as a known one."""
    return check_password(password, user.password_hash if user else dummy_hash(rounds))


def login_slowdown(recent_failures: int, per_user: int) -> float:
    """The wait before an attempt for a username with this many recent failures: 0 below `per_user`, then doubling."""
    extra = recent_failures - per_user
    return 0.0 if extra < 0 else min(LoginLimiter.SLOWDOWN_MAX_S, LoginLimiter.SLOWDOWN_BASE_S * 2**extra)


class LoginLimiter:
    """Failed logins in a sliding window: a lockout per (username, client address) and per address, a slowdown per username.

    A stranger's failures lock only the stranger's own address out (the pair and, past its own
    limit, the address); the real user still logs in from theirs. Guessing one username from many
    addresses is slowed instead: each attempt for a username with `per_user` or more recent failures
    (from anywhere) waits SLOWDOWN_BASE_S, doubling with each further failure up to SLOWDOWN_MAX_S.
    """

    SLOWDOWN_BASE_S = 0.5
    SLOWDOWN_MAX_S = 8.0
    MAX_KEYS = 100_000  # forgotten keys are dropped past this many, so a username spray cannot grow memory

    def __init__(self, per_user: int, per_address: int, window_s: float) -> None:
        self.per_user, self.per_address, self.window_s = per_user, per_address, window_s
        self._failures: dict[str, deque[float]] = defaultdict(deque)
        self._locked_until: dict[str, float] = {}

    @staticmethod
    def _pair(username: str, address: str) -> str:
        return f"p:{username.lower()}|{address}"

    def _recent(self, key: str, now: float) -> deque[float] | None:
        q = self._failures.get(key)
        while q and q[0] < now - self.window_s:
            q.popleft()
        return q

    def _locked(self, key: str, now: float) -> bool:
        return self._locked_until.get(key, 0) > now

    def check(self, username: str, address: str) -> None:
        """429 while this username is locked for this address, or this address is locked."""
        now = time.monotonic()
        if self._locked(self._pair(username, address), now) or self._locked("a:" + address, now):
            raise TooManyRequests("Too many failed login attempts, try again later")

    def slowdown(self, username: str) -> float:
        """Seconds the next attempt for this username waits (0 below `per_user` recent failures)."""
        q = self._recent("u:" + username.lower(), time.monotonic())
        return login_slowdown(len(q or ()), self.per_user)

    # The login route's side (features/auth/limits.py LoginLimits): the same calls, awaitable like the Redis limiter's.
    async def before_login(self, username: str, address: str) -> float:
        self.check(username, address)
        return self.slowdown(username)

    async def failed_login(self, username: str, address: str) -> None:
        self.failed(username, address)

    async def succeeded_login(self, username: str, address: str) -> None:
        self.succeeded(username, address)

    async def close(self) -> None:
        pass

    def failed(self, username: str, address: str) -> None:
        now = time.monotonic()
        if len(self._failures) > self.MAX_KEYS:
            self._forget(now)
        for key, limit in ((self._pair(username, address), self.per_user), ("a:" + address, self.per_address), ("u:" + username.lower(), 0)):
            q = self._failures[key]
            q.append(now)
            while q and q[0] < now - self.window_s:
                q.popleft()
            if limit and len(q) >= limit:  # the username alone is never locked, only slowed
                self._locked_until[key] = now + self.window_s
                q.clear()

    def succeeded(self, username: str, address: str) -> None:
        """The right password: this pair's count and the username's slowdown start again."""
        self._failures.pop(self._pair(username, address), None)
        self._failures.pop("u:" + username.lower(), None)

    def _forget(self, now: float) -> None:
        for key in [k for k in self._failures if not self._recent(k, now)]:
            del self._failures[key]
        for key in [k for k, until in self._locked_until.items() if until <= now]:
            del self._locked_until[key]


# ---- users -----------------------------------------------------------------

# A user as the API shows it: never the password or its hash.
user_to_dict = Fields(
    id=ident("id"),
    username=typed("username", str),
    nickname=typed("nickname", str),
    email=typed("email", str | None),
    role=typed("role", str),
    enabled=flag("enabled"),
    createTime=when("create_time"),
)
UserView = user_to_dict.view("UserView")


def login_response(u: User, token: str) -> dict[str, Any]:
    return {"id": str(u.id), "token": token, "username": u.username, "nickname": u.nickname, "role": u.role}


def find_active_user(username: str) -> User | None:
    return User.get_or_none((User.username == username) & (User.deleted == False))  # noqa: E712


def has_admin() -> bool:
    return User.select().where((User.role == "admin") & (User.deleted == False)).exists()  # noqa: E712


def create_user(
    actor: Caller | None,
    username: str,
    password_hash: str,
    nickname: str | None = None,
    email: str | None = None,
    role: str = "user",
    enabled: bool = True,
    workspace_role: str = "member",
) -> User:
    """Create a user and make them a member of workspace 1 (owner for the first admin)."""

    with database.atomic():
        if User.select().where(User.username == username).exists():
            raise Conflict("username: already exists")
        user = User.create(
            username=username,
            password_hash=password_hash,
            nickname=nickname or username,
            email=email,
            role=role,
            enabled=enabled,
        )
        workspaces.add_membership(1, user.id, workspace_role)
        audit.record(actor, "CREATE", "USER", user.id, f"user {username} ({role})", workspace_id=1)
    return user


def list_users() -> list[dict[str, Any]]:
    return [user_to_dict(u) for u in User.select().where(User.deleted == False).order_by(User.id)]  # noqa: E712


def set_password(actor: Caller, user: User, new_hash: str) -> None:
    """Replace the password; JWTs issued before now stop working and the user's personal access tokens are revoked.

    Stored times are truncated to the millisecond, so the mark is set one millisecond ahead: every
    token issued up to now has an earlier `iat`.
    """
    with database.atomic():
        changed = utcnow() + dt.timedelta(milliseconds=1)
        User.update(password_hash=new_hash, password_changed_at=changed, update_time=utcnow()).where(User.id == user.id).execute()
        revoked = AccessToken.update(deleted_at=utcnow()).where((AccessToken.user == user.id) & AccessToken.deleted_at.is_null()).execute()
        audit.record(actor, "UPDATE", "USER", user.id, f"password changed; {revoked} access token(s) revoked")


# ---- token resolution ------------------------------------------------------


def authenticate(token: str, jwt_issuer: JwtIssuer) -> Principal | None:
    """Resolve a JWT or PAT to its principal; None when invalid, expired, revoked or the user is disabled."""
    if token.startswith(PAT_PREFIX):
        return _authenticate_pat(token)
    claims = jwt_issuer.verify(token)
    if claims is None:
        return None
    user = User.get_or_none(User.id == int(claims["userId"]))
    if user is None or not user.enabled or user.deleted or user.username != claims["sub"]:
        return None
    if float(claims["iat"]) < user.password_changed_at.replace(tzinfo=dt.timezone.utc).timestamp():
        return None  # issued before the last password change
    return Principal(user.id, user.username, user.role, "jwt", float(claims["exp"]), user.nickname)


def _authenticate_pat(token: str) -> Principal | None:
    digest = hashlib.sha256(token.encode()).hexdigest()
    row = AccessToken.select(AccessToken, User).join(User).where((AccessToken.token_hash == digest) & AccessToken.deleted_at.is_null()).first()
    if row is None:
        return None
    now = utcnow()
    user = row.user
    if (row.expires_at is not None and row.expires_at <= now) or not user.enabled or user.deleted:
        return None
    if row.last_used_at is None or now - row.last_used_at > _LAST_USED_RESOLUTION:
        try:
            AccessToken.update(last_used_at=now).where(AccessToken.id == row.id).execute()
        except peewee.DatabaseError as exc:  # a read must not fail on a lock or a full disk for a timestamp
            if storage_fault(exc) is None:
                raise
    return Principal(user.id, user.username, user.role, "pat", None, user.nickname)


# ---- personal access tokens --------------------------------------------------

pat_to_dict = Fields(
    id=ident("id"),
    name=typed("name", str),
    tokenPrefix=typed("token_prefix", str),
    createTime=when("create_time"),
    expiresAt=when("expires_at"),
    lastUsedAt=when("last_used_at"),
)
TokenView = pat_to_dict.view("TokenView")


def create_pat(caller: Caller, name: str, expires_at: dt.datetime | None) -> dict[str, Any]:
    """Create a PAT; the plaintext is returned here and never again. Only a login (JWT) mints one, never a PAT."""
    if caller.principal.token_kind == "pat":
        raise Forbidden("A personal access token cannot create tokens; log in to create one")
    if expires_at is not None and expires_at <= utcnow():
        raise Conflict("expiresAt: must be in the future")  # the clock's state, not the document's rule: 409
    plaintext = PAT_PREFIX + secrets.token_urlsafe(32)
    row = AccessToken(
        user=caller.user_id,
        name=name,
        token_hash=hashlib.sha256(plaintext.encode()).hexdigest(),
        token_prefix=plaintext[:8],
        expires_at=expires_at,
    )
    audit.save(caller, "CREATE", "TOKEN", row, f"personal access token {name}")
    return {
        "id": str(row.id),
        "name": row.name,
        "token": plaintext,
        "tokenPrefix": row.token_prefix,
        "createTime": iso(row.create_time),
        "expiresAt": iso(row.expires_at),
    }


def list_pats(user_id: int) -> list[dict[str, Any]]:
    q = AccessToken.select().where((AccessToken.user == user_id) & AccessToken.deleted_at.is_null())
    return [pat_to_dict(t) for t in q.order_by(AccessToken.create_time.desc())]


def revoke_pat(caller: Caller, token_id: int) -> None:
    """Soft-delete one of the caller's own PATs."""
    with database.atomic():
        updated = (
            AccessToken.update(deleted_at=utcnow())
            .where((AccessToken.id == token_id) & (AccessToken.user == caller.user_id) & AccessToken.deleted_at.is_null())
            .execute()
        )
        if not updated:
            raise NotFound("Token not found")
        audit.record(caller, "DELETE", "TOKEN", token_id, "personal access token revoked")


def get_user(user_id: int) -> User:
    user = User.get_or_none((User.id == user_id) & (User.deleted == False))  # noqa: E712
    if user is None:
        raise Unauthorized()
    return user


def acting_caller(user_id: int, workspace_id: int) -> Caller | None:
    """The caller background work acts as (a workflow or team run's starter); None when that user lost access."""

    user = User.get_or_none(User.id == user_id)
    if user is None or not user.enabled or user.deleted:
        return None
    principal = Principal(user.id, user.username, user.role, "internal", None, user.nickname)
    role = "owner" if principal.is_global_admin else member_role(user.id, workspace_id)
    return Caller(principal, workspace_id, role) if role else None
