"""In-flight chat turns: the event buffer, its subscribers, replay, and the registry that owns them."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from platform_server.features.chat.store import Answer
from platform_server.features.usage.meter import UsageAccount
from platform_server.json_types import JsonObject
from platform_server.ports import events
from platform_server.ports.events import Event, Stream, Subscription


@dataclass
class TurnResult:
    """What a finished turn leaves for callers that wait on it (sync chat, plan execute, cron)."""

    status: str | None = None  # completed | failed | stopped | awaiting_approval
    assistant_message_id: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    plan_id: str | None = None
    tool_calls: list[JsonObject] = field(default_factory=list)


@dataclass
class QueuedInput:
    message: str | None
    content_parts: list[JsonObject] | None
    row_id: int  # its stored row (chat.models.PendingInput), deleted when the turn stores it


@dataclass
class Turn:
    """One conversation's running (or just finished) turn; the stream belongs to it, not to a request."""

    key: str
    conversation_db_id: int
    conversation_id: str
    user_id: int
    workspace_id: int
    agent_id: int
    last_event_id: int
    usage: UsageAccount  # the turn's model calls, counted at each call site and stored with its end
    status: str = "running"
    hub: Stream = field(init=False)  # the turn's stream, replayable (opened on the event bus port, named by the turn's key)
    queue: list[QueuedInput] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    started_at: float = field(default_factory=time.time)
    last_event_at: float = field(default_factory=time.monotonic)
    finished_at: float | None = None
    stop_requested: bool = False
    phase: str = "queued"  # what it does now (see `set_phase`)
    result: TurnResult = field(default_factory=TurnResult)
    answer: Answer | None = None  # the assistant message being written

    def __post_init__(self) -> None:
        self.hub = events.current().stream(f"chat-turn:{self.key}", keep=True)

    @property
    def running(self) -> bool:
        return self.finished_at is None

    @property
    def events(self) -> list[Event]:
        return self.hub.history

    @property
    def subscribers(self) -> set[Subscription]:
        return self.hub.subscribers

    def next_event_id(self) -> int:
        """Increasing within the conversation and across restarts (time-based, never repeats)."""
        self.last_event_id = max(self.last_event_id + 1, int(time.time() * 1000) * 1000)
        return self.last_event_id

    def publish(self, name: str, data: JsonObject, event_id: int | None = None) -> Event:
        """Send an event; `event_id` one taken earlier with `next_event_id` (stored before it is sent)."""
        event = self.hub.publish(name, data, event_id or self.next_event_id())
        self.last_event_at = time.monotonic()
        return event

    def set_phase(self, phase: str, tool_name: str | None = None) -> None:
        """Say what the turn does now (queued, thinking, calling_tool, awaiting_approval, writing): a `phase`
        event on each change, so a client shows live status before the first token (a tool call always says which)."""
        if phase == self.phase and tool_name is None:
            return
        self.phase = phase
        self.publish("phase", {"phase": phase, "toolName": tool_name} if tool_name else {"phase": phase})

    def subscribe(self, after_id: int = 0) -> Subscription:
        """Buffered events after `after_id` (its `replay`), then the live ones until the turn finishes."""
        return self.hub.subscribe(after_id)

    def finish(self, status: str) -> None:
        self.status = status
        self.finished_at = time.monotonic()
        self.hub.close()

    def snapshot(self) -> JsonObject:
        return {
            "conversationId": self.conversation_id,
            "userId": str(self.user_id),
            "agentId": str(self.agent_id),
            "workspaceId": str(self.workspace_id),
            "status": self.status,
            "phase": self.phase,
            "running": self.running,
            "startedAt": self.started_at,
            "secondsSinceLastEvent": round(time.monotonic() - self.last_event_at, 3),
            "events": len(self.events),
            "subscribers": len(self.subscribers),
            "queued": len(self.queue),
            "stopRequested": self.stop_requested,
        }


class TurnRegistry:
    """All turns of the process, by conversation key; finished ones stay replayable for a while."""

    def __init__(self, retention_s: float) -> None:
        self.retention_s = retention_s
        self._turns: dict[str, Turn] = {}

    def get(self, key: str) -> Turn | None:
        return self._turns.get(key)

    def is_running(self, key: str) -> bool:
        turn = self._turns.get(key)
        return bool(turn and turn.running)

    def add(self, turn: Turn) -> None:
        self._turns[turn.key] = turn

    def all(self) -> list[Turn]:
        return list(self._turns.values())

    def running(self) -> list[Turn]:
        return [t for t in self._turns.values() if t.running]

    def cancel(self, key: str) -> bool:
        """Stop a running turn at once (its runner saves the partial answer)."""
        turn = self._turns.get(key)
        if turn is None or not turn.running or turn.task is None:
            return False
        turn.stop_requested = True
        turn.task.cancel()
        return True

    def drop(self, key: str) -> None:
        self._turns.pop(key, None)

    def prune(self, now: float | None = None) -> int:
        """Forget finished turns older than the retention; returns how many."""
        now = time.monotonic() if now is None else now
        old = [k for k, t in self._turns.items() if t.finished_at is not None and now - t.finished_at > self.retention_s]
        for k in old:
            del self._turns[k]
        return len(old)

    def stuck(self, idle_s: float, now: float | None = None) -> list[Turn]:
        now = time.monotonic() if now is None else now
        return [t for t in self.running() if now - t.last_event_at > idle_s]
