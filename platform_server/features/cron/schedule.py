"""Cron expressions (5 fields, cronsim) in an IANA time zone: validation and the next fire instant."""

from __future__ import annotations

import datetime as dt
import zoneinfo

from cronsim import CronSim, CronSimError

from platform_server.web.errors import BadRequest

UTC = dt.timezone.utc


def zone(name: str, field: str = "timezone") -> zoneinfo.ZoneInfo:
    """The IANA zone, or 400 `<field>: unknown time zone`."""
    text = (name or "").strip()
    if not text or len(text) > 64:
        raise BadRequest(f"{field}: unknown time zone '{text}'")
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise BadRequest(f"{field}: unknown time zone '{text}'")


def normalize(expression: str, field: str = "cronExpression") -> str:
    """A valid 5-field expression with single spaces, or 400 naming what is wrong."""
    parts = (expression or "").split()
    if len(parts) != 5:
        raise BadRequest(f"{field}: must have 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}")
    text = " ".join(parts)
    try:
        it = CronSim(text, dt.datetime(2000, 1, 1, tzinfo=UTC))
        next(it)
    except CronSimError as exc:
        raise BadRequest(f"{field}: {exc}")
    except StopIteration:
        raise BadRequest(f"{field}: the expression never fires")
    return text


def next_fire(expression: str, tz_name: str, after: dt.datetime) -> dt.datetime | None:
    """The first fire instant strictly after `after` (naive UTC), as naive UTC; None if it never fires."""
    local = after.replace(tzinfo=UTC).astimezone(zoneinfo.ZoneInfo(tz_name))
    try:
        nxt = next(iter(CronSim(expression, local)))
    except (CronSimError, StopIteration):
        return None
    return nxt.astimezone(UTC).replace(tzinfo=None)


PREVIEW_MAX = 20


def preview(expression: str, tz_name: str, after: dt.datetime, count: int = 5) -> dict[str, object]:
    """The expression in words and its next `count` fire instants after `after` (naive UTC), in the zone."""
    text = normalize(expression)
    tz = zone(tz_name)
    local = after.replace(tzinfo=UTC).astimezone(tz)
    sim = CronSim(text, local)
    try:
        words = sim.explain()
    except Exception:  # noqa: BLE001 - explain() covers most expressions; a missing phrase is not an error
        words = text
    runs: list[str] = []
    for instant in sim:
        runs.append(instant.isoformat())
        if len(runs) >= min(max(count, 1), PREVIEW_MAX):
            break
    return {"cronExpression": text, "timezone": tz.key, "description": words, "nextRuns": runs}
