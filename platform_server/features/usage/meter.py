"""The one recording point of model usage: the LLM router records every call.

A caller that holds a `UsageAccount` (a chat turn) passes it to the router at the call site and the call
is counted on it. Other callers label their calls with `scope(source, workspace_id, ...)`; the label lives
in a context variable, so it follows the call into the router (and into tasks started inside it). An outer
scope's source wins, so a chat turn run by a workflow counts as `workflow`; inner scopes fill in the ids
the outer one lacked.
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
class UsageAccount:
    """Model calls counted explicitly: a caller passes its account to the LLM router (`usage=`), which records
    each call on it. A chat turn holds its records until its end commit stores them with its answer (one commit);
    records made after that (a task the turn started, still running) are stored at once."""

    scope: UsageScope
    hold: bool = False
    records: list[dict[str, object]] = dataclasses.field(default_factory=list)
    closed: bool = False

    def record(self, provider: str | None, model: str | None, prompt_tokens: int, completion_tokens: int, kind: str = "chat") -> None:
        values = _values(self.scope, provider, model, prompt_tokens, completion_tokens, kind)
        if self.hold and not self.closed:
            self.records.append(values)
            return
        _store(values)

    def flush(self) -> None:
        """Store the held records (call it in the transaction they belong to); later ones are stored at once."""
        self.closed = True
        for values in self.records:
            _store(values)
        self.records.clear()

    @contextlib.contextmanager
    def lent(self) -> Iterator[None]:
        """Count on this account the model calls another area makes inside the block on the caller's behalf
        (a tool, knowledge retrieval): those areas label their calls with `scope`, and this one wins."""
        scope_token = _current.set(self.scope)
        account_token = _lent.set(self)
        try:
            yield
        finally:
            _lent.reset(account_token)
            _current.reset(scope_token)


# The account lent to the calls of the current block (`UsageAccount.lent`): their records join it.
_lent: contextvars.ContextVar[UsageAccount | None] = contextvars.ContextVar("usage_account", default=None)


def account(
    source: str,
    workspace_id: int | None = None,
    user_id: int | None = None,
    agent_id: int | None = None,
    conversation_id: str | None = None,
    hold: bool = False,
) -> UsageAccount:
    """An account for the caller's model calls; an enclosing scope's source wins (a chat turn a workflow runs
    counts as `workflow`), as with `scope`."""
    return UsageAccount(_merged(source, workspace_id, user_id, agent_id, conversation_id), hold=hold)


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
    """Store one model call made without an account, under the current scope (a failure to store never fails the call)."""
    lent = _lent.get()
    if lent is not None:
        lent.record(provider, model, prompt_tokens, completion_tokens, kind)
        return
    _store(_values(_current.get() or UsageScope("other"), provider, model, prompt_tokens, completion_tokens, kind))


def _values(s: UsageScope, provider: str | None, model: str | None, prompt_tokens: int, completion_tokens: int, kind: str) -> dict[str, object]:
    return {
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


def _store(values: dict[str, object]) -> None:
    try:
        insert_row(UsageRecord, **values)
    except Exception:  # noqa: BLE001 - bookkeeping must not break an answer
        log.exception("recording model usage failed")


def estimate_tokens(texts: list[str]) -> int:
    """The calibrated token estimate, for embedding providers that report no count."""
    return sum(max(1, estimate(t)) for t in texts if t)
