"""Turns across processes (`redis_url`, several processes behind one port): re-attach, stop, queued input and
approvals for a turn another process runs, and the sweep of turns whose process died.

A turn's stream is named `chat-turn:<key>` on the event bus port. On the in-process bus every call here
finds nothing (one process: the registry has every turn); on Redis the stream, its owner's lease and
the owner's control channel are shared, so a request reaching any process acts on the turn where it runs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from platform_server.features.chat import approvals, store
from platform_server.features.chat.turns import Turn
from platform_server.features.conversations.models import Conversation
from platform_server.json_types import JsonObject, int_of, str_of
from platform_server.leases import RunKind
from platform_server.ports import events
from platform_server.ports.events import Stream

if TYPE_CHECKING:
    from platform_server.features.chat.service import ChatService

log = logging.getLogger(__name__)

PREFIX = "chat-turn:"
STOP_WAIT_S = 5.0  # a stop waits this long for the turn to end (the answer says whether it did)


def stream_name(key: str) -> str:
    return PREFIX + key


async def attach(key: str) -> Stream | None:
    """The stream of the conversation's turn run by another process (or ended there within its replay window)."""
    return await events.current().attach(stream_name(key))


async def stop(key: str) -> bool:
    """Stop the turn another process runs; True when it stopped."""
    answer = await events.current().ask(stream_name(key), {"op": "stop"})
    return bool(answer and answer.get("stopped"))


async def forward_input(key: str, message: str | None, parts: list[JsonObject] | None, user_id: int, role: str | None) -> JsonObject | None:
    """A follow-up (or an `/approve`, `/deny`) for the turn another process runs: that process's answer, in the
    interrupt route's shape, or None when no living process runs the conversation's turn."""
    request: JsonObject = {"op": "input", "message": message, "parts": list(parts) if parts else None, "userId": user_id, "role": role}
    return await events.current().ask(stream_name(key), request)


async def answer(runtime: ChatService, name: str, request: JsonObject) -> JsonObject | None:
    """What this process answers another's ask about one of its turns (`ask` on the event bus port)."""
    key = name[len(PREFIX) :]
    turn = runtime.turns.get(key)
    if turn is None or not turn.running:
        return None
    if request.get("op") == "stop":
        return {"stopped": await runtime.stop_here(turn, STOP_WAIT_S)}
    if request.get("op") == "input":
        return _take_input(runtime, turn, request)
    return None


def _take_input(runtime: ChatService, turn: Turn, request: JsonObject) -> JsonObject:
    message = str_of(request.get("message"))
    raw_parts = request.get("parts")
    parts = [p for p in raw_parts if isinstance(p, dict)] if isinstance(raw_parts, list) else None
    user_id = int_of(request.get("userId"))
    if not parts and (command := approvals.command_of(message or "")) is not None:
        outcome = approvals.resolve_as(runtime.tools, user_id, str_of(request.get("role")), turn.conversation_id, command)
        if outcome is not None:
            return {"queued": False, **outcome.answer()}
    size = runtime.queue_input(turn.key, message, parts, user_id)
    return {"queued": False, "reason": "no_active_stream"} if size is None else {"queued": True, "queueSize": size}


def _running_keys() -> list[str]:
    return [c.key for c in Conversation.select(Conversation.key).where(Conversation.stream_status == "running")]


async def live_at_start() -> frozenset[str]:
    """At start: the conversations marked running whose turn a living process runs (left running)."""
    keys = _running_keys()
    live = await events.current().live([stream_name(k) for k in keys])
    return frozenset(k for k in keys if stream_name(k) in live)


def turn_kind(runtime: ChatService) -> RunKind:
    """Turns as leased runs (platform_server/leases.py): a turn's stream holds its lease; the leader frees the
    conversations whose turn's process was killed (its half-written answer failed) and ends their streams, so
    readers re-attached on other processes end too."""

    def running() -> list[str]:
        return [k for k in _running_keys() if not runtime.turns.is_running(k)]

    async def lost(keys: list[str]) -> int:
        count = store.free_abandoned(keys)
        for key in keys:
            await events.current().end(stream_name(key))
        return count

    return RunKind(PREFIX, running, lost)
