"""The one recording point of model usage: the LLM router calls `record` after every call.

Callers label their calls with `scope(source, workspace_id, ...)`; the label lives in a context
variable, so it follows the call into the router (and into tasks started inside it). An outer
scope's source wins, so a chat turn run by a workflow counts as `workflow`; inner scopes fill in
the ids the outer one lacked.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from platform_server.db import insert_row, utcnow
from platform_server.features.usage.models import UsageRecord
from platform_server.integrations.llm.tokens import estimate

log = logging.getLogger(__name__)

SOURCES = (
    "chat",
    "wiki",
    "research",
    "transform",
    "wiki_enrich",
    "wiki_repair",
    "agent_generate",
    "memory",
    "dreaming",
    "workflow",
    "team",
    "curator",
    "skill_synthesis",
    "goal",
    "channel",
    "cron",
    "openai_api",  # the OpenAI-compatible door (features/doors)
    "mcp",  # the MCP server door (features/doors)
    "other",
)


@dataclass(frozen=True)
class UsageScope:
    source: str
    workspace_id: int | None = None
    user_id: int | None = None
    agent_id: int | None = None
    conversation_id: str | None = None


_current: contextvars.ContextVar[UsageScope | None] = contextvars.ContextVar("usage_scope", default=None)


@dataclass
class _Deferred:
    """Records held for the task's next write (a chat turn stores them with its answer: one commit)."""

    records: list[dict[str, object]] = dataclasses.field(default_factory=list)
    closed: bool = False


_deferred: contextvars.ContextVar[_Deferred | None] = contextvars.ContextVar("usage_deferred", default=None)


def defer() -> None:
    """Hold the current task's records until `flush_deferred()` (call it in a transaction of the task's own)."""
    _deferred.set(_Deferred())


def flush_deferred() -> None:
    """Store the held records; later ones (a task started by this one, still running) are stored at once."""
    held = _deferred.get()
    if held is None:
        return
    held.closed = True
    for values in held.records:
        _store(values)
    held.records.clear()


def current() -> UsageScope | None:
    return _current.get()


def _merged(source: str, workspace_id: int | None, user_id: int | None, agent_id: int | None, conversation_id: str | None) -> UsageScope:
    outer = _current.get()
    inner = UsageScope(source, workspace_id, user_id, agent_id, conversation_id)
    if outer is None:
        return inner
    return dataclasses.replace(
        inner,
        source=outer.source,
        workspace_id=workspace_id if workspace_id is not None else outer.workspace_id,
        user_id=user_id if user_id is not None else outer.user_id,
        agent_id=agent_id if agent_id is not None else outer.agent_id,
        conversation_id=conversation_id if conversation_id is not None else outer.conversation_id,
    )


@contextlib.contextmanager
def scope(
    source: str, workspace_id: int | None = None, user_id: int | None = None, agent_id: int | None = None, conversation_id: str | None = None
) -> Iterator[UsageScope]:
    """Label the model calls made inside the block (and in tasks created inside it)."""
    token = _current.set(_merged(source, workspace_id, user_id, agent_id, conversation_id))
    try:
        yield _current.get()  # type: ignore[misc]
    finally:
        _current.reset(token)


def enter(
    source: str, workspace_id: int | None = None, user_id: int | None = None, agent_id: int | None = None, conversation_id: str | None = None
) -> None:
    """Label the rest of the current task (for a task's own body, whose context dies with it)."""
    _current.set(_merged(source, workspace_id, user_id, agent_id, conversation_id))


def source_of_conversation(conversation_source: str | None) -> str:
    """A chat turn's usage source from its conversation's `source` (web, cron, openai_api, mcp, im_a..im_h, webchat)."""
    if conversation_source in ("cron", "openai_api", "mcp"):
        return conversation_source
    if conversation_source and conversation_source != "web":
        return "channel"
    return "chat"


def record(provider: str | None, model: str | None, prompt_tokens: int, completion_tokens: int, kind: str = "chat") -> None:
    """Store one model call under the current scope (a failure to store never fails the call)."""
    s = _current.get() or UsageScope("other")
    values: dict[str, object] = {
        "workspace_id": s.workspace_id,
        "source": s.source,
        "kind": kind,
        "provider": provider,
        "model": model,
        "user_id": s.user_id,
        "agent_id": s.agent_id,
        "conversation_id": s.conversation_id,
        "prompt_tokens": max(0, int(prompt_tokens)),
        "completion_tokens": max(0, int(completion_tokens)),
        "create_time": utcnow(),  # when the call ended, even when stored a moment later
    }
    held = _deferred.get()
    if held is not None and not held.closed:
        held.records.append(values)
        return
    _store(values)


def _store(values: dict[str, object]) -> None:
    try:
        insert_row(UsageRecord, **values)
    except Exception:  # noqa: BLE001 - bookkeeping must not break an answer
        log.exception("recording model usage failed")


def estimate_tokens(texts: list[str]) -> int:
    """The calibrated token estimate, for embedding providers that report no count."""
    return sum(max(1, estimate(t)) for t in texts if t)
