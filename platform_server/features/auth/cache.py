"""Resolved JWTs and workspace roles, kept until any auth-relevant row changes (or a few seconds pass).

Every request resolves its token (JWT verify + user lookup) and its workspace role (membership
lookup); on a hot route that was most of the request's cost. SQLite triggers bump one counter,
`auth_epoch.n`, whenever a user, personal access token or membership row changes, by any code
path; the cache compares that counter (one indexed read) before answering and empties itself when
it moved, so a password change, a disabled user or a changed role takes effect on the next request.

Reading that counter is itself a query, so the cache reads it only when this process changed
`auth_epoch` since the last read (a row-change hook counts that, triggers included, without a query)
or once `EPOCH_RECHECK_S` passed (changes made by another process, such as the command line).
A cached principal therefore costs no query.
"""

from __future__ import annotations

import time
from typing import Callable

import peewee

from platform_server.db import database
from platform_server.ports import changes
from platform_server.web.context import Principal

TTL_S = 10.0
EPOCH_RECHECK_S = 1.0  # other processes' changes are seen within this
PENDING_S = 2.0  # how long a hooked change may take to commit before it counts as rolled back
MAX_ENTRIES = 10_000

_BUMP = "BEGIN UPDATE auth_epoch SET n = n + 1 WHERE id = 1; END"
_TRIGGERS = {
    "auth_epoch_user_update": 'AFTER UPDATE OF username, password_hash, nickname, role, enabled, deleted, password_changed_at ON "user"',
    "auth_epoch_user_delete": 'AFTER DELETE ON "user"',
    "auth_epoch_token_update": "AFTER UPDATE OF user_id, token_hash, expires_at, deleted_at ON access_token",
    "auth_epoch_token_delete": "AFTER DELETE ON access_token",
    "auth_epoch_member_insert": "AFTER INSERT ON workspace_member",
    "auth_epoch_member_update": "AFTER UPDATE ON workspace_member",
    "auth_epoch_member_delete": "AFTER DELETE ON workspace_member",
}


def create_epoch(db: peewee.Database) -> None:
    """Migration step: the counter row and the triggers that bump it."""
    db.execute_sql("CREATE TABLE IF NOT EXISTS auth_epoch (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)")
    db.execute_sql("INSERT INTO auth_epoch (id, n) VALUES (1, 0) ON CONFLICT DO NOTHING")
    if isinstance(db, peewee.PostgresqlDatabase):  # PostgreSQL's triggers call a function, once per statement
        db.execute_sql(
            "CREATE OR REPLACE FUNCTION auth_epoch_bump() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN UPDATE auth_epoch SET n = n + 1 WHERE id = 1; RETURN NULL; END $$"
        )
        for name, when in _TRIGGERS.items():
            db.execute_sql(f"CREATE OR REPLACE TRIGGER {name} {when} FOR EACH STATEMENT EXECUTE FUNCTION auth_epoch_bump()")
        return
    for name, when in _TRIGGERS.items():
        db.execute_sql(f"CREATE TRIGGER IF NOT EXISTS {name} {when} {_BUMP}")


changes.subscribe("auth_epoch")


def current_epoch() -> int:
    row = database.execute_sql("SELECT n FROM auth_epoch WHERE id = 1").fetchone()
    return int(row[0]) if row else -1


class AuthCache:
    """Token -> principal (JWTs only) and (user, workspace) -> role, valid while the epoch holds."""

    def __init__(
        self,
        resolve: Callable[[str], Principal | None],
        member_role: Callable[[int, int], str | None],
        ttl_s: float = TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._resolve = resolve
        self._member_role = member_role
        self.ttl_s = ttl_s
        self.clock = clock
        self._epoch = -1
        self._local_seen = -1  # changes.version("auth_epoch") when the counter was last known current
        self._recheck_at = 0.0
        self._pending_since: float | None = None
        self._epoch_before = -1
        self._principals: dict[str, tuple[float, Principal]] = {}
        self._roles: dict[tuple[int, int], tuple[float, str | None]] = {}

    def _check_epoch(self) -> None:
        local = changes.version("auth_epoch")
        now = time.monotonic()
        if local == self._local_seen and now < self._recheck_at:
            return
        if local != self._local_seen and self._pending_since is None:
            self._pending_since, self._epoch_before = now, self._epoch
        epoch = current_epoch()
        self._recheck_at = now + EPOCH_RECHECK_S
        if epoch != self._epoch:
            self.clear()
            self._epoch = epoch
        if self._pending_since is None:
            return
        # The hook fires before the write commits: read the counter on each request until it moved
        # past its value before the change (or the write evidently rolled back).
        if epoch != self._epoch_before or now - self._pending_since > PENDING_S:
            self._local_seen = local
            self._pending_since = None

    def clear(self) -> None:
        self._principals.clear()
        self._roles.clear()

    def authenticate(self, token: str) -> Principal | None:
        """The token's principal; JWTs are cached until their expiry or the TTL, PATs always resolved."""
        self._check_epoch()
        now = self.clock()
        hit = self._principals.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        principal = self._resolve(token)
        if principal is not None and principal.token_kind == "jwt" and principal.token_exp is not None:
            if len(self._principals) >= MAX_ENTRIES:
                self._principals.clear()
            self._principals[token] = (min(now + self.ttl_s, principal.token_exp), principal)
        else:
            self._principals.pop(token, None)
        return principal

    def member_role(self, user_id: int, workspace_id: int) -> str | None:
        """The user's membership role in the workspace (None: not a member)."""
        self._check_epoch()
        now = self.clock()
        key = (user_id, workspace_id)
        hit = self._roles.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        role = self._member_role(user_id, workspace_id)
        if len(self._roles) >= MAX_ENTRIES:
            self._roles.clear()
        self._roles[key] = (now + self.ttl_s, role)
        return role
