"""Snowflake ids: 41 bits of milliseconds since 2024-01-01, 10 bits of node, 12 bits of sequence."""

from __future__ import annotations

import threading
import time

_EPOCH_MS = 1_704_067_200_000


class Snowflake:
    """Thread-safe, monotonic 64-bit id generator."""

    def __init__(self, node: int = 1) -> None:
        self._node = node & 0x3FF
        self._lock = threading.Lock()
        self._last_ms = 0
        self._seq = 0

    def next(self) -> int:
        with self._lock:
            now = max(int(time.time() * 1000) - _EPOCH_MS, self._last_ms)
            if now == self._last_ms:
                self._seq = (self._seq + 1) & 0xFFF
                if self._seq == 0:
                    now += 1  # sequence exhausted in this millisecond: borrow the next one
            else:
                self._seq = 0
            self._last_ms = now
            return (now << 22) | (self._node << 12) | self._seq


_generator = Snowflake()


def use_node(node: int) -> None:
    """This process's node (several processes on one database: each its own, see pg.claim_node)."""
    global _generator
    _generator = Snowflake(node)


def next_id() -> int:
    """A new Snowflake id."""
    return _generator.next()
