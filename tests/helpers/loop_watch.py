"""Record whether blocking file work ran on the event loop's thread or in an executor, and time the loop's callbacks."""
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


class CallbackProbe:
    """The costliest single callback the event loop ran while the probe was on.

    Every callback the loop runs (a task step, a timer, an I/O callback) is timed with the loop thread's
    CPU clock: `worst_cpu_s` is the work one callback did without yielding, whatever the machine's load
    (other processes, executor threads holding the GIL, several callbacks due in the same loop pass do
    not add to it). `worst_wall_s` is that callback's wall-clock time, `worst` names it (the task's
    coroutine chain where it stopped, or the callback), `callbacks` counts what was timed.
    """

    def __init__(self) -> None:
        self.worst_cpu_s = 0.0
        self.worst_wall_s = 0.0
        self.worst = ""
        self.callbacks = 0
        self._original: Callable[[asyncio.Handle], None] | None = None

    def __enter__(self) -> "CallbackProbe":
        original = self._original = asyncio.Handle._run
        probe = self

        def timed(handle: asyncio.Handle) -> None:
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                original(handle)
            finally:
                spent = time.thread_time() - cpu
                probe.callbacks += 1
                if spent > probe.worst_cpu_s:
                    probe.worst_cpu_s, probe.worst_wall_s = spent, time.perf_counter() - wall
                    probe.worst = describe(handle)

        setattr(asyncio.Handle, "_run", timed)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._original is not None:
            setattr(asyncio.Handle, "_run", self._original)
            self._original = None


def describe(handle: asyncio.Handle) -> str:
    """A task step as its coroutine chain where it stopped (`outer@line > inner@line`), else the callback."""
    owner = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
    if not isinstance(owner, asyncio.Task):
        return repr(handle)[:300]
    chain: list[str] = []
    coro: Any = owner.get_coro()
    while coro is not None and hasattr(coro, "cr_frame"):
        frame = coro.cr_frame
        chain.append(f"{coro.__qualname__}@{frame.f_lineno if frame else 'end'}")
        coro = coro.cr_await
    return "task " + " > ".join(chain)
