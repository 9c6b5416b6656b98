"""Cron jobs: CRUD scoped to the caller's workspace, run now, toggle, and the run history."""

from __future__ import annotations

from typing import Any, Iterable, Literal

import pydantic

from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.auth.models import User
from platform_server.features.conversations import service as conversations
from platform_server.features.cron import schedule
from platform_server.features.cron.models import CronJob, CronRun, Trigger
from platform_server.features.cron.runner import CronScheduler, spec_of
from platform_server.features.cron.schemas import CronJobCreate, CronJobUpdate
from platform_server.features.settings import service as settings
from platform_server.ids import NOT_BLANK_RE
from platform_server.serialize import GIVEN, Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, Forbidden, NotFound, parse_long
from platform_server.web.pagination import PageRequest, paginate

RUN_STATUSES = ("running", "succeeded", "failed", "awaiting_approval")


# ---- shared checks (triggers use them too) -------------------------------------------


def default_timezone() -> str:
    """The server's time zone: the admin's `timezone` setting (its default is the `timezone` config)."""

    return str(settings.get("timezone") or "UTC")


def check_agent(caller: Caller, raw: str | int) -> int:
    """The id of an agent in the caller's workspace, or 400."""

    agent_id = parse_long("agentId", str(raw))
    if not Agent.select().where((Agent.id == agent_id) & (Agent.workspace_id == caller.workspace_id)).exists():
        raise NotFound("agentId: no such agent in this workspace")
    return agent_id


def check_text(value: str, field: str) -> str:
    """The text unless it is blank (ids.NOT_BLANK_PATTERN, the document's rule: ECMA's spaces and Python's)."""
    if not NOT_BLANK_RE.search(value):
        raise BadRequest(f"{field}: must not be blank")
    return value


def check_conversation(mode: str, conversation_id: str | None, owner_user_id: int, stored_mode: bool = False) -> str | None:
    """`fixed` needs a conversation id the job's owner may write to; `new` takes none. With `stored_mode` (an update
    that leaves the mode or the id as stored) a mismatch is a 409: the document cannot know the stored state."""
    mismatch = Conflict if stored_mode else BadRequest
    if conversation_id:
        conversations.validate_id(conversation_id)  # malformed whatever the mode (a 400)
    if mode == "new":
        if conversation_id:
            raise mismatch("conversationId: only allowed with conversationMode 'fixed'")
        return None
    if not conversation_id:
        raise mismatch("conversationId: required with conversationMode 'fixed'")
    conversations.check_owner(owner_user_id, conversation_id)
    return conversation_id


def update_conversation(row: CronJob | Trigger, given: set[str], mode: str | None, conversation_id: str | None) -> None:
    """A sparse update's conversation fields. A field left out keeps its stored value, so a mismatch that the stored
    mode or id decides is a 409 (schemas.CONVERSATION_UPDATE_RULE), one between the fields given a 400."""
    if "conversationMode" not in given and "conversationId" not in given:
        return
    stored = mode is None or "conversationId" not in given
    mode = mode or row.conversation_mode
    cid = conversation_id if "conversationId" in given else (row.conversation_id if mode == "fixed" else None)
    row.conversation_mode, row.conversation_id = mode, check_conversation(mode, cid, row.owner_user_id, stored)


def can_manage(caller: Caller, owner_user_id: int) -> None:
    """Runs act as the owner (their conversations, their tools' reach), so only the owner or a global
    admin changes, enables or starts one: a workspace admin could otherwise aim another user's job at
    that user's private conversation and read its history through the run."""
    if caller.user_id != owner_user_id and not caller.is_global_admin:
        raise Forbidden("Only the owner or a global admin can change or run it")


def can_stop(caller: Caller, owner_user_id: int) -> None:
    """Disabling or deleting makes nothing act, so a workspace admin may also do it (housekeeping)."""
    if caller.user_id != owner_user_id and not caller.is_global_admin and not caller.has_role("admin"):
        raise Forbidden("Only the owner, a workspace admin or a global admin can disable or delete it")


def names(model: Any, ids: Iterable[int]) -> dict[int, str]:
    wanted = list({i for i in ids if i})
    if not wanted:
        return {}
    return {r.id: r.name for r in model.select(model.id, model.name).where(model.id.in_(wanted))}


def usernames(ids: Iterable[int]) -> dict[int, str]:

    wanted = list(set(ids))
    return {u.id: u.username for u in User.select(User.id, User.username).where(User.id.in_(wanted or [0]))}


# ---- cron jobs ------------------------------------------------------------------------

