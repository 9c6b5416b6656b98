"""Leases of running work across processes (issue 31): what a process runs, it holds a lease on; the leader
ends the runs whose lease lapsed, because the process that ran them was killed.

One mechanism for every kind of run (chat turns, cron runs, workflow runs, team runs). A run is named
`<prefix><id>` on the event bus port: `hold(name)` when it starts here, `release(name)` when it ends here.
With `redis_url` the lease is the `owner:<name>` key the bus renews every LEASE_S / 3 for all of this
process's runs in one round trip (ports/redis_events.py; a chat turn's stream holds its own). A `Sweep`
per kind, on the leader, reads which runs the database records as running, asks the bus which of them a
living process holds and ends the others (`lost`) once they were found unheld at two ticks in a row (a
run just recorded here takes its lease a moment later).

On the in-process bus (one process, the SQLite default) `hold`/`release` do nothing and no sweep starts:
the process that stopped was the only one, and the start-up recovery of each area ends what it left
running. No timer, no write.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from platform_server.config import Config
from platform_server.loops import Loop
from platform_server.ports import events

log = logging.getLogger(__name__)

LOST_ERROR = "Interrupted: the process running it stopped"  # what a swept run's error says


@dataclass(frozen=True)
class RunKind:
    """One kind of leased run: its name prefix, the ids the database records as running, and how to end
    the lost ones (only those still running; returns how many it ended)."""

    prefix: str  # "cron-run:", "workflow-run:", "team-run:", "chat-turn:"
    running: Callable[[], Iterable[str]]
    lost: Callable[[list[str]], int | Awaitable[int]]

    def name(self, run_id: int | str) -> str:
        return f"{self.prefix}{run_id}"


def hold(kind: RunKind, run_id: int | str) -> None:
    """This process runs `run_id` of `kind` (from now until `release`)."""
    events.current().hold(kind.name(run_id))


def release(kind: RunKind, run_id: int | str) -> None:
    events.current().release(kind.name(run_id))


class Sweep(Loop):
    """On the leader: ends the runs of one kind whose lease lapsed (found unheld at two ticks in a row)."""

    interval_s = 3.0

    def __init__(self, kind: RunKind) -> None:
        super().__init__()
        self.kind = kind
        self.suspects: set[str] = set()

    async def tick(self) -> int:
        ids = list(self.kind.running())
        live = await events.current().live([self.kind.name(i) for i in ids])
        found = {i for i in ids if self.kind.name(i) not in live}
        lost, self.suspects = sorted(found & self.suspects), found
        if not lost:
            return 0
        result = self.kind.lost(lost)
        count = int(await result if inspect.isawaitable(result) else result)
        if count:
            log.warning("ended %d %s run(s) whose process stopped answering", count, self.kind.prefix.rstrip(":"))
        return count


def start_sweep(config: Config, kind: RunKind) -> Sweep | None:
    """The sweep of `kind`, started when several processes may run (`redis_url`); None on one process."""
    if not config.redis_url:
        return None
    sweep = Sweep(kind)
    sweep.start()
    return sweep
