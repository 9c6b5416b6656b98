"""Start: fail runs a stopped process left running, schedule enabled jobs, start the scheduler loop."""
from __future__ import annotations

from typing import Any

from platform_server.features.cron.runner import CronScheduler


async def start(platform: Any) -> None:
    scheduler = CronScheduler(platform)
    scheduler.recover()
    platform.services["cron"] = scheduler
    if platform.config.cron_tick_s > 0:
        scheduler.interval_s = platform.config.cron_tick_s
        scheduler.start()


async def stop(platform: Any) -> None:
    scheduler = platform.services.pop("cron", None)
    if scheduler is not None:
        await scheduler.close()
