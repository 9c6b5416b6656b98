"""JSON as plain Python types, for the code paths typed without `Any` (chat, LLM clients, web)."""

from __future__ import annotations

from typing import Union

JsonObject = dict[str, object]  # a decoded JSON object: values are read with isinstance or str()/int()
JsonList = list[JsonObject]
JsonScalar = Union[str, int, float, bool, None]


def int_of(value: object) -> int:
    """A count read from decoded JSON: a number (or a numeric string) as an int, anything else 0."""
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return 0


def str_of(value: object) -> str | None:
    """A string read from decoded JSON, or None when it is not one."""
    return value if isinstance(value, str) else None
