"""Scheduled jobs: cron expressions and triggers that start agent turns, and the scheduler that runs them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.cron.runner import CronScheduler
    from platform_server.loops import Loop


CRON: RuntimeKey[CronScheduler] = RuntimeKey("cron")
CRON_SWEEP: RuntimeKey[Loop] = RuntimeKey("cron_sweep")  # several processes: the leader fails a dead process's runs
