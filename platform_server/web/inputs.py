"""The inputs each operation reads and the statuses it answers, noted while the tests run.

The OpenAPI document is written from declarations (`body_models`, `query_params`, `request_bodies`); a
handler can still read an input nobody declared. With `RECORDING` on (the test suite turns it on), every
query parameter, JSON, raw and form body a handler reads is noted per (handler class, method), so a test
can compare what was read with what the document states, and the document cannot fall behind the code.
The statuses answered are noted the same way (web.base.on_finish). Off in production: nothing is kept.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import overload

import tornado.web

from platform_server.web.errors import BadRequest

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


class NotedInputs(tornado.web.RequestHandler):
    """The API handler's reading of query parameters, noting each name it reads (web.base.ApiHandler's base)."""

    def _note(self, where: str, name: str = "") -> None:
        note(type(self), self.request.method or "", where, name)

    @overload
    def get_query_argument(self, name: str, default: str, strip: bool = True) -> str: ...
    @overload
    def get_query_argument(self, name: str, default: tornado.web._ArgDefaultMarker = tornado.web._ARG_DEFAULT, strip: bool = True) -> str: ...
    @overload
    def get_query_argument(self, name: str, default: None, strip: bool = True) -> str | None: ...
    def get_query_argument(
        self, name: str, default: str | None | tornado.web._ArgDefaultMarker = tornado.web._ARG_DEFAULT, strip: bool = True
    ) -> str | None:
        """Tornado's, noting the parameter's name (web.inputs: the document must state every input read)."""
        self._note(QUERY, name)
        return super().get_query_argument(name, default, strip)

    def query_choice(self, name: str, choices: Collection[str]) -> str | None:
        """A query parameter the document states as an enum, read as it states it: one of `choices` exactly, or None
        when absent. Tornado's reading trims spaces (and turns control characters into spaces), so `?status= pending`
        or `?status=` (none of the enum's) was taken: here a value that is not a choice as sent is a 400."""
        raw = self.get_query_argument(name, None, strip=False)
        if raw is not None and raw not in choices:
            raise BadRequest(f"{name}: must be one of {', '.join(sorted(choices))}")
        return raw

    def query_map(self) -> dict[str, str]:
        """Every query parameter, unnoted: for a verifier that takes the whole query (a webhook's signature
        covers parameters the messaging platform chooses; the ones it documents are in web/openapi_inputs)."""
        return {k: tornado.web.RequestHandler.get_query_argument(self, k) for k in self.request.query_arguments}