JOB_FIELDS = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    name="name",
    agentId=ident("agent_id"),
    agentName=GIVEN,
    cronExpression="cron_expression",
    timezone="timezone",
    message="message",
    enabled=flag("enabled"),
    conversationMode="conversation_mode",
    conversationId="conversation_id",
    ownerUserId=ident("owner_user_id"),
    ownerUsername=GIVEN,
    nextFireTime=when("next_fire_at"),
    lastFireTime=when("last_fire_at"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
    # the original console's names: every job here sends a text message to its agent
    taskType=lambda job: "text",
    triggerMessage="message",
    nextRunTime=when("next_fire_at"),
    lastRunTime=when("last_fire_at"),
)


def to_dict(job: CronJob, agents: dict[int, str] | None = None, users: dict[int, str] | None = None) -> dict[str, Any]:

    agents = names(Agent, [job.agent_id]) if agents is None else agents
    users = usernames([job.owner_user_id]) if users is None else users
    return JOB_FIELDS(job, agentName=agents.get(job.agent_id), ownerUsername=users.get(job.owner_user_id))


def _get(caller: Caller, job_id: int) -> CronJob:
    job = CronJob.get_or_none((CronJob.id == job_id) & (CronJob.workspace_id == caller.workspace_id))
    if job is None:
        raise NotFound("Cron job not found")
    return job


def list_jobs(caller: Caller) -> list[dict[str, Any]]:

    rows = list(CronJob.select().where(CronJob.workspace_id == caller.workspace_id).order_by(CronJob.id))
    agents = names(Agent, (r.agent_id for r in rows))
    users = usernames(r.owner_user_id for r in rows)
    return [to_dict(r, agents, users) for r in rows]


def get(caller: Caller, job_id: int) -> dict[str, Any]:
    return to_dict(_get(caller, job_id))


def create(caller: Caller, req: CronJobCreate, default_timezone: str) -> dict[str, Any]:
    """Create a job owned by the caller; an enabled job is scheduled at once."""
    agent_id = check_agent(caller, req.agentId)
    expression = schedule.normalize(req.cronExpression)
    tz = schedule.given_zone(req.timezone) if req.timezone is not None else default_timezone
    schedule.zone(tz)
    message = check_text(req.message, "message")
    cid = check_conversation(req.conversationMode, req.conversationId, caller.user_id)
    now = utcnow()
    job = CronJob(
        workspace_id=caller.workspace_id,
        owner_user_id=caller.user_id,
        name=check_text(req.name, "name").strip(),
        agent_id=agent_id,
        cron_expression=expression,
        timezone=tz.strip(),
        message=message,
        enabled=req.enabled,
        conversation_mode=req.conversationMode,
        conversation_id=cid,
        next_fire_at=schedule.next_fire(expression, tz.strip(), now) if req.enabled else None,
    )
    audit.save(caller, "CREATE", "CRON_JOB", job, f"cron job {job.name} ({expression} {job.timezone})")
    return to_dict(job)


def update(caller: Caller, job_id: int, req: CronJobUpdate) -> dict[str, Any]:
    """Sparse update; a new expression, zone or enabled state reschedules the job."""
    job = _get(caller, job_id)
    can_manage(caller, job.owner_user_id)
    given = req.model_fields_set
    if req.name is not None:
        job.name = check_text(req.name, "name").strip()
    if req.agentId is not None:
        job.agent_id = check_agent(caller, req.agentId)
    if req.cronExpression is not None:
        job.cron_expression = schedule.normalize(req.cronExpression)
    if req.timezone is not None:
        job.timezone = schedule.given_zone(req.timezone)
    if req.message is not None:
        job.message = check_text(req.message, "message")
    if req.enabled is not None:
        job.enabled = req.enabled
    update_conversation(job, given, req.conversationMode, req.conversationId)
    job.next_fire_at = schedule.next_fire(job.cron_expression, job.timezone, utcnow()) if job.enabled else None
    job.update_time = utcnow()
    audit.save(caller, "UPDATE", "CRON_JOB", job, f"cron job {job.name} ({job.cron_expression} {job.timezone})")
    return to_dict(job)


def toggle(caller: Caller, job_id: int, enabled: bool | None) -> dict[str, Any]:
    """Enable or disable (flip when no value is given); disabling unschedules the job."""
    job = _get(caller, job_id)
    wanted = (not job.enabled) if enabled is None else enabled
    (can_manage if wanted else can_stop)(caller, job.owner_user_id)
    job.enabled = wanted
    job.next_fire_at = schedule.next_fire(job.cron_expression, job.timezone, utcnow()) if job.enabled else None
    job.update_time = utcnow()
    audit.save(caller, "UPDATE", "CRON_JOB", job, f"{'enabled' if job.enabled else 'disabled'}")
    return to_dict(job)


def delete(caller: Caller, job_id: int) -> None:
    """Delete the job and its run history."""
    job = _get(caller, job_id)
    can_stop(caller, job.owner_user_id)
    with database.atomic():
        CronRun.delete().where((CronRun.job_type == "cron_job") & (CronRun.job_id == job.id)).execute()
        job.delete_instance()
        audit.record(caller, "DELETE", "CRON_JOB", job.id, f"cron job {job.name}")


