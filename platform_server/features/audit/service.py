"""Record audit events and page through them."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from platform_server.db import BaseModel, database
from platform_server.features.audit.models import AuditEvent
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import is_integer_text
from platform_server.web.pagination import PageRequest, paginate

NO_WORKSPACE = 0  # user-level events of a caller outside the request's workspace


def record(
    actor: Caller | None,
    action: str,
    resource_type: str,
    resource_id: Any,
    detail: str = "",
    workspace_id: int | None = None,
) -> None:
    """Write one audit event (call inside the same transaction as the change).

    Without an explicit workspace the event goes to the request's workspace when the actor has a
    role there, to workspace 1 for system actions (no actor), and to no workspace (0) otherwise, so
    an `X-Workspace-Id` header cannot file events into a workspace the actor does not belong to.
    """
    if workspace_id is None:
        if actor is None:
            workspace_id = 1
        else:
            workspace_id = actor.workspace_id if actor.workspace_role else NO_WORKSPACE
    AuditEvent.create(
        workspace_id=workspace_id,
        actor_user_id=actor.user_id if actor else None,
        actor_username=actor.username if actor else None,
        action=action,
        resource_type=resource_type,
        resource_id=None if resource_id is None else str(resource_id),
        detail=detail[:500],
    )


def save(
    actor: Caller | None,
    action: Literal["CREATE", "UPDATE", "DELETE"],
    resource_type: str,
    row: BaseModel,
    detail: str = "",
    workspace_id: int | None = None,
) -> None:
    """Write one row and its audit event in one transaction: CREATE inserts the row, UPDATE saves it,
    DELETE deletes it; the event names the row's id. Set the fields (and `update_time`) before calling."""
    with database.atomic():
        if action == "CREATE":
            row.save(force_insert=True)
        elif action == "DELETE":
            row.delete_instance()
        else:
            row.save()
        record(actor, action, resource_type, row.id, detail, workspace_id)


to_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    actorUserId=ident("actor_user_id"),
    actorUsername="actor_username",
    action="action",
    resourceType="resource_type",
    resourceId="resource_id",
    detail="detail",
    createTime=when("create_time"),
)
# The answer model (the map reads plain attributes when serving; their types are given here).
AuditEventView = to_dict.view(
    "AuditEventView",
    actorUsername=(str | None, ...),
    action=(str, ...),
    resourceType=(str, ...),
    resourceId=(str | None, ...),
    detail=(str, ...),
)


def page_events(
    workspace_id: int,
    req: PageRequest,
    action: str | None = None,
    resource_type: str | None = None,
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
    actor: str | None = None,
    resource_id: str | None = None,
) -> dict[str, Any]:
    """Newest-first page of a workspace's audit events with optional filters (actor: username or user id)."""
    q = AuditEvent.select().where(AuditEvent.workspace_id == workspace_id)
    if actor:
        name = actor.strip()
        by_name = AuditEvent.actor_username == name
        # ASCII digits only: isdigit() also passes '²', which int() refuses (a 500)
        q = q.where(by_name | (AuditEvent.actor_user_id == int(name)) if is_integer_text(name) and 0 < len(name) <= 18 else by_name)
    if resource_id:
        q = q.where(AuditEvent.resource_id == resource_id.strip())
    if action:
        q = q.where(AuditEvent.action == action.upper())
    if resource_type:
        q = q.where(AuditEvent.resource_type == resource_type.upper())
    if start:
        q = q.where(AuditEvent.create_time >= start)
    if end:
        q = q.where(AuditEvent.create_time <= end)
    return paginate(q.order_by(AuditEvent.create_time.desc(), AuditEvent.id.desc()), req, to_dict)
