"""Start: the loop that moves stored messages into the keyword search's trigram index, in batches."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Callable

from platform_server.features.conversations import SEARCH_INDEX, service
from platform_server.loops import Loop
from platform_server.ports.database import storage_fault

if TYPE_CHECKING:
    from platform_server.platform import Platform

INDEX_EVERY_S = 1.0  # how long a stored message waits for the index at most (the search reads the queue meanwhile)
INDEX_BATCH = 500  # per transaction on the IOLoop: about 3 ms of indexing, then other callbacks run


class SearchIndexLoop(Loop):
    """Index the messages queued since the last tick (models.MESSAGE_FTS_PENDING), a batch at a time."""

    interval_s = INDEX_EVERY_S
    leader_only = False  # SQLite only (one process); PostgreSQL has no queue

    def __init__(self, read_only: Callable[[], bool] = lambda: False) -> None:
        super().__init__()
        self.read_only = read_only  # (a full disk: nothing is written until space returns)

    async def tick(self) -> int:
        total = 0
        while not self.read_only():
            try:
                done = service.index_pending(INDEX_BATCH)
            except Exception as exc:
                if storage_fault(exc) != "busy":
                    raise
                return total  # another connection holds the write lock: the next tick (the search reads the queue)
            total += done
            if done < INDEX_BATCH:
                return total
            await asyncio.sleep(0)  # a backlog: the next batch after the callbacks waiting now
        return total


async def start(platform: Platform) -> None:
    loop = SearchIndexLoop(lambda: platform.storage.read_only)
    platform.set_runtime(SEARCH_INDEX, loop)
    loop.start()


async def stop(platform: Platform) -> None:
    platform.runtime(SEARCH_INDEX).stop()
