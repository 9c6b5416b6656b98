"""Record whether blocking file work ran on the event loop's thread or in an executor."""
from __future__ import annotations

import asyncio
import pathlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest


def on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass
class LoopUse:
    on_loop: list[str] = field(default_factory=list)
    off_loop: list[str] = field(default_factory=list)

    def note(self, what: str) -> None:
        (self.on_loop if on_event_loop() else self.off_loop).append(what)


def watch(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, use: LoopUse,
          when: Callable[..., bool] = lambda *a, **k: True) -> None:
    """Wrap `owner.name` so each call (matching `when`) is noted with the thread it ran on."""
    original = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if when(*args, **kwargs):
            use.note(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)


def watch_file_io(monkeypatch: pytest.MonkeyPatch, fragment: str) -> LoopUse:
    """Note `Path.read_bytes` / `Path.write_bytes` calls on paths containing `fragment`."""
    use = LoopUse()
    for name in ("read_bytes", "write_bytes"):
        watch(monkeypatch, pathlib.Path, name, use, lambda path, *a, **k: fragment in str(path))
    return use


class LagProbe:
    """How late the event loop wakes a 10 ms sleeper: the longest stall while it runs.

    `worst_s` is wall-clock lateness, which on a shared, loaded machine also counts the time the OS
    ran other processes; `worst_cpu_s` is the CPU time the loop's thread spent in that same gap,
    i.e. the work that really blocked the loop, whatever the machine's load.
    """

    def __init__(self, period_s: float = 0.01) -> None:
        self.period_s = period_s
        self.worst_s = 0.0
        self.worst_cpu_s = 0.0
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before, cpu = loop.time(), time.thread_time()
            await asyncio.sleep(self.period_s)
            self.worst_s = max(self.worst_s, loop.time() - before - self.period_s)
            self.worst_cpu_s = max(self.worst_cpu_s, time.thread_time() - cpu)
            self.samples += 1

    def __enter__(self) -> "LagProbe":
        self._task = asyncio.ensure_future(self._run())
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._task is not None:
            self._task.cancel()
