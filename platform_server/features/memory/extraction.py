"""Memory that fills itself: facts are extracted in the background from conversations that went quiet
(`memory_extract_idle_s`) or gathered `memory_extract_messages` new messages since the last extraction."""

from __future__ import annotations

import datetime as dt
import logging
from typing import TYPE_CHECKING, Any, Callable

import peewee

from platform_server.db import utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.memory import facts, llm
from platform_server.features.memory.models import ExtractionMark
from platform_server.loops import Loop

if TYPE_CHECKING:
    from platform_server.config import Config
    from platform_server.features.models.runtime import LlmRouter

log = logging.getLogger(__name__)

TALK_ROLES = ("user", "assistant")
MAX_PER_TICK = 20  # conversations extracted by one tick; the rest wait for the next
# Answers in a row that are not the JSON asked for before those messages are given up on (a model that
# cannot answer JSON would otherwise be asked about the same messages after every idle period, forever).
MAX_UNREADABLE = 3


def mark(conversation_db_id: int, last_message_id: int, failed: bool = False, unreadable: bool = False) -> None:
    """Remember how far the conversation was extracted (a failure keeps the point and notes the time; the
    MAX_UNREADABLE-th unreadable answer in a row moves the point past these messages: they are given up on)."""
    now = utcnow()
    row = ExtractionMark.get_or_none(ExtractionMark.conversation_db_id == conversation_db_id)
    new = row is None
    if row is None:
        row = ExtractionMark(conversation_db_id=conversation_db_id, last_message_id=0)
    row.unreadable = (row.unreadable or 0) + 1 if unreadable else 0
    if row.unreadable >= MAX_UNREADABLE:
        log.warning("memory extraction of conversation %s: %d unreadable answers, skipped to %s", conversation_db_id, row.unreadable, last_message_id)
        failed, row.unreadable = False, 0
    if not failed:
        row.last_message_id = max(row.last_message_id, last_message_id)
    row.failed_at = now if failed else None
    row.update_time = now
    row.save(force_insert=new)  # the id is assigned on creation: a new row is inserted, not updated


def due(now: dt.datetime, idle_s: float, max_messages: int) -> list[tuple[Any, list[Any]]]:
    """Conversations with unextracted talk that went quiet or grew long enough, with those messages."""

    marks = {m.conversation_db_id: m for m in ExtractionMark.select()}
    latest = (
        Message.select(Message.conversation, peewee.fn.MAX(Message.id).alias("last_id"))
        .where(Message.role.in_(TALK_ROLES))
        .group_by(Message.conversation)
    )
    out: list[tuple[Any, list[Any]]] = []
    row: Any
    for row in latest.dicts():
        conv_id, last_id = row["conversation"], row["last_id"]
        m = marks.get(conv_id)
        if m is not None and m.last_message_id >= last_id:
            continue
        if m is not None and m.failed_at is not None and now - m.failed_at < dt.timedelta(seconds=max(idle_s, 60.0)):
            continue
        conv = Conversation.get_or_none(Conversation.id == conv_id)
        if conv is None or conv.stream_status == "running":
            continue
        after = m.last_message_id if m is not None else 0
        rows = list(
            Message.select().where((Message.conversation == conv_id) & (Message.id > after) & Message.role.in_(TALK_ROLES)).order_by(Message.id)
        )
        quiet = idle_s > 0 and now - rows[-1].create_time >= dt.timedelta(seconds=idle_s)
        long = max_messages > 0 and len(rows) >= max_messages
        if rows and (quiet or long):
            out.append((conv, rows))
        if len(out) >= MAX_PER_TICK:
            break
    return out


class IdleExtractionLoop(Loop):
    """Extract facts from quiet or long conversations with the same extractor as summarize; tests call tick()."""

    def __init__(self, router: LlmRouter, config: Config, clock: Callable[[], dt.datetime] = utcnow) -> None:
        super().__init__()
        self.router = router
        self.config = config
        self.clock = clock  # naive UTC now; tests swap it
        self.interval_s = max(1.0, float(config.memory_extract_tick_s or 60.0))

    def enabled(self) -> bool:
        config = self.config
        return config.memory_extract_idle_s > 0 or config.memory_extract_messages > 0

    async def tick(self) -> int:
        """Extract every due conversation; returns how many were extracted."""

        if not self.enabled():
            return 0
        config = self.config
        done = 0
        for conv, rows in due(self.clock(), config.memory_extract_idle_s, config.memory_extract_messages):
            agent = Agent.get_or_none((Agent.id == conv.agent_id) & (Agent.workspace_id == conv.workspace_id))
            if agent is None or not agent.enabled:
                mark(conv.id, rows[-1].id)
                continue
            try:
                await facts.extract(self.router, config, None, agent, conv, rows, heading="conversation (auto)")
            except Exception as exc:  # noqa: BLE001 - one conversation failing must not stop the others
                log.warning("memory extraction of conversation %s failed: %s", conv.id, exc)
                mark(conv.id, rows[-1].id, failed=True, unreadable=isinstance(exc, llm.UnreadableAnswer))
                continue
            mark(conv.id, rows[-1].id)
            done += 1
        return done
