"""Plans: created and advanced by the plan-execute runner, read only by the user whose turn made them.

A plan holds the private task and every step's result, as private as the conversation it ran in:
another user (a global admin too, as with conversations) sees 404, never that it exists.
"""

from __future__ import annotations

from typing import Any

from platform_server.db import database, utcnow
from platform_server.features.plans.models import Plan, PlanStep
from platform_server.serialize import Fields, ident, typed, when
from platform_server.web.context import Caller
from platform_server.web.errors import NotFound


def create(agent_id: int, workspace_id: int, user_id: int, conversation_id: str, goal: str, steps: list[str]) -> Plan:
    with database.atomic():
        plan = Plan.create(agent_id=agent_id, workspace_id=workspace_id, user_id=user_id, conversation_id=conversation_id, goal=goal[:4000])
        for i, text in enumerate(steps):
            PlanStep.create(plan=plan.id, step_index=i + 1, description=text[:2000])
    return plan


def steps_of(plan_id: int) -> list[PlanStep]:
    return list(PlanStep.select().where(PlanStep.plan == plan_id).order_by(PlanStep.step_index))


def mark_step(step: PlanStep, status: str, result: str | None = None) -> None:
    step.status = status
    if status == "running":
        step.started_at = utcnow()
    else:
        step.finished_at = utcnow()
    if result is not None:
        step.result = result
    step.save()


def finish(plan_id: int, status: str) -> None:
    with database.atomic():
        Plan.update(status=status, update_time=utcnow()).where(Plan.id == plan_id).execute()
        if status != "completed":
            PlanStep.update(status=status).where((PlanStep.plan == plan_id) & (PlanStep.status.in_(["pending", "running"]))).execute()


step_dict = Fields(
    id=ident("id"),
    index=typed("step_index", int),
    description=typed("description", str),
    status=typed("status", str),  # pending, running, completed, failed, stopped
    result=typed("result", str),
    startedAt=when("started_at"),
    finishedAt=when("finished_at"),
)
PlanStepView = step_dict.view("PlanStepView")


PLAN_FIELDS = Fields(
    id=ident("id"),
    agentId=ident("agent_id"),
    workspaceId=ident("workspace_id"),
    conversationId=typed("conversation_id", str),
    goal=typed("goal", str),
    status=typed("status", str),  # running, completed, failed, stopped
    createTime=when("create_time"),
    updateTime=when("update_time"),
)
PlanView = PLAN_FIELDS.view("PlanView")
PlanDetailView = PLAN_FIELDS.view("PlanDetailView", steps=(list[PlanStepView], ...))  # type: ignore[valid-type]


def to_dict(plan: Plan, with_steps: bool = False) -> dict[str, Any]:
    data = PLAN_FIELDS(plan)
    if with_steps:
        data["steps"] = [step_dict(s) for s in steps_of(plan.id)]
    return data


def list_for_agent(caller: Caller, agent_id: int) -> list[dict[str, Any]]:
    """The caller's own plans with an agent in the caller's workspace, newest first."""
    q = Plan.select().where((Plan.agent_id == agent_id) & (Plan.workspace_id == caller.workspace_id) & (Plan.user_id == caller.user_id))
    return [to_dict(p) for p in q.order_by(Plan.id.desc()).limit(200)]


def get(caller: Caller, plan_id: int) -> dict[str, Any]:
    plan = Plan.get_or_none((Plan.id == plan_id) & (Plan.workspace_id == caller.workspace_id) & (Plan.user_id == caller.user_id))
    if plan is None:
        raise NotFound("Plan not found")
    return to_dict(plan, with_steps=True)