def run_now(caller: Caller, scheduler: CronScheduler, job_id: int) -> dict[str, Any]:
    """Start a run at once (even when disabled); answers the running run."""
    job = _get(caller, job_id)
    can_manage(caller, job.owner_user_id)
    run = scheduler.begin(spec_of(job), "manual")
    with database.atomic():
        audit.record(caller, "UPDATE", "CRON_JOB", job.id, f"run now: run {run.id}")
    return run_dict(run)


# ---- runs ---------------------------------------------------------------------------------


def _duration_ms(run: CronRun) -> int | None:
    if run.finished_at is None or run.started_at is None:
        return None
    return int((run.finished_at - run.started_at).total_seconds() * 1000)


run_dict = Fields(
    id=ident("id"),
    runId=ident("id"),
    jobType="job_type",
    cronJobId=lambda run: str(run.job_id) if run.job_type == "cron_job" else None,
    triggerId=lambda run: str(run.job_id) if run.job_type == "trigger" else None,
    jobName="job_name",
    agentId=ident("agent_id"),
    ownerUserId=ident("owner_user_id"),
    cause="cause",
    status="status",
    scheduledTime=when("scheduled_at"),
    startTime=when("started_at"),
    finishTime=when("finished_at"),
    durationMs=_duration_ms,
    conversationId="conversation_id",
    assistantMessageId=ident("assistant_message_id"),
    error="error",
    promptTokens="prompt_tokens",
    completionTokens="completion_tokens",
    eventId="event_id",
    # the original console's names: startedAt, finishedAt, triggerType (scheduled | manual | event),
    # tokenUsage, errorMessage
    startedAt=when("started_at"),
    finishedAt=when("finished_at"),
    triggerType=lambda run: "scheduled" if run.cause == "schedule" else run.cause,
    tokenUsage=lambda run: (run.prompt_tokens or 0) + (run.completion_tokens or 0) if run.prompt_tokens is not None else None,
    errorMessage="error",
)
# The runs' answer models (the map reads plain attributes when serving; their types are given here).
CronRunView = run_dict.view(
    "CronRunView",
    jobType=(Literal["cron_job", "trigger"], ...),
    cronJobId=(str | None, ...),
    triggerId=(str | None, ...),
    jobName=(str, ...),
    cause=(str, pydantic.Field(description="schedule, manual or event")),
    status=(str, pydantic.Field(description="running, succeeded, failed or awaiting_approval")),
    durationMs=(int | None, ...),
    conversationId=(str | None, ...),
    error=(str | None, ...),
    promptTokens=(int | None, ...),
    completionTokens=(int | None, ...),
    eventId=(str | None, ...),
    triggerType=(str, pydantic.Field(description="scheduled, manual or event")),
    tokenUsage=(int | None, ...),
    errorMessage=(str | None, ...),
)


def _check_status(status: str | None) -> str | None:
    if status and status not in RUN_STATUSES:
        raise BadRequest(f"status: must be one of {', '.join(RUN_STATUSES)}")
    return status or None


def runs_page(caller: Caller, req: PageRequest, status: str | None = None, job_id: int | None = None) -> dict[str, Any]:
    """Newest-first runs of the workspace's cron jobs and triggers (one job's with job_id)."""
    q = CronRun.select().where(CronRun.workspace_id == caller.workspace_id)
    if job_id is not None:
        exists = (
            CronJob.select().where((CronJob.id == job_id) & (CronJob.workspace_id == caller.workspace_id)).exists()
            or Trigger.select().where((Trigger.id == job_id) & (Trigger.workspace_id == caller.workspace_id)).exists()
        )
        if not exists:
            raise NotFound("Cron job not found")
        q = q.where(CronRun.job_id == job_id)
    status = _check_status(status)
    if status:
        q = q.where(CronRun.status == status)
    return paginate(q.order_by(CronRun.started_at.desc(), CronRun.id.desc()), req, run_dict)


def recent_runs(caller: Caller, limit: int, status: str | None = None, job_id: int | None = None) -> list[dict[str, Any]]:
    """The newest `limit` runs as a plain list (the original console asks `?limit=` and reads a list)."""
    return runs_page(caller, PageRequest(1, limit), status, job_id)["records"]


def active_runs(caller: Caller, conversation_id: str | None) -> list[dict[str, Any]]:
    """Running runs of the workspace, optionally only those in one conversation."""
    q = CronRun.select().where((CronRun.workspace_id == caller.workspace_id) & (CronRun.status == "running"))
    if conversation_id:
        q = q.where(CronRun.conversation_id == conversation_id)
    return [run_dict(r) for r in q.order_by(CronRun.started_at.desc())]
