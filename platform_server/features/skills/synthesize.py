"""Draft a skill from a conversation with the default chat model (a `synthesized` skill, disabled)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from platform_server.features.conversations import service as conversations
from platform_server.features.models.errors import LlmFailure, failure_text
from platform_server.features.models.runtime import LlmRouter, resolve_targets
from platform_server.features.skills import frontmatter as fm
from platform_server.features.skills import service
from platform_server.features.skills.models import Skill
from platform_server.features.usage import meter
from platform_server.integrations.llm.types import ChatMessage, ChatRequest, LlmError
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter

TRANSCRIPT_CAP = 24_000  # characters of the conversation sent to the model (the latest ones)
MESSAGE_CAP = 4_000

SYSTEM = """You turn a conversation into a reusable skill for an AI agent.
Write a SKILL.md file: a front matter block, then markdown instructions.

---
name: <short-kebab-case-name>
description: <one sentence: when to use this skill>
---

# <Title>

<Numbered steps and rules another agent can follow to repeat this kind of task well.
Generalize from the conversation; leave out one-off details, names and any secrets.>

Answer with the SKILL.md content only."""


def transcript(conv: Any) -> str:
    """User and assistant turns (tool results summarized), most recent kept within the cap."""
    lines: list[str] = []
    for m in conversations.history(conv):
        text = (m.content or "").strip()
        if m.role == "tool":
            text = f"[tool {m.tool_name} result: {text[:300]}]"
        elif m.role not in ("user", "assistant") or not text:
            continue
        lines.append(f"{m.role.upper()}: {text[:MESSAGE_CAP]}")
    out: list[str] = []
    size = 0
    for line in reversed(lines):
        if size + len(line) > TRANSCRIPT_CAP:
            break
        out.append(line)
        size += len(line) + 2
    return "\n\n".join(reversed(out))


def _draft(text: str, conversation_id: str, name: str | None) -> dict[str, Any]:
    body = fm.strip_fences(text)
    try:
        doc = fm.parse(body)
    except BadRequest:
        doc = fm.SkillDoc({}, body, False)
    if not doc.has_front_matter:
        body = fm.compose({}, body)
    fallback = fm.slugify(doc.text("name") or f"conversation-{conversation_id}")
    desc = doc.text("description") or f"Synthesized from conversation {conversation_id}"
    return service.prepare_new(body, name or fallback, description=desc)


async def synthesize(router: LlmRouter, caller: Caller, conversation_id: str, name: str | None) -> Skill:
    """Ask the default model for a SKILL.md drafted from the caller's conversation and store it."""

    conv = conversations.owned(caller, conversations.validate_id(conversation_id))
    if conv.workspace_id != caller.workspace_id:
        raise NotFound("Conversation not found")
    if name:
        fm.check_slug(name)
        if service.get_by_name(caller, name) is not None:
            raise Conflict(f"A skill named '{name}' already exists in this workspace")
    text = transcript(conv)
    if not text:
        raise BadRequest("Conversation has no messages")
    request = ChatRequest(
        model="",
        messages=[ChatMessage("system", SYSTEM), ChatMessage("user", f"Conversation:\n\n{text}")],
        max_tokens=2000,
        temperature=0.2,
    )
    try:
        with meter.scope("skill_synthesis", caller.workspace_id, caller.user_id):
            _, result = await router.chat(resolve_targets(None, None, []), request)
    except LlmError as exc:
        raise LlmFailure(failure_text(exc, "skill synthesis"))
    if not result.content.strip():
        raise LlmFailure("The model returned no skill")
    values = _draft(result.content, conv.conversation_id, name)
    if not name:
        values = service.prepare_new(values["content"], service.free_name(caller, values["name"]))
    return service.create_skill(caller, values, "synthesized", f"conversation:{conv.conversation_id}", False)
