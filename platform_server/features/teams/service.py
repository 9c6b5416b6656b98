"""Teams and team runs: storage, views, listing with cursor pages, cancellation's bookkeeping."""

from __future__ import annotations

from typing import Any

import peewee

from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.conversations import service as conversations
from platform_server.features.teams.models import Team, TeamRun
from platform_server.serialize import Fields, ident, items, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound, Unprocessable
from platform_server.web.ownership import require_creator_or_admin

ACTIVE = ("planning", "running", "awaiting_review", "finalizing")
TERMINAL = ("completed", "partial", "failed", "cancelled")
MAX_MEMBERS = 10
LIST_LIMIT = 100
PAGE_DEFAULT = 20


# ---- teams --------------------------------------------------------------------------


team_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    name="name",
    description="description",
    leadAgentId=ident("lead_agent_id"),
    memberAgentIds=items("member_agent_ids"),
    creatorUserId=ident("creator_user_id"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


def get_team_row(caller: Caller, team_id: int) -> Team:
    team = Team.get_or_none((Team.id == team_id) & (Team.workspace_id == caller.workspace_id) & (Team.deleted == False))  # noqa: E712
    if team is None:
        raise NotFound("Team not found")
    return team


def check_agents(caller: Caller, lead: int, members: list[int]) -> list[str]:
    """The members to store. Every agent must be one of the workspace's (404 otherwise: the body names rows);
    the lead listed among the members too counts once, as the lead; at least one other member remains."""
    if len(members) > MAX_MEMBERS:
        raise BadRequest(f"memberAgentIds: at most {MAX_MEMBERS} members")
    if len(set(members)) != len(members):
        raise BadRequest("memberAgentIds: duplicate agent")
    found = {a.id for a in Agent.select(Agent.id).where((Agent.workspace_id == caller.workspace_id) & Agent.id.in_([lead, *members]))}
    for agent_id in (lead, *members):
        if agent_id not in found:
            raise NotFound(f"Agent {agent_id} is not an agent of this workspace")
    members = [m for m in members if m != lead]
    if not members:  # a rule between two fields OpenAPI 3.0 cannot state: a 422 the operations document
        raise Unprocessable("memberAgentIds: at least one member besides the lead is required")
    return [str(m) for m in members]


def list_teams(caller: Caller) -> list[dict[str, Any]]:
    q = Team.select().where((Team.workspace_id == caller.workspace_id) & (Team.deleted == False))  # noqa: E712
    return [team_dict(t) for t in q.order_by(Team.id.desc())]


def create_team(caller: Caller, name: str, description: str, lead: int, members: list[int]) -> dict[str, Any]:
    ids = check_agents(caller, lead, members)
    team = Team(
        workspace_id=caller.workspace_id,
        name=name.strip(),
        description=description,
        lead_agent_id=lead,
        member_agent_ids=ids,
        creator_user_id=caller.user_id,
    )
    audit.save(caller, "CREATE", "TEAM", team, f"team '{team.name}' created")
    return team_dict(team)


def update_team(caller: Caller, team_id: int, fields: dict[str, Any]) -> dict[str, Any]:
    with database.atomic():
        team = get_team_row(caller, team_id)
        require_creator_or_admin(caller, team.creator_user_id, "team")
        lead = fields["leadAgentId"] if fields.get("leadAgentId") is not None else team.lead_agent_id
        members = fields["memberAgentIds"] if fields.get("memberAgentIds") is not None else [int(m) for m in team.member_agent_ids]
        try:
            team.member_agent_ids = check_agents(caller, lead, members)
        except Unprocessable as exc:
            if fields.get("leadAgentId") is None or fields.get("memberAgentIds") is None:
                raise Conflict(exc.msg) from exc  # the stored lead or members take part: the team's state refuses it
            raise
        team.lead_agent_id = lead
        if fields.get("name") is not None:
            team.name = fields["name"].strip()
        if fields.get("description") is not None:
            team.description = fields["description"]
        team.update_time = utcnow()
        team.save()
        audit.record(caller, "UPDATE", "TEAM", team.id, f"team '{team.name}' updated")
    return team_dict(team)


def delete_team(caller: Caller, team_id: int) -> None:
    with database.atomic():
        team = get_team_row(caller, team_id)
        require_creator_or_admin(caller, team.creator_user_id, "team")
        if TeamRun.select().where((TeamRun.team_id == team.id) & TeamRun.status.in_(ACTIVE)).exists():
            raise Conflict("The team has an active run; cancel it first")
        team.deleted, team.update_time = True, utcnow()
        team.save()
        audit.record(caller, "DELETE", "TEAM", team.id, f"team '{team.name}' deleted")


# ---- runs ---------------------------------------------------------------------------


run_dict = Fields(
    id=ident("id"),
    teamId=ident("team_id"),
    workspaceId=ident("workspace_id"),
    conversationId="conversation_id",
    startedBy=ident("user_id"),
    goal="goal",
    status="status",
    active=lambda run: run.status in ACTIVE,
    tasks=lambda run: run.tasks or [],
    result="result",
    error="error",
    cancelReason="cancel_reason",
    cancelledBy=lambda run: str(run.cancelled_by) if run.cancelled_by else None,
    createTime=when("create_time"),
    updateTime=when("update_time"),
    finishedAt=when("finished_at"),
)


def get_run_row(caller: Caller, run_id: int) -> TeamRun:
    run = TeamRun.get_or_none((TeamRun.id == run_id) & (TeamRun.workspace_id == caller.workspace_id))
    if run is None:
        raise NotFound("Team run not found")
    return run


def get_run(caller: Caller, run_id: int) -> dict[str, Any]:
    return run_dict(get_run_row(caller, run_id))


def _team_runs(caller: Caller, team_id: int, active_only: bool) -> peewee.ModelSelect[TeamRun]:
    get_team_row(caller, team_id)
    q = TeamRun.select().where((TeamRun.team_id == team_id) & (TeamRun.workspace_id == caller.workspace_id))
    return q.where(TeamRun.status.in_(ACTIVE)) if active_only else q


def _conversation_runs(caller: Caller, conversation_id: str) -> peewee.ModelSelect[TeamRun]:
    # a new chat's id (no message yet) has no runs rather than a 404: the original console asks as soon
    # as it opens one; another user's conversation stays 403
    conversations.check_owner(caller.user_id, conversations.validate_id(conversation_id))
    return TeamRun.select().where(
        (TeamRun.conversation_id == conversation_id) & (TeamRun.user_id == caller.user_id) & (TeamRun.workspace_id == caller.workspace_id)
    )


def team_runs(caller: Caller, team_id: int, active_only: bool) -> list[dict[str, Any]]:
    q = _team_runs(caller, team_id, active_only)
    return [run_dict(r) for r in q.order_by(TeamRun.id.desc()).limit(LIST_LIMIT)]


def team_runs_page(caller: Caller, team_id: int, active_only: bool, cursor: int | None, limit: int) -> dict[str, Any]:
    return _page(_team_runs(caller, team_id, active_only), cursor, limit)


def conversation_runs(caller: Caller, conversation_id: str) -> list[dict[str, Any]]:
    q = _conversation_runs(caller, conversation_id)
    return [run_dict(r) for r in q.order_by(TeamRun.id.desc()).limit(LIST_LIMIT)]


def conversation_runs_page(caller: Caller, conversation_id: str, cursor: int | None, limit: int) -> dict[str, Any]:
    return _page(_conversation_runs(caller, conversation_id), cursor, limit)


def _page(q: peewee.ModelSelect[Any], cursor: int | None, limit: int) -> dict[str, Any]:
    """Newest first; `nextCursor` (the last id returned) fetches the next older page, null at the end."""
    if cursor is not None:
        q = q.where(TeamRun.id < cursor)
    rows = list(q.order_by(TeamRun.id.desc()).limit(limit + 1))
    more = len(rows) > limit
    rows = rows[:limit]
    return {"items": [run_dict(r) for r in rows], "nextCursor": str(rows[-1].id) if more and rows else None}


def mark_cancelled(caller: Caller, run_id: int, reason: str | None) -> TeamRun:
    """Move an active run to `cancelled` (409 when it already ended)."""
    with database.atomic():
        run = get_run_row(caller, run_id)
        now = utcnow()
        changed = (
            TeamRun.update(status="cancelled", cancel_reason=reason, cancelled_by=caller.user_id, error=None, finished_at=now, update_time=now)
            .where((TeamRun.id == run.id) & TeamRun.status.in_(ACTIVE))
            .execute()
        )
        if not changed:
            raise Conflict(f"Team run is already {run.status}")
        audit.record(caller, "UPDATE", "TEAM_RUN", run.id, f"cancelled{': ' + reason if reason else ''}")
    return TeamRun.get_by_id(run.id)


def fail_interrupted(error: str, ids: list[int] | None = None) -> int:
    """Active runs (of `ids`, or all) whose process stopped: failed with `error` (after a restart none is active)."""
    now = utcnow()
    query = TeamRun.update(status="failed", error=error, finished_at=now, update_time=now).where(TeamRun.status.in_(ACTIVE))
    return int((query if ids is None else query.where(TeamRun.id.in_(ids))).execute())


def active_ids() -> list[str]:
    return [str(r.id) for r in TeamRun.select(TeamRun.id).where(TeamRun.status.in_(ACTIVE))]
