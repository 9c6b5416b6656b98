"""Scheduled jobs: cron expressions and triggers that start agent turns, and the scheduler that runs them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.cron.runner import CronScheduler


CRON: RuntimeKey[CronScheduler] = RuntimeKey("cron")
