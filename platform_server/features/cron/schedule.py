"""Cron expressions (5 fields, cronsim) in an IANA time zone: validation and the next fire instant."""

from __future__ import annotations

import datetime as dt
import functools
import re
import zoneinfo

from cronsim import CronSim, CronSimError

from platform_server.web.errors import BadRequest, NotFound, Unprocessable

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


# Each field's values, as a pattern and as bounds (day-of-week 7 is Sunday again: a range wraps at 6)
_FIELDS = (
    ("[0-5]?[0-9]", 0, 59),
    ("([01]?[0-9]|2[0-3])", 0, 23),
    ("(0?[1-9]|[12][0-9]|3[01])", 1, 31),
    ("(0?[1-9]|1[0-2])", 1, 12),
    ("[0-7]", 0, 6),
)


def _field_pattern(value: str) -> str:
    item = f"(\\*|{value}(-{value})?)(/[1-9][0-9]?)?"
    return f"{item}(,{item})*"


# The document's rule for a cron expression: five fields of `*`, values, ranges and steps, single spaces. The server
# also takes month and weekday names, `L` and `#` (cronsim) and more spaces; a range from high to low wraps around
# (hours 22-2: 22, 23, 0, 1, 2), so every expression the pattern allows is one the server takes.
CRON_PATTERN = "^" + " ".join(_field_pattern(value) for value, _, _ in _FIELDS) + "$"
CRON_RE = re.compile(CRON_PATTERN)
_WRAPPED = re.compile(r"([0-9]+)-([0-9]+)(?:/([0-9]+))?")


def _unwrap(part: str, low: int, high: int) -> str:
    """A field with its high-to-low ranges written out as the values they wrap through (cronsim refuses them)."""
    items = []
    for item in part.split(","):
        match = _WRAPPED.fullmatch(item)
        if match is not None and int(match.group(1)) > int(match.group(2)) and int(match.group(1)) <= high + 1:
            first, last, step = int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
            values = [*range(first, high + 1), *range(low, last + 1)][:: max(step, 1)]
            item = ",".join(str(v % (high + 1) if high == 6 else v) for v in values)
        items.append(item)
    return ",".join(items)


def normalize(expression: str, field: str = "cronExpression", may_never_fire: bool = False) -> str:
    """A valid 5-field expression with single spaces, or 400 naming what is wrong (one that never fires, 30 2 for
    February 30, too, unless `may_never_fire`: a preview shows it with no runs)."""
    parts = (expression or "").split()
    if len(parts) != 5:
        raise BadRequest(f"{field}: must have 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}")
    text = " ".join(_unwrap(part, low, high) for part, (_, low, high) in zip(parts, _FIELDS))
    # An expression of the document's pattern that names no date (31 2, February 31) is well formed: 422, not 400
    refuse = Unprocessable if CRON_RE.fullmatch(expression or "") else BadRequest
    try:
        it = CronSim(text, dt.datetime(2000, 1, 1, tzinfo=UTC))
        next(it)
    except CronSimError as exc:
        fields = text.split(" ")
        if may_never_fire and _valid(" ".join([*fields[:3], "*", fields[4]])):  # a day no month of it has: 31 2
            return text
        raise refuse(f"{field}: {exc}")
    except StopIteration:
        if not may_never_fire:
            raise refuse(f"{field}: the expression never fires")
    return text


def _valid(text: str) -> bool:
    try:
        CronSim(text, dt.datetime(2000, 1, 1, tzinfo=UTC))
        return True
    except CronSimError:
        return False


# An IANA zone name's shape (Europe/Berlin, Etc/GMT+1, UTC); whether the zone exists is the zone database's answer
ZONE_PATTERN = r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$"
ZONE_RE = re.compile(ZONE_PATTERN)


@functools.cache
def zone_names() -> frozenset[str]:
    """Every IANA zone name this machine knows."""
    return frozenset(zoneinfo.available_timezones())


def given_zone(name: str, field: str = "timezone") -> str:
    """A zone a request names, as the document states it: ZONE_PATTERN's shape (else 400), and one the zone database
    has (else 404: well formed, but naming nothing here)."""
    if len(name) > 64 or not ZONE_RE.fullmatch(name):
        raise BadRequest(f"{field}: not a time zone name '{name[:64]}'")
    if name not in zone_names():
        raise NotFound(f"{field}: unknown time zone '{name}'")
    return name


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
    text = normalize(expression, may_never_fire=True)
    tz = zone(tz_name)
    local = after.replace(tzinfo=UTC).astimezone(tz)
    if not _valid(text):  # a day no month of it has (normalize let it through): it never fires
        return {"cronExpression": text, "timezone": tz.key, "description": "never (no such day in those months)", "nextRuns": []}
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
