"""Errors of the model calls (codes from the spec's error table)."""

from __future__ import annotations

import logging
import secrets

from platform_server.integrations.llm.types import LlmError
from platform_server.web.errors import ApiError

log = logging.getLogger(__name__)


class LlmFailure(ApiError):
    code = 2001
    default_msg = "LLM error"


def reported(exc: LlmError, what: str) -> tuple[str, str]:
    """(the user's message, its error id) for a provider failure.

    The details (the provider's URL, host and port, its answer's body) are logged under the id, never shown: a
    chat user sees what failed in words and the id an admin looks up.
    """
    error_id = secrets.token_hex(6)
    log.warning("%s failed [error %s]: %s", what, error_id, exc.message)
    return f"{exc.user_message} (error {error_id})", error_id


def failure_text(exc: BaseException, what: str) -> str:
    """What a user may read of a failure: a provider's in words with an error id (its details logged under
    the id), an API error's message, else the exception's own text."""
    if isinstance(exc, LlmError):
        return reported(exc, what)[0]
    msg = getattr(exc, "msg", None)
    return msg if isinstance(msg, str) and msg else str(exc)
