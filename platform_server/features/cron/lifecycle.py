"""Start: fail runs a stopped process left running, schedule enabled jobs, start the scheduler loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server import leases
from platform_server.features.chat import CHAT
from platform_server.features.cron import CRON, CRON_SWEEP
from platform_server.features.cron.runner import RUNS, CronScheduler
from platform_server.features.workflows import WORKFLOWS

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    scheduler = CronScheduler(platform.runtime(CHAT), platform.find_runtime(WORKFLOWS))
    scheduler.recover()
    platform.set_runtime(CRON, scheduler)
    if platform.config.cron_tick_s > 0:
        scheduler.interval_s = platform.config.cron_tick_s
        scheduler.start()
    if sweep := leases.start_sweep(platform.config, RUNS):  # several processes: a killed process's runs fail
        platform.set_runtime(CRON_SWEEP, sweep)


async def stop(platform: Platform) -> None:
    if sweep := platform.find_runtime(CRON_SWEEP):
        sweep.stop()
    await platform.runtime(CRON).close()
