"""The original console's view of teams: `{team, leadName, leadIcon, memberCount, members}` beside the
flat fields, members added and removed one at a time, and the team's task board read from its runs.

A team here is a lead agent plus ordered member agents; the console's member roles map onto that
(`lead` replaces the lead, `member` joins the member list). Its task board lists the member tasks of
the team's runs, which is where this server keeps them (ids `<runId>-<index>`).
"""

from __future__ import annotations

from typing import Any

from platform_server.db import database, iso, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.teams import service
from platform_server.features.teams.models import Team, TeamRun
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound
from platform_server.web.ownership import require_creator_or_admin

ROLES = ("lead", "member")
# the runner's task states -> the console board's columns
TASK_STATUS = {"pending": "pending", "running": "in_progress", "completed": "completed", "failed": "failed", "cancelled": "cancelled"}


def team_view(team: Team) -> dict[str, Any]:
    """The flat team (spec-free extension shape) plus the console's `team`, `leadName`, `members`."""
    flat = service.team_dict(team)
    ids = [team.lead_agent_id, *[int(m) for m in team.member_agent_ids]]
    agents = {a.id: a for a in Agent.select(Agent.id, Agent.name, Agent.icon).where(Agent.id.in_(ids))}
    lead = agents.get(team.lead_agent_id)

    def member(agent_id: int, role: str) -> dict[str, Any]:
        a = agents.get(agent_id)
        return {"agentId": str(agent_id), "name": a.name if a else None, "role": role, "icon": (a.icon or None) if a else None}

    members = [member(team.lead_agent_id, "lead"), *[member(int(m), "member") for m in team.member_agent_ids]]
    return {
        **flat,
        "team": {**flat, "status": "active"},
        "leadName": lead.name if lead else None,
        "leadIcon": (lead.icon or None) if lead else None,
        "memberCount": len(members),
        "members": members,
    }


def list_views(caller: Caller) -> list[dict[str, Any]]:
    q = Team.select().where((Team.workspace_id == caller.workspace_id) & (Team.deleted == False))  # noqa: E712
    return [team_view(t) for t in q.order_by(Team.id.desc())]


def detail_view(team: Team) -> dict[str, Any]:
    """One team: the flat fields and `members`, with `team` the list row `{team, leadName, leadIcon,
    memberCount}` (the console's detail reads `team.team.id`)."""
    row = team_view(team)
    inner = {k: row[k] for k in ("team", "leadName", "leadIcon", "memberCount")}
    return {**row, "team": inner}


def get_view(caller: Caller, team_id: int) -> dict[str, Any]:
    return detail_view(service.get_team_row(caller, team_id))


def add_member(caller: Caller, team_id: int, agent_id: int, role: str) -> dict[str, Any]:
    """`member` appends the agent to the members; `lead` makes it the lead (the old lead becomes a member)."""
    if role not in ROLES:
        raise BadRequest("role: must be lead or member")
    with database.atomic():
        team = service.get_team_row(caller, team_id)
        require_creator_or_admin(caller, team.creator_user_id, "team")
        members = [int(m) for m in team.member_agent_ids if int(m) != agent_id]
        lead = team.lead_agent_id
        if role == "lead":
            if agent_id != lead:
                members.append(lead)
            lead = agent_id
        elif agent_id == lead:
            raise Conflict("agentId: the agent is the team's lead")  # the stored team decides: a 409
        else:
            members.append(agent_id)
        if len(members) > service.MAX_MEMBERS:
            raise Conflict(f"memberAgentIds: the team has {service.MAX_MEMBERS} members already, the most it may have")
        team.member_agent_ids = service.check_agents(caller, lead, members)
        team.lead_agent_id, team.update_time = lead, utcnow()
        team.save()
        audit.record(caller, "UPDATE", "TEAM", team.id, f"team '{team.name}': agent {agent_id} joined as {role}")
    return detail_view(team)


def remove_member(caller: Caller, team_id: int, agent_id: int) -> dict[str, Any]:
    """Remove a member; the lead cannot be removed (make another agent lead first)."""
    with database.atomic():
        team = service.get_team_row(caller, team_id)
        require_creator_or_admin(caller, team.creator_user_id, "team")
        if agent_id == team.lead_agent_id:
            raise Conflict("agentId: the lead cannot be removed; make another agent lead first")
        members = [str(m) for m in team.member_agent_ids if int(m) != agent_id]
        if len(members) == len(team.member_agent_ids):
            raise NotFound("The agent is not a member of this team")
        team.member_agent_ids, team.update_time = members, utcnow()
        team.save()
        audit.record(caller, "UPDATE", "TEAM", team.id, f"team '{team.name}': agent {agent_id} left")
    return detail_view(team)


def _tasks(caller: Caller, team_id: int, run_id: int | None) -> list[dict[str, Any]]:
    team = service.get_team_row(caller, team_id)
    q = TeamRun.select().where(TeamRun.team_id == team.id)
    if run_id is not None:
        q = q.where(TeamRun.id == run_id)
    out: list[dict[str, Any]] = []
    for run in q.order_by(TeamRun.id.desc()).limit(service.LIST_LIMIT):
        for t in run.tasks or []:
            out.append(
                {
                    "id": f"{run.id}-{t['index']}",
                    "teamId": str(team.id),
                    "runId": str(run.id),
                    "taskNumber": t["index"] + 1,
                    "subject": t["task"][:120],
                    "description": t["task"],
                    "status": TASK_STATUS.get(t["status"], t["status"]),
                    "priority": 0,
                    "assigneeAgentId": t["agentId"],
                    "assigneeName": t.get("agentName"),
                    "ownerAgentId": str(team.lead_agent_id),
                    "blockedBy": None,
                    "requireApproval": False,
                    "progressPercent": 100 if t["status"] == "completed" else None,
                    "result": t.get("result"),
                    "error": t.get("error"),
                    "startedAt": t.get("startedAt"),
                    "finishedAt": t.get("finishedAt"),
                    "createTime": iso(run.create_time),
                }
            )
    return out


def tasks(caller: Caller, team_id: int, statuses: list[str], run_id: int | None, limit: int | None, offset: int) -> list[dict[str, Any]]:
    """The member tasks of the team's runs (newest run first), filtered by board status."""
    rows = [t for t in _tasks(caller, team_id, run_id) if not statuses or t["status"] in statuses]
    return rows[offset : offset + limit] if limit is not None else rows[offset:]


def task_stats(caller: Caller, team_id: int, run_id: int | None) -> dict[str, int]:
    """Counts of the team's member tasks by board status."""
    counts: dict[str, int] = {}
    for t in _tasks(caller, team_id, run_id):
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    return counts
