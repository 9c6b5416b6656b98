"""Goals: one open goal per conversation, owned by the conversation's owner, with a state machine.

States: `active` <-> `paused` (pause / resume); `completed`, `exhausted` (PATCH `status`) and
`abandoned` (abandon) are terminal. A refused transition answers 400 naming the current state.
"""

from __future__ import annotations

from typing import Any

from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.conversations import service as conversations
from platform_server.features.goals.models import Goal, GoalEvaluation, GoalEvent
from platform_server.features.goals.schemas import MAX_CRITERIA, UPDATED, GoalCreate, GoalUpdate
from platform_server.memo import memo_on
from platform_server.serialize import Fields, flag, ident, items, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, Forbidden, NotFound, parse_long

STATUSES = ("active", "paused", "completed", "abandoned", "exhausted")
OPEN = ("active", "paused")
TERMINAL = ("completed", "abandoned", "exhausted")


def _criteria(items: list[str] | None) -> list[str]:
    out = []
    for i, item in enumerate(items or []):
        text = item.strip()
        if not text or len(text) > 500:
            raise BadRequest(f"criteria.{i}: must be 1-500 characters")
        out.append(text)
    return out


def _title(value: str) -> str:
    if not value.strip():
        raise BadRequest("title: must not be blank")
    return value.strip()


