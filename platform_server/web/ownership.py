"""Who may change a shared object of a workspace: its creator, a workspace admin or owner, or a global admin."""

from __future__ import annotations

from platform_server.web.context import Caller
from platform_server.web.errors import Forbidden


def may_change(caller: Caller, creator_user_id: int | None) -> bool:
    """True for the object's creator and for workspace admins (a global admin counts as owner everywhere)."""
    # A row with no recorded creator (made before creators were kept, or by the system) is admins' only.
    return caller.is_global_admin or caller.has_role("admin") or (creator_user_id is not None and creator_user_id == caller.user_id)


def require_creator_or_admin(caller: Caller, creator_user_id: int | None, noun: str) -> None:
    """403 unless the caller may edit, publish or delete this object; reading is not checked here."""
    if not may_change(caller, creator_user_id):
        raise Forbidden(f"Only the {noun}'s creator or a workspace admin can change it")
