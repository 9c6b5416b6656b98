"""Plan-execute: ask the model for a plan, run each step as a react loop, record it, then answer."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from platform_server.features.chat import context
from platform_server.features.conversations.models import Conversation
from platform_server.features.plans import service as plans
from platform_server.integrations.llm import ChatMessage, ChatRequest

if TYPE_CHECKING:
    from platform_server.features.chat.react import ReactLoop, Totals
    from platform_server.features.chat.store import Answer
    from platform_server.features.chat.turn_setup import TurnSetup
    from platform_server.features.chat.turns import Turn


MAX_STEPS = 8

PLAN_PROMPT = (
    "Before answering, make a short plan for the request above. Reply with ONLY a JSON array of at most "
    f'{MAX_STEPS} strings, each one concrete step, for example ["Find X", "Compute Y"].'
)
STEP_PROMPT = "Carry out step {index} of {total} of the plan: {step}\nReply with the result of this step only."
FINAL_PROMPT = "All steps of the plan are done. Using their results above, write the final answer to the original request."


def parse_steps(text: str) -> list[str]:
    """Steps from the model's plan: a JSON array, or failing that numbered / bulleted lines."""
    match = re.search(r"\[.*\]", text, re.S)
    if match:
        try:
            items = json.loads(match.group(0))
            steps = [str(i).strip() for i in items if str(i).strip()]
            if steps:
                return steps[:MAX_STEPS]
        except ValueError:
            pass
    lines = [re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", line).strip() for line in text.splitlines()]
    steps = [line for line in lines if line]
    return steps[:MAX_STEPS] or [text.strip()[:500] or "Answer the request"]


async def plan_execute(loop: ReactLoop, turn: Turn, goal: str, conv: Conversation, totals: Totals, setup: TurnSetup) -> Answer:
    """Plan, execute each step (recorded in /api/v1/plans), then write the final answer."""
    turn.phase = "planning"
    turn.publish("phase", {"phase": "planning"})
    built = await context.build(loop.llm, loop.config, loop.store, turn.usage, conv, setup, [ChatMessage("user", PLAN_PROMPT)], use_tools=False)
    if built.report is not None:
        turn.publish("context", built.report)
    request = ChatRequest(model="", messages=built.messages, thinking_level=setup.thinking_level)
    target, result = await loop.llm.chat(setup.targets, request, turn.usage)
    totals.prompt += result.prompt_tokens
    totals.completion += result.completion_tokens
    totals.model, totals.provider = target.model_name, target.provider_id
    steps = parse_steps(result.content or "")
    plan = plans.create(turn.agent_id, turn.workspace_id, turn.user_id, turn.conversation_id, goal, steps)
    turn.result.plan_id = str(plan.id)
    turn.publish("phase", {"phase": "executing", "planId": str(plan.id), "steps": steps})
    status = "failed"
    try:
        for step in plans.steps_of(plan.id):
            loop.checkpoint(turn)
            plans.mark_step(step, "running")
            turn.publish("phase", {"phase": "executing", "planId": str(plan.id), "step": step.step_index})
            prompt = STEP_PROMPT.format(index=step.step_index, total=len(steps), step=step.description)
            answer = await loop.react(turn, conv, totals, setup, [ChatMessage("user", prompt)])
            plans.mark_step(step, "completed", answer.content)
        turn.phase = "answering"
        turn.publish("phase", {"phase": "answering", "planId": str(plan.id)})
        final = await loop.react(turn, conv, totals, setup, [ChatMessage("user", FINAL_PROMPT)], use_tools=False)
        status = "completed"
        return final
    except BaseException as exc:
        status = {"CancelledError": "stopped", "AwaitingApproval": "awaiting_approval"}.get(type(exc).__name__, "failed")
        raise
    finally:
        plans.finish(plan.id, status)