to_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    userId=ident("user_id"),
    conversationId="conversation_id",
    agentId=ident("agent_id"),
    title="title",
    criteria=items("criteria"),
    status="status",
    maxAttempts="max_attempts",
    attempts=lambda g: GoalEvaluation.select().where(GoalEvaluation.goal == g.id).count(),
    lastEvaluation=lambda g: _last_evaluation(g),
    closedAt=when("closed_at"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


evaluation_dict = Fields(
    id=ident("id"),
    messageId=ident("message_id"),
    progress="progress",
    completed=flag("completed"),
    blocked=flag("blocked"),
    reason="reason",
    model="model",
    createTime=when("create_time"),
)


def _last_evaluation(g: Goal) -> dict[str, Any] | None:
    e = GoalEvaluation.select().where(GoalEvaluation.goal == g.id).order_by(GoalEvaluation.id.desc()).first()
    return evaluation_dict(e) if e is not None else None


event_dict = Fields(
    id=ident("id"),
    goalId=ident("goal_id"),
    type="type",
    fromStatus="from_status",
    toStatus="to_status",
    detail="detail",
    actorUserId=ident("actor_user_id"),
    createTime=when("create_time"),
)


def _event(g: Goal, caller: Caller, type_: str, before: str | None, detail: dict[str, Any] | None = None) -> None:
    GoalEvent.create(goal=g.id, type=type_, from_status=before, to_status=g.status, detail=detail, actor_user_id=caller.user_id)


def _owned(caller: Caller, goal_id: int) -> Goal:
    """The goal in the caller's workspace; 404 when absent, 403 when another user's."""
    g = Goal.get_or_none((Goal.id == goal_id) & (Goal.workspace_id == caller.workspace_id))
    if g is None:
        raise NotFound("Goal not found")
    if g.user_id != caller.user_id:
        raise Forbidden("Not the owner of this goal's conversation")
    return g


def _open_goal(user_id: int, conversation_key: str) -> Goal | None:
    return (
        Goal.select()
        .where((Goal.user_id == user_id) & (Goal.conversation_key == conversation_key) & Goal.status.in_(OPEN))
        .order_by(Goal.id.desc())
        .first()
    )


def create(caller: Caller, req: GoalCreate) -> dict[str, Any]:
    """A goal for one of the caller's conversations; at most one open goal per conversation."""

    cid = conversations.validate_id(req.conversationId)
    conv = conversations.check_owner(caller.user_id, cid)
    if conv is None or conv.workspace_id != caller.workspace_id:
        raise NotFound("Conversation not found")
    agent_id = parse_long("agentId", str(req.agentId))
    if not Agent.select().where((Agent.id == agent_id) & (Agent.workspace_id == caller.workspace_id)).exists():
        raise NotFound("agentId: no such agent in this workspace")
    title, criteria = _title(req.title), _criteria(req.criteria)
    with database.atomic():
        existing = _open_goal(caller.user_id, conv.key)
        if existing is not None:
            raise Conflict(f"The conversation already has an open goal ({existing.id}, {existing.status})")
        g = Goal.create(
            workspace_id=caller.workspace_id,
            user_id=caller.user_id,
            conversation_key=conv.key,
            conversation_id=cid,
            agent_id=agent_id,
            title=title,
            criteria=criteria,
            max_attempts=req.maxAttempts,
        )
        _event(g, caller, "created", None, {"title": title, "criteria": criteria})
        audit.record(caller, "CREATE", "GOAL", g.id, title[:200])
    return to_dict(g)


def list_goals(caller: Caller, status: str | None) -> list[dict[str, Any]]:
    """The caller's goals in the workspace, newest first."""
    q = Goal.select().where((Goal.user_id == caller.user_id) & (Goal.workspace_id == caller.workspace_id))
    if status is not None:  # an empty value is not one of the enum
        if status not in STATUSES:
            raise BadRequest(f"status: must be one of {', '.join(STATUSES)}")
        q = q.where(Goal.status == status)
    return [to_dict(g) for g in q.order_by(Goal.id.desc())]


def by_conversation(caller: Caller, conversation_id: str) -> dict[str, Any] | None:
    """The conversation's open goal (active or paused), or None; 403 for another user's conversation."""

    cid = conversations.validate_id(conversation_id)
    conversations.check_owner(caller.user_id, cid)
    g = _open_goal(caller.user_id, conversations.key_for(caller.user_id, cid))
    return to_dict(g) if g is not None and g.workspace_id == caller.workspace_id else None


def get(caller: Caller, goal_id: int) -> dict[str, Any]:
    """The goal (with its attempts and last evaluation; every evaluation is in its events)."""
    return to_dict(_owned(caller, goal_id))


def events(caller: Caller, goal_id: int) -> list[dict[str, Any]]:
    """Every state and criteria change of the goal, oldest first."""
    g = _owned(caller, goal_id)
    return [event_dict(e) for e in GoalEvent.select().where(GoalEvent.goal == g.id).order_by(GoalEvent.id)]


def _require(g: Goal, allowed: tuple[str, ...], action: str) -> None:
    """The goal's stored status allows the action, else a 409 (the request's shape is fine: the goal's state is not)."""
    if g.status not in allowed:
        raise Conflict(f"{action}: the goal is {g.status}")


def _save(g: Goal, caller: Caller, type_: str, before: str, detail: dict[str, Any] | None, note: str) -> dict[str, Any]:
    g.update_time = utcnow()
    if g.status in TERMINAL and before not in TERMINAL:
        g.closed_at = g.update_time
    with database.atomic():
        g.save()
        _event(g, caller, type_, before, detail)
        audit.record(caller, "UPDATE", "GOAL", g.id, note)
    return to_dict(g)


def update(caller: Caller, goal_id: int, req: GoalUpdate) -> dict[str, Any]:
    """Sparse update of a non-terminal goal; `status` may close it as completed or exhausted."""
    if all(getattr(req, f) is None for f in UPDATED):  # the document's anyOf (schemas.GoalUpdate)
        raise BadRequest("body: nothing to update (title, criteria, maxAttempts or status)")
    g = _owned(caller, goal_id)
    _require(g, OPEN, "Only an active or paused goal can be updated")
    before = g.status
    with database.atomic():
        changes: dict[str, Any] = {}
        if req.title is not None and _title(req.title) != g.title:
            changes["title"] = {"from": g.title, "to": _title(req.title)}
            g.title = _title(req.title)
        if req.criteria is not None:
            criteria = _criteria(req.criteria)
            if criteria != list(g.criteria or []):
                GoalEvent.create(
                    goal=g.id,
                    type="criteria_updated",
                    from_status=before,
                    to_status=before,
                    detail={"from": list(g.criteria or []), "to": criteria},
                    actor_user_id=caller.user_id,
                )
                g.criteria = criteria
        if req.maxAttempts is not None and req.maxAttempts != g.max_attempts:
            changes["maxAttempts"] = {"from": g.max_attempts, "to": req.maxAttempts}
            g.max_attempts = req.maxAttempts
        if req.status is not None:
            g.status = req.status
            changes["status"] = req.status
        kind = req.status if req.status is not None else "updated"
        return _save(g, caller, kind, before, changes or None, f"goal updated ({', '.join(req.model_fields_set)})")


def add_criterion(caller: Caller, goal_id: int, criterion: str) -> dict[str, Any]:
    """Append a sub-criterion; only an active goal takes one."""
    g = _owned(caller, goal_id)
    _require(g, ("active",), "Criteria can only be added to an active goal")
    text = _criteria([criterion])[0]
    if len(g.criteria or []) >= MAX_CRITERIA:
        raise Conflict(f"criterion: the goal already has {MAX_CRITERIA} criteria, the most it may have")
    g.criteria = list(g.criteria or []) + [text]
    return _save(g, caller, "criterion_added", g.status, {"criterion": text, "index": len(g.criteria) - 1}, "criterion added")


def pause(caller: Caller, goal_id: int) -> dict[str, Any]:
    g = _owned(caller, goal_id)
    _require(g, ("active",), "Only an active goal can be paused")
    g.status = "paused"
    return _save(g, caller, "paused", "active", None, "paused")


def resume(caller: Caller, goal_id: int) -> dict[str, Any]:
    g = _owned(caller, goal_id)
    _require(g, ("paused",), "Only a paused goal can be resumed")
    g.status = "active"
    return _save(g, caller, "resumed", "paused", None, "resumed")


def abandon(caller: Caller, goal_id: int, reason: str | None) -> dict[str, Any]:
    g = _owned(caller, goal_id)
    _require(g, OPEN, "Only an active or paused goal can be abandoned")
    before, g.status = g.status, "abandoned"
    return _save(g, caller, "abandoned", before, {"reason": reason} if reason else None, "abandoned")


@memo_on(Goal)
def _users_with_active_goals() -> frozenset[int]:
    return frozenset(row.user_id for row in Goal.select(Goal.user_id).where(Goal.status == "active").distinct())


@memo_on(Goal)
def context_for(user_id: int, conversation_id: str) -> str | None:
    """The active goal of a conversation as text for the agent's context, or None (paused: None)."""
    if user_id not in _users_with_active_goals():
        return None  # every turn asks: most users have no goal running

    g = _open_goal(user_id, conversations.key_for(user_id, conversation_id))
    if g is None or g.status != "active":
        return None
    lines = ["## Current goal", "", g.title]
    if g.criteria:
        lines += ["", "Done when:"] + [f"- {c}" for c in g.criteria]
    return "\n".join(lines)
