"""The project's exceptions; each maps to one row of the spec's Errors table."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from platform_server.date_time import parse_date_time
from platform_server.json_types import JsonObject


class ApiError(Exception):
    """An error answered as `{code, msg, data:null}`; HTTP status mirrors code (non-HTTP codes give 500)."""

    code = 500
    default_msg = "Internal server error"

    def __init__(self, msg: str | None = None, code: int | None = None) -> None:
        self.msg = msg or self.default_msg
        if code is not None:
            self.code = code
        super().__init__(self.msg)

    @property
    def http_status(self) -> int:
        return self.code if 100 <= self.code <= 599 else 500

    def body(self) -> JsonObject:
        return {"code": self.code, "msg": self.msg, "data": None}

    def stream_frame(self, error_id: str | None = None) -> dict[str, object]:
        """The data of an SSE `error` frame (spec: `{message}`), with the code a JSON answer would carry:
        one shape whether the request failed before its stream began or the turn failed inside it."""
        frame: dict[str, object] = {"message": self.msg, "code": self.code}
        if error_id is not None:
            frame["errorId"] = error_id  # the log line an admin looks up
        return frame


class BadRequest(ApiError):
    code = 400
    default_msg = "Bad request"


class Unauthorized(ApiError):
    code = 401
    default_msg = "Token expired or invalid"


class Forbidden(ApiError):
    code = 403
    default_msg = "Forbidden"


class NotFound(ApiError):
    code = 404
    default_msg = "Resource not found"


class MethodNotAllowed(ApiError):
    code = 405
    default_msg = "Method not allowed"


class Conflict(ApiError):
    code = 409
    default_msg = "Conflict"


class Unprocessable(ApiError):
    """Well formed per the document, but its values do not hold together in a way OpenAPI 3.0 cannot state (the
    order of a pipeline's steps): a 400 would say the request breaks the document, which it does not."""

    code = 422
    default_msg = "Unprocessable"


class PayloadTooLarge(ApiError):
    code = 413
    default_msg = "Request body too large"


class HeadersTooLarge(ApiError):
    code = 431
    default_msg = "Request header fields too large"


class TooManyRequests(ApiError):
    code = 429
    default_msg = "Too many requests, please try again later"


class ServiceTimeout(ApiError):
    code = 503
    default_msg = "Request timeout, please try again"


class ConfirmationRequired(ApiError):
    """409 second confirmation: the one non-envelope error body (`message`, `boundAgents`)."""

    code = 409

    def __init__(self, message: str, bound_agents: Sequence[Mapping[str, object]]) -> None:
        super().__init__(message)
        self.bound_agents = bound_agents

    def body(self) -> JsonObject:
        return {"code": 409, "message": self.msg, "boundAgents": self.bound_agents}


def invalid_long(name: str) -> BadRequest:
    """The spec's message for a non-numeric Long parameter."""
    return BadRequest(f"Invalid value for parameter '{name}': expected Long")


def is_integer_text(text: str) -> bool:
    """An optional '-' then ASCII digits only: str.isdigit() also passes '²' or '٣', which int() then refuses (a 500)."""
    digits = text[1:] if text.startswith("-") else text
    return digits.isascii() and digits.isdigit()


def parse_long(name: str, value: str | None) -> int:
    """Parse a Long path/query parameter or raise the spec's 400."""
    if value is None:
        raise BadRequest(f"{name}: must not be null")
    text = value.strip()
    if not is_integer_text(text):
        raise invalid_long(name)
    number = int(text)
    if not -(2**63) <= number < 2**63:
        raise invalid_long(name)
    return number


# A query parameter documented as `format: date-time` (parse_date_time_param reads it)
DATE_TIME_PARAM: JsonObject = {"type": "string", "format": "date-time", "example": "2026-01-31T23:59:59Z"}


def parse_date_time_param(name: str, value: str) -> dt.datetime:
    """An RFC 3339 date-time query parameter as naive UTC, or the 400 naming it (an empty value included: the
    parameter has a format, so empty is not absent)."""
    try:
        return parse_date_time(value)
    except ValueError:
        raise BadRequest(f"Invalid value for parameter '{name}': expected an RFC 3339 date-time such as 2026-01-31T23:59:59Z")


class DatabaseBusy(ApiError):
    """Another connection held the write lock past the short wait; nothing of the request was written."""

    code = 503
    default_msg = "The database is busy, nothing was saved; please retry"


class InsufficientStorage(ApiError):
    """The disk is full (or failing): the server is read-only until space returns; nothing was saved."""

    code = 507
    default_msg = "The server is out of storage space and read-only until space is freed; nothing was saved"
