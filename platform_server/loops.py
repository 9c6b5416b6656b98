"""Background loops: objects with an interval and a tick(); the IOLoop schedules them, tests call tick()."""

from __future__ import annotations

import inspect
import logging
from typing import Any

from tornado.ioloop import PeriodicCallback

log = logging.getLogger(__name__)


class Loop:
    """Subclass and implement tick(); start() schedules it every interval_s seconds."""

    interval_s: float = 60.0

    def __init__(self) -> None:
        self._callback: PeriodicCallback | None = None
        self._running = False

    def tick(self) -> Any:
        raise NotImplementedError

    async def _safe_tick(self) -> None:
        if self._running:
            return  # a slow tick is never run twice at once
        self._running = True
        try:
            result = self.tick()
            if inspect.isawaitable(result):
                await result
        except Exception:  # noqa: BLE001 - a failing tick must not stop the loop
            log.exception("%s tick failed", type(self).__name__)
        finally:
            self._running = False

    def start(self) -> None:
        if self._callback is None:
            self._callback = PeriodicCallback(self._safe_tick, self.interval_s * 1000, jitter=0.1)
            self._callback.start()

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
