"""JSON as the API sends it: one encoder for envelopes, SSE frames and data encoded ahead of time."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

import orjson
import pydantic

from platform_server.db import iso


@dataclass(frozen=True)
class JsonText:
    """Data already encoded as JSON text (a cached answer): `ApiHandler.ok` sends it as the envelope's data."""

    text: str


def _json_default(value: object) -> object:
    if isinstance(value, dt.datetime):
        return iso(value)
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(by_alias=True)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS  # datetimes as `iso`, via the default


def dumps(value: object) -> str:
    """JSON text as the API sends it (orjson; the standard encoder for what orjson refuses, e.g. ints over 64 bits)."""
    try:
        return orjson.dumps(value, default=_json_default, option=_ORJSON_OPTIONS).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def encoded(value: object) -> JsonText:
    """`value` encoded once, to be sent (or kept and sent again) without encoding it again."""
    return JsonText(dumps(value))
