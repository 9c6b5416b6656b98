"""What the web layer knows about a request's caller, and the functions app.py hands it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

ROLE_RANK = {"viewer": 1, "member": 2, "admin": 3, "owner": 4}
WORKSPACE_ROLES = tuple(ROLE_RANK)

# Access levels a handler method may declare (besides the workspace roles above).
PUBLIC = "public"  # no token needed
OPTIONAL = "optional"  # token read when present, never required
LOGIN = "login"  # any authenticated principal
GLOBAL_ADMIN = "global_admin"


@dataclass(frozen=True)
class Principal:
    user_id: int
    username: str
    role: str  # "admin" (global admin) or "user"
    token_kind: str  # "jwt" or "pat"
    token_exp: float | None = None  # JWT expiry (epoch seconds)
    nickname: str = ""

    @property
    def is_global_admin(self) -> bool:
        return self.role == "admin"


@dataclass
class Caller:
    """The authenticated principal with the workspace the request acts in."""

    principal: Principal
    workspace_id: int
    workspace_role: str | None  # effective role: a global admin counts as owner

    @property
    def user_id(self) -> int:
        return self.principal.user_id

    @property
    def username(self) -> str:
        return self.principal.username

    @property
    def is_global_admin(self) -> bool:
        return self.principal.is_global_admin

    def has_role(self, role: str) -> bool:
        return ROLE_RANK.get(self.workspace_role or "", 0) >= ROLE_RANK[role]


@dataclass
class WebServices:
    """Functions the feature layer provides to the web layer (so web/ imports no feature)."""

    authenticate: Callable[[str], Principal | None]
    workspace_role: Callable[[int, int], str | None]
    renew_token: Callable[[Principal], str]
    extras: dict[str, object] = field(default_factory=dict)
    feature_enabled: Callable[[str], bool] = lambda name: True  # a feature flag's state
