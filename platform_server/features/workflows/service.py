"""Workflows: rows with an inline draft, compile and publish to immutable revisions, runs and their steps."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from platform_server.db import database, iso, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.models.errors import LlmFailure, failure_text
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.usage import meter
from platform_server.features.workflows import catalog, graph
from platform_server.features.workflows.models import Workflow, WorkflowRevision, WorkflowRun, WorkflowStep
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError
from platform_server.serialize import GIVEN, Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound
from platform_server.web.ownership import require_creator_or_admin

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter

MAX_DRAFT_BYTES = 256 * 1024
RUNS_LIMIT = 50
PAUSED_LIMIT = 200


# ---- workflows ----------------------------------------------------------------------


def _get(caller: Caller, workflow_id: int) -> Workflow:
    row = Workflow.get_or_none((Workflow.id == workflow_id) & (Workflow.workspace_id == caller.workspace_id) & (Workflow.deleted == False))  # noqa: E712
    if row is None:
        raise NotFound("Workflow not found")
    return row


def _get_for_change(caller: Caller, workflow_id: int) -> Workflow:
    """The workflow, for an edit, publish or delete: its creator or a workspace admin only."""
    row = _get(caller, workflow_id)
    require_creator_or_admin(caller, row.creator_user_id, "workflow")
    return row


REVISION_FIELDS = Fields(id=ident("id"), version="version", graph="graph", createdBy=ident("created_by"), createTime=when("create_time"))


def _revision_dict(rev: WorkflowRevision | None) -> dict[str, Any] | None:
    return None if rev is None else REVISION_FIELDS(rev)


WORKFLOW_FIELDS = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    name="name",
    description="description",
    enabled=flag("enabled"),
    latestRevisionId=lambda row: str(row.latest_revision_id) if row.latest_revision_id else None,
    creatorUserId=ident("creator_user_id"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


def to_dict(row: Workflow, full: bool = False) -> dict[str, Any]:
    """The workflow; `full` adds the draft and the latest revision."""
    out = WORKFLOW_FIELDS(row)
    if full:
        rev = WorkflowRevision.get_or_none(WorkflowRevision.id == row.latest_revision_id) if row.latest_revision_id else None
        out["draft"] = row.draft
        out["latestRevision"] = _revision_dict(rev)
    return out


def list_workflows(caller: Caller) -> list[dict[str, Any]]:
    q = Workflow.select().where((Workflow.workspace_id == caller.workspace_id) & (Workflow.deleted == False))  # noqa: E712
    return [to_dict(r) for r in q.order_by(Workflow.id.desc())]


def get(caller: Caller, workflow_id: int) -> dict[str, Any]:
    return to_dict(_get(caller, workflow_id), full=True)


def create(caller: Caller, name: str, description: str, enabled: bool) -> dict[str, Any]:
    row = Workflow(workspace_id=caller.workspace_id, name=name.strip(), description=description, enabled=enabled, creator_user_id=caller.user_id)
    audit.save(caller, "CREATE", "WORKFLOW", row, f"workflow '{row.name}' created")
    return to_dict(row, full=True)


def update(caller: Caller, workflow_id: int, fields: dict[str, Any]) -> dict[str, Any]:
    with database.atomic():
        row = _get_for_change(caller, workflow_id)
        for key in ("name", "description", "enabled"):
            if fields.get(key) is not None:
                setattr(row, key, fields[key].strip() if key == "name" else fields[key])
        row.update_time = utcnow()
        row.save()
        audit.record(caller, "UPDATE", "WORKFLOW", row.id, f"workflow '{row.name}' updated")
    return to_dict(row, full=True)


def delete(caller: Caller, workflow_id: int) -> None:
    with database.atomic():
        row = _get_for_change(caller, workflow_id)
        row.deleted, row.update_time = True, utcnow()
        row.save()
        audit.record(caller, "DELETE", "WORKFLOW", row.id, f"workflow '{row.name}' deleted")


def check_draft_size(draft: Any) -> None:
    if len(json.dumps(draft, ensure_ascii=False)) > MAX_DRAFT_BYTES:
        raise BadRequest(f"graph: larger than {MAX_DRAFT_BYTES} bytes")


def save_draft(caller: Caller, workflow_id: int, draft: dict[str, Any]) -> dict[str, Any]:
    check_draft_size(draft)
    with database.atomic():
        row = _get_for_change(caller, workflow_id)
        row.draft, row.update_time = draft, utcnow()
        row.save()
        audit.record(caller, "UPDATE", "WORKFLOW", row.id, "draft saved")
    return to_dict(row, full=True)


# ---- compile and publish --------------------------------------------------------------


def agent_check(caller: Caller) -> graph.AgentCheck:
    """ACL of agent nodes: an enabled agent of the caller's workspace (one the caller may chat with)."""

    def check(agent_id: int) -> str | None:
        agent = Agent.get_or_none((Agent.id == agent_id) & (Agent.workspace_id == caller.workspace_id))
        if agent is None:
            return f"agent {agent_id} is not an agent of this workspace"
        if not agent.enabled:
            return f"agent {agent_id} ({agent.name}) is disabled"
        if not caller.has_role("viewer"):
            return "the caller may not use this workspace's agents"
        return None

    return check


