"""Errors of the chat area (codes from the spec's error table)."""

from __future__ import annotations

from platform_server.web.errors import ApiError


class AgentBusy(ApiError):
    code = 1002
    default_msg = "Agent busy"


ANSWER_NOT_SAVED = "The answer could not be saved (storage error); it was not kept, please retry"


class AnswerNotSaved(ApiError):
    """A turn's answer could not be stored: its stream ends with this error (503 busy, 507 disk, else 500)."""

    code = 500
    default_msg = ANSWER_NOT_SAVED
