"""A turn's knowledge: the agent's KB digest and the passages retrieved for the user's question join
the system prompt, and their citations go with the answer."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from platform_server.features.chat import answers, context
from platform_server.features.wiki import retrieval

if TYPE_CHECKING:
    from platform_server.platform import Platform

log = logging.getLogger(__name__)


async def add(platform: Platform, agent: Any, question: str, conversation_db_id: int, resumed: bool, setup: Any) -> None:
    """Extend `setup.system_prompt` and set `setup.citations` (a `TurnSetup`) for the agent's question;
    `resumed`: the message is an approval command (or held for one), the question is the one before it."""
    query = answers.last_question(conversation_db_id) if resumed else question
    counter = context.window_for(platform.config, setup.targets).counter
    try:
        knowledge = await retrieval.for_turn(platform, agent.workspace_id, agent.id, query, counter.count)
    except Exception:  # noqa: BLE001 - the answer goes on without its passages rather than failing
        log.warning("knowledge retrieval for agent %s failed", agent.id, exc_info=True)
        return
    if knowledge.prompt:
        setup.system_prompt = "\n\n".join(p for p in (setup.system_prompt, knowledge.prompt) if p)
    setup.citations = knowledge.citations
