"""Record whether blocking file work ran on the event loop's thread or in an executor."""
from __future__ import annotations

import asyncio
import pathlib
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
