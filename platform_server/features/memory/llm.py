"""Memory's model calls: through the platform's router with the agent's model, answers parsed as JSON."""

from __future__ import annotations

import json
import re
from typing import Any

from platform_server.features.agents import service as agents
from platform_server.features.models import capabilities
from platform_server.features.models.errors import LlmFailure, failure_text
from platform_server.features.models.runtime import LlmRouter, ModelTarget, resolve_targets
from platform_server.features.usage import meter
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*|\s*```$")


def targets_for(agent: Any) -> list[Any]:
    """The models to try for this agent (its own, then the default, then its preferred providers).

    Raises LlmFailure (2001) `No chat model configured` when there is none.
    """

    return resolve_targets(agent.model_name or None, agent.model_provider or None, agents.provider_preferences(agent.id))


class UnreadableAnswer(LlmFailure):
    """The model answered, but not the JSON asked for: asking again the same way costs a call and
    likely fails the same, so callers count it as an attempt instead of retrying it on every tick."""


def parse_json(text: str) -> Any:
    """The JSON value of a model answer (code fences and text around the value tolerated)."""
    cleaned = _FENCE.sub("", text.strip())
    try:
        return json.loads(cleaned)
    except ValueError:
        pass
    for opener, closer in (("[", "]"), ("{", "}")):
        start, end = cleaned.find(opener), cleaned.rfind(closer)
        if 0 <= start < end:
            try:
                return json.loads(cleaned[start : end + 1])
            except ValueError:
                continue
    raise UnreadableAnswer("The memory model did not answer valid JSON")


async def ask(
    router: LlmRouter, targets: list[ModelTarget], system: str, user: str, max_tokens: int = 2000, *, scope: Any = None, source: str = "memory"
) -> tuple[str, str]:
    """One whole call; returns (answer text, `provider/model`). Provider failures become 2001.

    `scope` (a memory Scope) and `source` label the call in the usage records.
    """
    req = ChatRequest(model="", messages=[ChatMessage("system", system), ChatMessage("user", user)], max_tokens=max_tokens, temperature=0.2)
    ids = (scope.workspace_id, scope.user_id, scope.agent_id) if scope is not None else (None, None, None)
    try:
        with meter.scope(source, *ids):
            target, result = await router.chat(targets, req)
    except LlmError as exc:
        raise LlmFailure(f"Memory model call failed: {failure_text(exc, 'memory model call')}")
    return result.content or "", f"{target.provider_id}/{target.model_name}"


JOBS = {"memory": "memory extraction", "goal": "goal judging", "dreaming": "dreaming"}


async def ask_json(
    router: LlmRouter, targets: list[ModelTarget], system: str, user: str, max_tokens: int = 2000, *, scope: Any = None, source: str = "memory"
) -> tuple[Any, str]:
    # A model that cannot write JSON (the embedded demo model) is skipped at once, not asked for minutes.
    targets = capabilities.able(targets, "json", JOBS.get(source, source))
    text, model = await ask(router, targets, system, user, max_tokens, scope=scope, source=source)
    return parse_json(text), model


EXTRACT_SYSTEM = (
    "You extract durable facts worth remembering about the user from a conversation between the user "
    "and an assistant: preferences, personal details, ongoing projects, decisions, constraints. Skip "
    "small talk and anything only true for this moment. Answer only with a JSON array of objects "
    '{"key": "short_snake_case_topic", "statement": "one self-contained sentence", "confidence": 0.0-1.0}. '
    "Reuse the key of a known fact when the new statement is about the same thing. Answer [] when "
    "there is nothing worth remembering."
)

MERGE_SYSTEM = (
    "Two remembered statements about the same topic disagree or overlap. Write one statement that keeps "
    "what is still true and most recent. Answer only with the statement, no quotes, no explanation."
)

DREAM_SYSTEM = (
    "You consolidate an assistant's long-term memory of one user, like sleep consolidates a day. You get "
    "the current memory entries (key, statement, recall score), the recent daily notes, and the keys the "
    "user edited by hand (never touch those). Merge duplicates, update entries the notes changed, add "
    "durable new knowledge from the notes, and remove entries that are stale, contradicted or have a "
    "low score. Answer only with JSON: "
    '{"summary": "one or two sentences for the user", "entries": [{"key": "snake_case_key", '
    '"action": "add|update|remove", "after": "the new statement (omit for remove)"}]}. '
    "List only changes; an empty entries list is fine."
)