def compile_draft(caller: Caller, draft: Any) -> dict[str, Any]:
    """Diagnostics for any draft; nothing is stored."""
    return graph.compile_graph(draft, agent_check(caller)).to_dict()


def compile_saved(caller: Caller, workflow_id: int) -> dict[str, Any]:
    return compile_draft(caller, _get(caller, workflow_id).draft)


def publish(caller: Caller, workflow_id: int) -> dict[str, Any]:
    """Compile the draft; without errors, store it as the next immutable revision."""
    row = _get_for_change(caller, workflow_id)
    result = graph.compile_graph(row.draft, agent_check(caller))
    if not result.ok:
        errors = [d for d in result.diagnostics if d.severity == "error"]
        # the saved draft's state, not the request, is what is wrong (the same call succeeds once it compiles): 409
        raise Conflict(f"Draft does not compile ({len(errors)} error(s)): {errors[0].message}")
    with database.atomic():
        row = _get(caller, workflow_id)
        last = WorkflowRevision.select().where(WorkflowRevision.workflow_id == row.id).order_by(WorkflowRevision.version.desc()).first()
        rev = WorkflowRevision.create(
            workflow_id=row.id,
            workspace_id=row.workspace_id,
            version=(last.version + 1) if last else 1,
            graph=graph.normalized(result.graph),
            created_by=caller.user_id,
        )
        row.latest_revision_id, row.update_time = rev.id, utcnow()
        row.save()
        audit.record(caller, "UPDATE", "WORKFLOW", row.id, f"revision {rev.version} published")
    return {**to_dict(row, full=True), "compile": result.to_dict()}


def templates() -> list[dict[str, Any]]:
    return catalog.TEMPLATES


async def generate(caller: Caller, router: LlmRouter, description: str) -> dict[str, Any]:
    """Ask the default model to draft a graph for the description; compiled, returned, not saved."""

    agents = [
        {"id": str(a.id), "name": a.name, "description": a.description or ""}
        for a in Agent.select()
        .where((Agent.workspace_id == caller.workspace_id) & (Agent.enabled == True))  # noqa: E712
        .order_by(Agent.id)
        .limit(50)
    ]
    req = ChatRequest(model="", messages=[ChatMessage("system", catalog.generation_prompt(agents)), ChatMessage("user", description)])
    try:
        with meter.scope("workflow", caller.workspace_id, caller.user_id):
            _, result = await router.chat(resolve_targets(None, None, []), req)
    except LlmError as exc:
        raise LlmFailure(failure_text(exc, "workflow model call")) from None
    draft = catalog.extract_json(result.content or "")
    if not isinstance(draft, dict):
        diag = graph.Diagnostic("error", "INVALID_GRAPH", "The model's answer held no JSON graph")
        return {
            "graph": None,
            "compile": {"ok": False, "errors": 1, "warnings": 0, "nodeCount": 0, "edgeCount": 0, "diagnostics": [diag.to_dict()]},
            "raw": (result.content or "")[:4000],
        }
    return {"graph": draft, "compile": compile_draft(caller, draft), "raw": None}


