"""Date-times from clients: RFC 3339, the form OpenAPI's `format: date-time` states."""

from __future__ import annotations

import datetime as dt
import re

# RFC 3339's date-time (OpenAPI's `format: date-time`): a full date, T, a time with optional fraction, and Z or an offset
_DATE_TIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt]([0-9]{2}:[0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})")


def parse_date_time(text: str) -> dt.datetime:
    """An RFC 3339 date-time from a client as naive UTC (ValueError otherwise): every form the document's
    `format: date-time` allows, a leap second and an offset that moves the time past year 1 or 9999 included."""
    match = _DATE_TIME.fullmatch(text)
    if match is None:
        raise ValueError("not an RFC 3339 date-time")
    day, hour_minute, second, fraction, offset = match.groups()
    leap = second == "60"  # 23:59:60 is the second after 23:59:59
    zone = "+00:00" if offset in ("Z", "z") else offset
    value = dt.datetime.fromisoformat(f"{day}T{hour_minute}:{'59' if leap else second}{(fraction or '')[:7]}{zone}")
    try:
        utc = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return utc + dt.timedelta(seconds=1) if leap else utc
    except OverflowError:  # the first or last hours datetime can hold: clamp, as any filter or expiry reads them
        return dt.datetime.min if value.year == 1 else dt.datetime.max
