"""The nightly dream: a Loop that, once a day from the configured local hour, dreams every memory with news."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any, Callable

import peewee

from platform_server.db import dict_rows, iso
from platform_server.features.agents.models import Agent
from platform_server.features.memory import store
from platform_server.features.memory.dreaming import Dreamer, last_completed
from platform_server.features.memory.models import Contradiction, DreamReport, Fact, MemoryMeta
from platform_server.features.memory.store import Scope
from platform_server.features.settings import service as settings
from platform_server.loops import Loop
from platform_server.web.errors import ApiError

log = logging.getLogger(__name__)

LAST_NIGHTLY = "nightly_last_date"


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def flag_on() -> bool:

    return settings.flag_enabled("dreaming")


def meta(key: str) -> str | None:
    row = MemoryMeta.get_or_none(MemoryMeta.key == key)
    return row.value if row else None


def set_meta(key: str, value: str) -> None:
    MemoryMeta.insert(key=key, value=value).on_conflict_replace().execute()


def next_run(config: Any, now: dt.datetime) -> dt.datetime:
    """The next nightly run (aware UTC): today's hour, now when that has passed unrun, else tomorrow's."""
    local = store.local_now(config, now)
    today_run = local.replace(hour=min(23, max(0, int(config.dreaming_hour))), minute=0, second=0, microsecond=0)
    if meta(LAST_NIGHTLY) == local.date().isoformat():
        when = today_run + dt.timedelta(days=1)
    else:
        when = max(today_run, local)
    return when.astimezone(dt.timezone.utc)


def due_scopes() -> list[Scope]:
    """Memories whose facts changed after their last completed dream ended (or that never dreamed)."""
    rows = Fact.select(Fact.workspace_id, Fact.user_id, Fact.agent_id, Fact.end_user_id, peewee.fn.MAX(Fact.update_time).alias("latest")).group_by(
        Fact.workspace_id, Fact.user_id, Fact.agent_id, Fact.end_user_id
    )
    due: list[Scope] = []
    for row in dict_rows(rows):
        scope = Scope(row["workspace_id"], row["user_id"], row["agent_id"], row["end_user_id"])
        last = last_completed(scope)
        latest = Fact._meta.fields["update_time"].python_value(row["latest"])
        if last is None or (latest is not None and latest > (last.finish_time or last.create_time)):
            due.append(scope)
    return due


class NightlyDreamLoop(Loop):
    """Once per local day, from `dreaming_hour`, a NIGHTLY dream of every memory with new facts."""

    def __init__(self, dreamer: Dreamer, clock: Callable[[], dt.datetime] = _utc_now) -> None:
        super().__init__()
        self.dreamer = dreamer
        self.clock = clock  # aware UTC now; tests swap it
        self.interval_s = dreamer.config.dreaming_check_interval_s

    def enabled(self) -> bool:
        return bool(self.dreamer.config.dreaming_enabled) and flag_on()

    async def tick(self) -> int:
        """Run the nightly dreams when due; returns how many dreams completed."""
        if not self.enabled():
            return 0
        config = self.dreamer.config
        local = store.local_now(config, self.clock())
        if local.hour < min(23, max(0, int(config.dreaming_hour))):
            return 0
        today = local.date().isoformat()
        if meta(LAST_NIGHTLY) == today:
            return 0
        set_meta(LAST_NIGHTLY, today)  # before the dreams: a failing one is not retried all night

        done = 0
        for scope in due_scopes():
            agent = Agent.get_or_none((Agent.id == scope.agent_id) & (Agent.workspace_id == scope.workspace_id))
            if agent is None:
                continue
            try:
                await self.dreamer.dream(scope, agent, None, "NIGHTLY", "schedule")
                done += 1
            except ApiError as exc:
                log.warning("nightly dream of agent %s for user %s failed: %s", scope.agent_id, scope.user_id, exc.msg)
        return done


def status(dreamer: Dreamer, scope: Scope) -> dict[str, Any]:
    """Dreaming configuration, this memory's stats and its last run."""
    config = dreamer.config
    last = (
        DreamReport.select()
        .where(scope.where(DreamReport) & (DreamReport.status != "running"))
        .order_by(DreamReport.create_time.desc(), DreamReport.id.desc())
        .first()
    )
    fact_rows = Fact.select(Fact.status, peewee.fn.COUNT(Fact.id).alias("n")).where(scope.where(Fact)).group_by(Fact.status)
    by_status = {r["status"]: r["n"] for r in dict_rows(fact_rows)}
    flag = flag_on()
    now = _utc_now()
    return {
        "enabled": bool(config.dreaming_enabled) and flag,
        "configEnabled": bool(config.dreaming_enabled),
        "featureFlag": flag,
        "hour": int(config.dreaming_hour),
        "timezone": config.dreaming_timezone or config.timezone,
        "nextRunTime": iso(next_run(config, now).replace(tzinfo=None)) if config.dreaming_enabled and flag else None,
        "lastNightlyDate": meta(LAST_NIGHTLY),
        "lastRunTime": iso(last.finish_time or last.create_time) if last else None,
        "lastRunStatus": last.status if last else None,
        "lastReportId": str(last.id) if last else None,
        "running": scope in dreamer.running,
        "memoryFile": scope.path(store.PROJECTION),
        "stats": {
            "activeFacts": by_status.get("active", 0),
            "forgottenFacts": by_status.get("forgotten", 0),
            "userEditedFacts": Fact.select().where(scope.where(Fact) & (Fact.status == "active") & (Fact.user_edited == True)).count(),  # noqa: E712
            "openContradictions": Contradiction.select().where(scope.where(Contradiction) & (Contradiction.status == "open")).count(),
            "reports": DreamReport.select().where(scope.where(DreamReport)).count(),
            "dailyNotes": store.daily_count(config, scope),
        },
    }
