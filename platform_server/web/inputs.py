"""The inputs each operation reads and the statuses it answers, noted while the tests run.

The OpenAPI document is written from declarations (`body_models`, `query_params`, `request_bodies`); a
handler can still read an input nobody declared. With `RECORDING` on (the test suite turns it on), every
query parameter, JSON, raw and form body a handler reads is noted per (handler class, method), so a test
can compare what was read with what the document states, and the document cannot fall behind the code.
The statuses answered are noted the same way (web.base.on_finish). Off in production: nothing is kept.
"""

from __future__ import annotations

RECORDING = False

QUERY = "query"
JSON = "json"  # a JSON body read without a body model
RAW = "raw"  # the body's bytes as they came (webhooks, uploads sent as the body)
FORM = "form"  # multipart/form-data or urlencoded fields and files

_SEEN: dict[tuple[type, str], set[tuple[str, str]]] = {}


def note(handler: type, method: str, where: str, name: str = "") -> None:
    """Note that `handler`'s `method` read an input (a query parameter's name, or a body kind)."""
    if RECORDING:
        _SEEN.setdefault((handler, method), set()).add((where, name))


def seen() -> dict[tuple[type, str], set[tuple[str, str]]]:
    """Everything noted so far (a copy)."""
    return {key: set(value) for key, value in _SEEN.items()}


_STATUSES: dict[tuple[type, str], set[int]] = {}


def note_status(handler: type, method: str, status: int) -> None:
    """Note that `handler`'s `method` answered `status`."""
    if RECORDING:
        _STATUSES.setdefault((handler, method), set()).add(status)


def statuses() -> dict[tuple[type, str], set[int]]:
    """Every status noted so far, per (handler class, method) (a copy)."""
    return {key: set(value) for key, value in _STATUSES.items()}
