"""Goals that are judged: after each finished turn of a conversation with an active goal, the agent's
model answers a small JSON verdict; the goal completes or runs out of attempts by itself."""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import TYPE_CHECKING, Any, Callable

from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.goals.models import Goal, GoalEvaluation, GoalEvent
from platform_server.features.memory import llm
from platform_server.features.usage import meter
from platform_server.loops import Loop

if TYPE_CHECKING:
    from platform_server.config import Config
    from platform_server.features.models.runtime import LlmRouter

log = logging.getLogger(__name__)

TRANSCRIPT_CAP = 12_000
RECENT_MESSAGES = 20

JUDGE_SYSTEM = (
    "You judge an assistant's progress toward a goal set for a conversation. You get the goal, its "
    "criteria (all must hold for it to be complete) and the latest messages. Answer only with JSON: "
    '{"progress": 0-100, "completed": true|false, "blocked": true|false, "reason": "one sentence"}. '
    "completed means every criterion is met by what the conversation shows; blocked means the assistant "
    "cannot go on without something from the user."
)


def _verdict(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("the verdict is not a JSON object")
    try:
        progress = int(float(value.get("progress", 0)))
    except (TypeError, ValueError):
        progress = 0
    return {
        "progress": max(0, min(100, progress)),
        "completed": value.get("completed") is True,
        "blocked": value.get("blocked") is True,
        "reason": str(value.get("reason") or "")[:1000],
    }


def _pending(goal: Goal) -> tuple[Any, Any] | None:
    """(conversation, last assistant message) when a turn finished since the goal's last evaluation."""

    conv = Conversation.get_or_none(Conversation.key == goal.conversation_key)
    if conv is None or conv.stream_status == "running":
        return None
    last = (
        Message.select()
        .where(
            (Message.conversation == conv.id)
            & (Message.role == "assistant")
            & (Message.status == "completed")
            & (Message.create_time >= goal.create_time)
        )
        .order_by(Message.id.desc())
        .first()
    )
    if last is None:
        return None
    judged = GoalEvaluation.select().where((GoalEvaluation.goal == goal.id) & (GoalEvaluation.message_id >= last.id))
    return None if judged.exists() else (conv, last)


def _transcript(conv: Any) -> str:

    rows = list(
        Message.select()
        .where((Message.conversation == conv.id) & Message.role.in_(("user", "assistant")))
        .order_by(Message.id.desc())
        .limit(RECENT_MESSAGES)
    )
    text = "\n".join(f"{m.role}: {(m.content or '').strip()}" for m in reversed(rows) if (m.content or "").strip())
    return text[-TRANSCRIPT_CAP:]


class GoalEvaluator(Loop):
    """Judge active goals whose conversation finished a turn since their last evaluation; tests call tick()."""

    def __init__(self, router: LlmRouter, config: Config, clock: Callable[[], dt.datetime] = utcnow) -> None:
        super().__init__()
        self.router = router
        self.max_attempts = int(config.goal_max_attempts)
        self.clock = clock
        self.interval_s = max(1.0, float(config.goal_eval_tick_s or 30.0))

    async def tick(self) -> int:
        """Evaluate every goal that is due; returns how many evaluations were recorded."""
        done = 0
        for goal in list(Goal.select().where(Goal.status == "active")):
            pending = _pending(goal)
            if pending is None:
                continue
            try:
                await self.evaluate(goal, *pending)
            except Exception as exc:  # noqa: BLE001 - one goal failing must not stop the others
                log.warning("evaluating goal %s failed: %s", goal.id, exc)
                continue
            done += 1
        return done

    async def evaluate(self, goal: Goal, conv: Any, last: Any) -> GoalEvaluation:

        agent = Agent.get_or_none(Agent.id == goal.agent_id) or Agent.get_by_id(conv.agent_id)
        prompt = json.dumps({"goal": goal.title, "criteria": list(goal.criteria or []), "conversation": _transcript(conv)}, ensure_ascii=False)
        with meter.scope("goal", goal.workspace_id, goal.user_id, agent.id, goal.conversation_id):
            text, model = await llm.ask(self.router, llm.targets_for(agent), JUDGE_SYSTEM, prompt, 300, source="goal")
        try:
            verdict = _verdict(llm.parse_json(text))
        except (llm.UnreadableAnswer, ValueError):
            # The turn counts as judged, and as an attempt: a judge that never answers the JSON asked for
            # exhausts the goal like one that never sees progress, instead of being asked again every tick.
            log.warning("goal %s: the judge's answer was not the JSON verdict asked for", goal.id)
            return self._record(goal, last, self._unreadable(goal), model, unreadable=True)
        return self._record(goal, last, verdict, model)

    @staticmethod
    def _unreadable(goal: Goal) -> dict[str, Any]:
        """The verdict recorded for an unreadable answer: the last known progress, nothing completed."""
        prev = GoalEvaluation.select().where(GoalEvaluation.goal == goal.id).order_by(GoalEvaluation.id.desc()).first()
        reason = "The judge's answer was not the JSON verdict asked for; this turn counts as an attempt."
        return {"progress": prev.progress if prev is not None else 0, "completed": False, "blocked": False, "reason": reason}

    def _record(self, goal: Goal, last: Any, verdict: dict[str, Any], model: str, unreadable: bool = False) -> GoalEvaluation:
        budget = goal.max_attempts or self.max_attempts
        with database.atomic():
            goal = Goal.get_by_id(goal.id)
            row = GoalEvaluation.create(goal=goal.id, message_id=last.id, model=model, **verdict)
            GoalEvent.create(
                goal=goal.id,
                type="evaluated",
                from_status=goal.status,
                to_status=goal.status,
                detail={**verdict, "evaluationId": str(row.id), "messageId": str(last.id), **({"unreadable": True} if unreadable else {})},
            )
            attempts = GoalEvaluation.select().where(GoalEvaluation.goal == goal.id).count()
            before = goal.status
            if goal.status == "active" and verdict["completed"]:
                goal.status = "completed"
            elif goal.status == "active" and attempts >= budget:
                goal.status = "exhausted"
            if goal.status != before:
                goal.update_time = goal.closed_at = utcnow()
                goal.save()
                detail = {"reason": verdict["reason"], "attempts": attempts, "by": "evaluation"}
                GoalEvent.create(goal=goal.id, type=goal.status, from_status=before, to_status=goal.status, detail=detail)
            # The conversation shows the judgement on the message that ended the judged turn.
            metadata = dict(last.metadata or {})
            metadata["goalEvaluation"] = {"goalId": str(goal.id), **verdict, "attempts": attempts, "goalStatus": goal.status}
            type(last).update(metadata=metadata).where(type(last).id == last.id).execute()
        return row
