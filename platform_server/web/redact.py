"""Secrets never reach a log line: query parameters, JSON members and bearer tokens named like secrets are redacted."""

from __future__ import annotations

import logging
import re

MARK = "[REDACTED]"
_NAME = r"[\w.-]*?(?:token|password|secret|key)"  # token, password, oldPassword, newPassword, secret, key, apiKey...
_QUERY = re.compile(rf"(?i)(\b{_NAME})=([^&\s\"']+)")
_JSON = re.compile(rf'(?i)("{_NAME}"\s*:\s*)"(?:[^"\\]|\\.)*"')
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+")


_WORDS = ("token", "password", "secret", "key", "bearer")  # every pattern above needs one of them


def redact(text: str) -> str:
    """The text with every secret-looking value replaced by `[REDACTED]`."""
    lowered = text.lower()
    if not any(word in lowered for word in _WORDS):
        return text  # the common case (an access-log line): no pattern can match
    text = _QUERY.sub(rf"\1={MARK}", text)
    text = _JSON.sub(rf'\1"{MARK}"', text)
    return _BEARER.sub(rf"\1 {MARK}", text)


# A query parameter in a request line (`?name=value` or `&name=value`).
_PAIR = re.compile(r"([?&][^=&\s#\"']+)=([^&\s#\"']*)")
# Values a request line keeps: ids, page numbers, sizes and flags say nothing about anyone.
_PLAIN = re.compile(r"(?i)-?\d{1,20}|true|false|")


def redact_query(text: str) -> str:
    """Every query value of a request line that is not a number or a flag, as `[REDACTED]`.

    A GET route may carry a chat message (`/chat/stream?message=`), a search, a file name or a
    token under any name: the access log keeps which parameters were sent, not what they said."""
    if "=" not in text:
        return text
    return _PAIR.sub(lambda m: m.group(0) if _PLAIN.fullmatch(m.group(2)) else f"{m.group(1)}={MARK}", text)


# Loggers whose lines carry request lines (Tornado's access line, its uncaught-exception line).
REQUEST_LINE_LOGGERS = ("tornado.access", "tornado.application", "tornado.general")


class RedactingFilter(logging.Filter):
    """Rewrites a record's message with its secrets redacted (attach to handlers and to loggers)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "redacted", False):
            return True  # already seen by the logger's filter; the handler's need not redo it
        record.redacted = True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is logged as it is
            return True
        cleaned = redact(message)
        if record.name in REQUEST_LINE_LOGGERS:
            cleaned = redact_query(cleaned)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


LOGGERS = ("tornado.access", "tornado.application", "tornado.general", "platform_server", "asyncio")


def install() -> None:
    """Redact in every handler of the root logger and in the loggers that see request lines."""
    log_filter = RedactingFilter()
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(log_filter)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(log_filter)