# ---- runs -------------------------------------------------------------------------------


def may_resume(caller: Caller, run: WorkflowRun) -> bool:
    """A paused run is resumed by the user who started it or a workspace admin."""
    return caller.user_id == run.user_id or caller.has_role("admin")


RUN_FIELDS = Fields(
    id=ident("id"),
    workflowId=ident("workflow_id"),
    revisionId=ident("revision_id"),
    workspaceId=ident("workspace_id"),
    startedBy=ident("user_id"),
    status="status",
    input="input",
    output="output",
    error="error",
    pauseToken=GIVEN,
    pausedStepId=lambda r: str(r.paused_step_id) if r.status == "paused" and r.paused_step_id else None,
    pauseDeadline=lambda r: iso(r.pause_deadline) if r.status == "paused" else None,
    createTime=when("create_time"),
    updateTime=when("update_time"),
    finishedAt=when("finished_at"),
)


def run_dict(run: WorkflowRun, steps: bool = False, caller: Caller | None = None) -> dict[str, Any]:
    """The run; its `pauseToken` only for a caller who may resume it."""
    show_token = run.status == "paused" and (caller is None or may_resume(caller, run))
    out = RUN_FIELDS(run, pauseToken=run.pause_token if show_token else None)
    if run.status == "paused" and run.paused_step_id:
        step = WorkflowStep.get_or_none(WorkflowStep.id == run.paused_step_id)
        out["pausedNodeId"] = step.node_id if step else None
        out["pauseReason"] = (step.output or {}).get("message") if step and isinstance(step.output, dict) else None
    if steps:
        rows = WorkflowStep.select().where(WorkflowStep.run_id == run.id).order_by(WorkflowStep.seq)
        out["steps"] = [step_dict(s) for s in rows]
    return out


step_dict = Fields(
    id=ident("id"),
    runId=ident("run_id"),
    seq="seq",
    nodeId="node_id",
    nodeType="node_type",
    status="status",
    input="input",
    output="output",
    error="error",
    outcome="outcome",
    conversationId="conversation_id",
    startedAt=when("started_at"),
    finishedAt=when("finished_at"),
    durationMs=lambda s: int((s.finished_at - s.started_at).total_seconds() * 1000) if s.finished_at else None,
)


def get_run_row(caller: Caller, run_id: int) -> WorkflowRun:
    run = WorkflowRun.get_or_none((WorkflowRun.id == run_id) & (WorkflowRun.workspace_id == caller.workspace_id))
    if run is None:
        raise NotFound("Workflow run not found")
    return run


def get_run(caller: Caller, run_id: int) -> dict[str, Any]:
    return run_dict(get_run_row(caller, run_id), steps=True, caller=caller)


def runs_of(caller: Caller, workflow_id: int, limit: int) -> list[dict[str, Any]]:
    _get(caller, workflow_id)
    q = WorkflowRun.select().where((WorkflowRun.workflow_id == workflow_id) & (WorkflowRun.workspace_id == caller.workspace_id))
    return [run_dict(r, caller=caller) for r in q.order_by(WorkflowRun.id.desc()).limit(max(1, min(limit, RUNS_LIMIT)))]


def paused_runs(caller: Caller) -> list[dict[str, Any]]:
    q = WorkflowRun.select().where((WorkflowRun.workspace_id == caller.workspace_id) & (WorkflowRun.status == "paused"))
    return [run_dict(r, caller=caller) for r in q.order_by(WorkflowRun.id.desc()).limit(PAUSED_LIMIT)]


def startable(caller: Caller, workflow_id: int) -> tuple[Workflow, WorkflowRevision]:
    """The workflow and its latest revision, when a run may start (enabled and published)."""
    row = _get(caller, workflow_id)
    if not row.enabled:
        raise Conflict("Workflow is disabled")
    rev = WorkflowRevision.get_or_none(WorkflowRevision.id == row.latest_revision_id) if row.latest_revision_id else None
    if rev is None:
        raise Conflict("Workflow has no published revision")
    return row, rev
