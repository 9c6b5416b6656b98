"""Background loops: objects with an interval and a tick(); the IOLoop schedules them, tests call tick().

A scheduled run of a `leader_only` loop (the default) happens only while this process is the leader
(ports/leader.py): with several processes, shared work (cron, dreaming, purges) runs on one of them.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from tornado.ioloop import PeriodicCallback

from platform_server.ports import leader

log = logging.getLogger(__name__)


class Loop:
    """Subclass and implement tick(); start() schedules it every interval_s seconds."""

    interval_s: float = 60.0
    leader_only = True  # False: this process's own housekeeping, run by every process

    def __init__(self) -> None:
        self._callback: PeriodicCallback | None = None
        self._running = False

    def tick(self) -> Any:
        raise NotImplementedError

    async def run_scheduled(self) -> bool:
        """One scheduled run (what the timer calls): skipped while another runs or, for a `leader_only`
        loop, while this process is not the leader; True when tick() ran."""
        if self._running:
            return False  # a slow tick is never run twice at once
        if self.leader_only and not leader.is_leader():
            return False  # another process runs it; asked again at the next interval
        self._running = True
        try:
            result = self.tick()
            if inspect.isawaitable(result):
                await result
        except Exception:  # noqa: BLE001 - a failing tick must not stop the loop
            log.exception("%s tick failed", type(self).__name__)
        finally:
            self._running = False
        return True

    async def _safe_tick(self) -> None:
        await self.run_scheduled()

    def start(self) -> None:
        if self._callback is None:
            self._callback = PeriodicCallback(self._safe_tick, self.interval_s * 1000, jitter=0.1)
            self._callback.start()

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
