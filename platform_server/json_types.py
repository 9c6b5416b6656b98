"""JSON as plain Python types, for the code paths typed without `Any` (chat, LLM clients, web)."""

from __future__ import annotations

from typing import Union

JsonObject = dict[str, object]  # a decoded JSON object: values are read with isinstance or str()/int()
JsonList = list[JsonObject]
JsonScalar = Union[str, int, float, bool, None]
