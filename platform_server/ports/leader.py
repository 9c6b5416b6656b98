"""The leader lock port: whether this process runs the work that must run once across all of them.

Cron, dreaming and memory extraction, goal judging, the skills curator, folder watchers' scans, workflow
pause timeouts, the wiki's re-embedding and the purges run on the leader only: each `Loop` with
`leader_only` (the default) asks `is_leader()` before every run and skips the run when it is not.
On the SQLite file there is one process and it is always the leader; on PostgreSQL (several processes,
`serve --workers N`) an advisory lock elects one, and another takes over when it dies: a loop then finds
its turn at its next interval. Messenger gateways, the sweep of a dead process's turns and the start-up
recovery of runs left `running` ask it too. Per-process housekeeping (this process's disk check, its own turns' replay buffers)
is not leader-only.
"""

from __future__ import annotations

from typing import Protocol


class LeaderLock(Protocol):
    def is_leader(self) -> bool:
        """Whether this process holds the lock now (cheap: asked before each loop's run)."""


class ThisProcess:
    """The default: a single process, always the leader."""

    def is_leader(self) -> bool:
        return True


_current: LeaderLock = ThisProcess()


def use(lock: LeaderLock) -> None:
    """Install the process's leader lock (at startup)."""
    global _current
    _current = lock


def current() -> LeaderLock:
    return _current


def is_leader() -> bool:
    return _current.is_leader()
