"""Start: the loop that moves stored messages into the keyword search's trigram index, in batches."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from platform_server.features.conversations import SEARCH_INDEX, service
from platform_server.loops import Loop

if TYPE_CHECKING:
    from platform_server.platform import Platform

INDEX_EVERY_S = 1.0  # how long a stored message waits for the index at most (the search reads the queue meanwhile)
INDEX_BATCH = 500  # per transaction on the IOLoop: about 3 ms of indexing, then other callbacks run


class SearchIndexLoop(Loop):
    """Index the messages queued since the last tick (models.MESSAGE_FTS_PENDING), a batch at a time."""

    interval_s = INDEX_EVERY_S
    leader_only = False  # SQLite only (one process); PostgreSQL has no queue

    async def tick(self) -> int:
        total = 0
        while True:
            done = service.index_pending(INDEX_BATCH)
            total += done
            if done < INDEX_BATCH:
                return total
            await asyncio.sleep(0)  # a backlog: the next batch after the callbacks waiting now


async def start(platform: Platform) -> None:
    loop = SearchIndexLoop()
    platform.set_runtime(SEARCH_INDEX, loop)
    loop.start()


async def stop(platform: Platform) -> None:
    platform.runtime(SEARCH_INDEX).stop()
