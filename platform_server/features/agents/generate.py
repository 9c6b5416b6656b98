"""`POST /agents/generate`: a reviewable agent draft from a one-sentence requirement (nothing is saved)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from platform_server.features.models.errors import LlmFailure, failure_text
from platform_server.features.models.runtime import LlmRouter, resolve_targets
from platform_server.features.usage import meter
from platform_server.features.workflows.catalog import extract_json
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError
from platform_server.web.context import Caller

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter

PROMPT = (
    "You design AI agents. Answer with one JSON object only, no prose, with these fields: "
    '"name" (at most 40 characters), "icon" (one emoji), "description" (one sentence), '
    '"agentType" ("react", or "plan_execute" for multi-step projects), "systemPrompt" (the agent\'s '
    'instructions, second person), "role", "goal", "tags" (up to 5 short strings), '
    '"recommendedQuestions" (3 questions a user could ask it).'
)


def _strings(value: Any, limit: int) -> list[str]:
    return [str(v)[:100] for v in value][:limit] if isinstance(value, list) else []


async def generate(llm: LlmRouter, caller: Caller, requirement: str) -> dict[str, Any]:
    """Ask the default chat model for a draft; fields the model left out come back empty."""
    req = ChatRequest(model="", messages=[ChatMessage("system", PROMPT), ChatMessage("user", requirement)])
    try:
        with meter.scope("agent_generate", caller.workspace_id, caller.user_id):
            _, result = await llm.chat(resolve_targets(None, None, []), req)
    except LlmError as exc:
        raise LlmFailure(failure_text(exc, "agent generation")) from None
    draft = extract_json(result.content or "")
    if not isinstance(draft, dict):
        raise LlmFailure("The model's answer held no JSON draft")
    agent_type = draft.get("agentType") if draft.get("agentType") in ("react", "plan_execute") else "react"
    return {
        "name": str(draft.get("name") or "")[:100],
        "icon": str(draft.get("icon") or "")[:16],
        "description": str(draft.get("description") or "")[:2000],
        "agentType": agent_type,
        "runtimeType": "native",
        "systemPrompt": str(draft.get("systemPrompt") or "")[:50_000],
        "role": str(draft.get("role") or "")[:500],
        "goal": str(draft.get("goal") or "")[:2000],
        "tags": _strings(draft.get("tags"), 5),
        "recommendedQuestions": _strings(draft.get("recommendedQuestions"), 5),
    }
