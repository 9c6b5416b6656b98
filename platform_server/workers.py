"""`serve --workers N`: N server processes on one port, forked from a small supervisor.

Each worker is a whole server (its own IOLoop, database connections, event bus) that binds the port with
SO_REUSEPORT: the kernel spreads new connections over the workers by their addresses, where one shared
accept queue lets whichever worker wakes first take most of them. The supervisor (this process) runs no
server: it forks the workers, restarts one that dies (a crash, a SIGKILL, the OOM killer) after
RESTART_DELAY_S, and on SIGTERM/SIGINT passes the signal on and waits for every worker's graceful stop.
Forking here rather than asking for N copies behind a proxy keeps one command and one unit; N copies
(one per machine) behind a reverse proxy work too, the same settings on each.

Several workers share their state through PostgreSQL (`database_url`: rows, the change feed that keeps
each worker's caches current, the leader lock for cron and the other once-only loops) and Redis
(`redis_url`: turn streams, stops and queued input across workers, rate limits). On SQLite each process
would keep caches the others' writes never invalidate, so several workers are refused there.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable

from platform_server.config import Config

log = logging.getLogger(__name__)

RESTART_DELAY_S = 1.0  # a worker that keeps dying at start is restarted at this pace, not in a tight loop
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class WorkersRefused(ValueError):
    """Several workers asked for on a configuration that cannot share its state between them."""


def check(config: Config, workers: int) -> None:
    if workers < 1:
        raise WorkersRefused(f"--workers must be 1 or more (got {workers})")
    if workers == 1:
        return
    missing = [name for name, value in (("database_url", config.database_url), ("redis_url", config.redis_url)) if not value]
    if missing:
        raise WorkersRefused(
            f"--workers {workers} needs {' and '.join(missing)}: several processes share their data through PostgreSQL "
            "(database_url) and their turn streams through Redis (redis_url); on the SQLite file each process would serve "
            "stale caches. Run one process, or see the README's 'Growing past one box'."
        )


def supervise(workers: int, run_worker: Callable[[], None]) -> int:
    """Fork `workers` processes that each call `run_worker()` and exit; keep them running until a signal.
    Returns the exit code for the supervisor (0 after a requested stop)."""
    children: dict[int, int] = {}  # pid -> worker number
    stopping = False

    def spawn(number: int) -> None:
        # A stop signal between the fork and `children[pid] = ...` ran `stop` without the new worker, and the
        # supervisor's SIGTERM reaching a new worker before it reset its handlers ran the inherited `stop` there
        # and the worker went on serving: either way the supervisor waited forever (a replacement stopped just
        # after its fork, under load). Held back until the pid is known and the worker has its default handlers.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        for handler in logging.getLogger().handlers:
            handler.flush()  # the log's batch goes out now: a fork copies what waits, and the worker wrote it again
        pid = os.fork()
        if pid == 0:  # the worker: default signal handling, then the server
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            code = 0
            try:
                run_worker()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - a worker's failure is logged and ends only that worker
                log.exception("worker %d failed", number)
                code = 1
            finally:
                logging.shutdown()
            os._exit(code)
        children[pid] = number
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        log.info("worker %d started (pid %d)", number, pid)

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)  # each worker drains its turns and stops (serve())
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    for number in range(workers):
        spawn(number)
    log.info("supervising %d workers", workers)
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        number = children.pop(pid, -1)
        if number < 0 or stopping:
            continue
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            log.info("worker %d (pid %d) stopped", number, pid)
            continue
        log.warning("worker %d (pid %d) died (status %d); starting another", number, pid, status)
        time.sleep(RESTART_DELAY_S)
        if not stopping:
            spawn(number)
    return 0
