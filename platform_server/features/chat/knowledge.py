"""A turn's knowledge: the agent's KB digest and the passages retrieved for the user's question join
the system prompt, and their citations go with the answer."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Callable

from platform_server.config import Config
from platform_server.features.agents.models import Agent
from platform_server.features.chat import context
from platform_server.features.chat.store import TurnStore
from platform_server.features.usage.meter import UsageAccount
from platform_server.features.wiki.retrieval import Knowledge

if TYPE_CHECKING:
    from platform_server.features.chat.turn_setup import TurnSetup

log = logging.getLogger(__name__)

# The wiki's retrieval for a turn: (workspace id, agent id, query, token counter) -> digest and passages.
Retrieve = Callable[[int, int, str, Callable[[str], int]], Awaitable[Knowledge]]


async def add(
    retrieve: Retrieve,
    config: Config,
    store: TurnStore,
    usage: UsageAccount,
    agent: Agent,
    question: str,
    conversation_db_id: int,
    resumed: bool,
    setup: TurnSetup,
) -> None:
    """Extend `setup.system_prompt` and set `setup.citations` for the agent's question (the query's embedding
    counted on the turn's `usage`); `resumed`: the message is an approval command (or held for one), the
    question is the one before it."""
    query = store.last_question(conversation_db_id) if resumed else question
    counter = context.window_for(config, setup.targets).counter
    try:
        with usage.lent():
            knowledge = await retrieve(agent.workspace_id, agent.id, query, counter.count)
    except Exception:  # noqa: BLE001 - the answer goes on without its passages rather than failing
        log.warning("knowledge retrieval for agent %s failed", agent.id, exc_info=True)
        return
    if knowledge.prompt:
        setup.system_prompt = "\n\n".join(p for p in (setup.system_prompt, knowledge.prompt) if p)
    setup.citations = list(knowledge.citations)
