"""Request bodies and answers of the teams routes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from platform_server.features.teams import service
from platform_server.ids import NOT_BLANK_PATTERN
from platform_server.serialize import View
from platform_server.web.bodies import explained
from platform_server.web.openapi_events import SseEvents

# An agent id as a JSON number: a signed 64-bit integer (a larger one would overflow the database's column)
AgentId = Annotated[int, Field(ge=-(2**63), le=2**63 - 1, json_schema_extra={"format": "int64"})]


class TeamCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    leadAgentId: AgentId
    # at least one member besides the lead (service.check_agents: the lead listed here too counts once, as the lead)
    memberAgentIds: list[AgentId] = Field(
        min_length=1,  # checked, not only stated: an empty list is a 400
        max_length=service.MAX_MEMBERS,
        json_schema_extra={"uniqueItems": True},
        description="Agents of the workspace, each once; the lead listed here too counts once, as the lead",
    )


class TeamUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    leadAgentId: AgentId | None = None
    memberAgentIds: list[AgentId] | None = Field(default=None, min_length=1, max_length=service.MAX_MEMBERS, json_schema_extra={"uniqueItems": True})


class TeamRunStart(BaseModel):
    goal: str = Field(min_length=1, max_length=20_000, pattern=explained(NOT_BLANK_PATTERN, "must not be blank"))  # runner.check_goal


class CancelRequest(BaseModel):
    reason: str | None = Field(default=None, max_length=500)


class MemberAdd(BaseModel):
    agentId: AgentId
    role: Literal["lead", "member"] = "member"  # console.ROLES


# ---- answers (web/openapi_answers.py): service.team_dict / run_dict and the console's views (console.py) ---------


class TeamView(View):
    """A team (`service.team_dict`): a lead agent and its ordered member agents."""

    id: str
    workspaceId: str
    name: str
    description: str
    leadAgentId: str
    memberAgentIds: list[str]
    creatorUserId: str | None
    createTime: str | None
    updateTime: str | None


class TeamStatusView(TeamView):
    status: str = Field(description="always `active` (the original console shows it)")


class TeamMemberView(View):
    agentId: str
    name: str | None = Field(description="null when the agent was deleted")
    role: str = Field(description="lead or member")
    icon: str | None


class TeamListedView(TeamView):
    """A team as the list answers it: the flat fields plus the original console's `team`, `leadName`, ..."""

    team: TeamStatusView
    leadName: str | None
    leadIcon: str | None
    memberCount: int
    members: list[TeamMemberView]


class TeamSummaryView(View):
    """The console's list row of a team, nested in the detail as `team` (it reads `team.team.id`)."""

    team: TeamStatusView
    leadName: str | None
    leadIcon: str | None
    memberCount: int


class TeamDetailView(TeamView):
    team: TeamSummaryView
    leadName: str | None
    leadIcon: str | None
    memberCount: int
    members: list[TeamMemberView]


class TeamRunTaskView(View):
    """A member's task of a run (runner.py)."""

    index: int
    agentId: str
    agentName: str
    task: str
    status: str
    result: str | None
    error: str | None
    startedAt: str | None
    finishedAt: str | None
    review: str | None = Field(None, description="approved or redo, once the lead reviewed it")
    reviewFeedback: str | None = None


class TeamRunView(View):
    id: str
    teamId: str
    workspaceId: str
    conversationId: str | None
    startedBy: str | None
    goal: str
    status: str
    active: bool
    tasks: list[TeamRunTaskView]
    result: str | None
    error: str | None
    cancelReason: str | None
    cancelledBy: str | None
    createTime: str | None
    updateTime: str | None
    finishedAt: str | None


class TeamRunsPageView(View):
    """Newest first; `nextCursor` (pass it as `cursor`) fetches the next older page, null at the end."""

    items: list[TeamRunView]
    nextCursor: str | None


class TeamTaskView(View):
    """A member task on the console's board (id `<runId>-<index>`)."""

    id: str
    teamId: str
    runId: str
    taskNumber: int
    subject: str
    description: str
    status: str = Field(description="pending, in_progress, completed, failed or cancelled")
    priority: int
    assigneeAgentId: str
    assigneeName: str | None
    ownerAgentId: str
    blockedBy: None = Field(description="always null (no task dependencies here)")
    requireApproval: bool
    progressPercent: int | None
    result: str | None
    error: str | None
    startedAt: str | None
    finishedAt: str | None
    createTime: str | None


class TeamTaskStatsView(View):
    """Member tasks per board status; a status with none is left out."""

    pending: int = 0
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0


# ---- the team board's SSE events (board.py): GET /teams/{teamId}/events. Documentation only (web/openapi_events.py).


class SseTeamProgress(View):
    total: int
    done: int
    failed: int
    inReview: int
    percent: int


class SseTeamRun(View):
    """`team_run_<status>`: a run of the team changed state."""

    teamId: str
    runId: str
    leadConversationId: str | None
    progress: SseTeamProgress
    status: str
    goal: str
    eventId: str = Field(description="unique: the board de-duplicates by it")


class SseTeamTask(View):
    """`team_task_<event>`: a member task appeared (`created`) or moved."""

    teamId: str
    runId: str
    leadConversationId: str | None
    progress: SseTeamProgress
    taskId: str = Field(description="`<runId>-<index>`")
    taskNumber: int
    subject: str
    status: str = Field(description="pending | in_progress | completed | failed | cancelled")
    assigneeAgentId: str | None
    assigneeName: str | None
    eventId: str


RUN_STATES = ("planning", "running", "awaiting_review", "finalizing", "completed", "partial", "failed", "cancelled")
TASK_EVENTS = ("created", "dispatched", "completed", "failed", "cancelled", "progress")
BOARD_EVENTS = SseEvents(
    "SseTeamBoard",
    {**{f"team_run_{s}": SseTeamRun for s in RUN_STATES}, **{f"team_task_{e}": SseTeamTask for e in TASK_EVENTS}},
)
