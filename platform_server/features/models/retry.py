"""Trying a provider call again before its failure counts: rate limits, 5xx and dropped connections, with
exponential backoff and jitter, honouring the provider's Retry-After (capped)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Callable

from platform_server.integrations.llm.types import LlmError

log = logging.getLogger(__name__)

BASE_BACKOFF_S = 0.5  # the first retry waits 0.25-0.5 s, then doubling, up to the configured cap


def worth_retrying(exc: LlmError) -> bool:
    """A failure the same request may not meet again: 429, 5xx (the computed `retryable` flag of an HTTP
    status) or a connection that failed or dropped. A time limit that ran out is not retried: a provider
    that hung would hold the caller once more for the whole limit."""
    if exc.timeout:
        return False
    if exc.connection:
        return True
    return exc.status is not None and exc.retryable


@dataclass
class RetryPolicy:
    attempts: int  # retries after the first try (0: none)
    max_backoff_s: float  # the longest wait between tries, Retry-After included
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # tests swap it to record the waits
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, retry: int, exc: LlmError) -> float:
        """The wait before retry number `retry` (0-based): the provider's Retry-After when it gave one,
        else exponential backoff with jitter (so callers that failed together do not retry together)."""
        cap = max(0.0, self.max_backoff_s)
        if exc.retry_after_s is not None:
            return min(exc.retry_after_s, cap)
        return min(cap, BASE_BACKOFF_S * 2**retry) * self.rng.uniform(0.5, 1.0)

    async def pause(self, retry: int, exc: LlmError, what: str) -> bool:
        """Wait before retry number `retry` when the failure is worth it and retries are left; False otherwise."""
        if retry >= self.attempts or not worth_retrying(exc):
            return False
        wait = self.delay(retry, exc)
        log.info("%s failed (%s); retry %d of %d in %.2fs", what, exc.status or "connection", retry + 1, self.attempts, wait)
        await self.sleep(wait)
        return True
