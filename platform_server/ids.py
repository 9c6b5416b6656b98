"""Snowflake ids: 41 bits of milliseconds since 2024-01-01, 10 bits of node, 12 bits of sequence."""

from __future__ import annotations

import re
import threading
import time

_EPOCH_MS = 1_704_067_200_000

# A conversation id (chosen by the client: a UUID, `default`, `plan-...`): 1-128 characters, no '@' (the storage key
# of `default` is `default@<user>`), no control characters, no space at either end. One rule for the server
# (conversations.service.validate_id) and the document (every conversationId path parameter and body field).
# Whitespace as either reading counts it: ECMA's \s (what schemathesis and clients apply to the document) has U+FEFF
# and not U+001C-U+001F or U+0085, Python's the reverse, so the patterns name the union instead of writing \s
WHITESPACE = "\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
NOT_BLANK_PATTERN = f"[^{WHITESPACE}]"  # a character that is no space: a text that is not blank
NOT_BLANK_RE = re.compile(NOT_BLANK_PATTERN)
# an id given as text: a Long of at most 18 digits (web.errors.parse_long; 19 digits may pass 64 bits: a database error)
LONG_ID_PATTERN = "^[0-9]{1,18}$"
PY_SPACES = WHITESPACE.replace("\\ufeff", "")  # what Python's str.strip() removes (str.isspace): a class for patterns
# A query value's: Tornado reads the control characters it does not count as spaces as spaces too (its
# _remove_control_chars_regex), so `%00` alone is blank there; check the value as Tornado gives it with NOT_BLANK_RE
QUERY_NOT_BLANK_PATTERN = f"[^{WHITESPACE}\\x00-\\x08\\x0e-\\x1f]"
CONVERSATION_ID_PATTERN = f"^[^{WHITESPACE}@\\x00-\\x1f]([^@\\x00-\\x1f]{{0,126}}[^{WHITESPACE}@\\x00-\\x1f])?$"
# Checked with .fullmatch: a validator reads the closing `$` as the end of the string (schemathesis spells it \Z), where
# Python's `$` also matches before a final newline. So are the other patterns this project states and checks.
CONVERSATION_ID_RE = re.compile(CONVERSATION_ID_PATTERN)
# a stream's `lastEventId` (a frame id, ASCII digits; empty: replay from the start): one rule for the document and the server
LAST_EVENT_ID_PATTERN = "^[0-9]{0,18}$"
LAST_EVENT_ID_RE = re.compile("[0-9]{0,18}")
CONVERSATION_ID_RULE = "conversationId: must be 1-128 printable characters without '@' or a space at either end"


class Snowflake:
    """Thread-safe, monotonic 64-bit id generator."""

    def __init__(self, node: int = 1) -> None:
        self._node = node & 0x3FF
        self._lock = threading.Lock()
        self._last_ms = 0
        self._seq = 0

    def next(self) -> int:
        with self._lock:
            now = max(int(time.time() * 1000) - _EPOCH_MS, self._last_ms)
            if now == self._last_ms:
                self._seq = (self._seq + 1) & 0xFFF
                if self._seq == 0:
                    now += 1  # sequence exhausted in this millisecond: borrow the next one
            else:
                self._seq = 0
            self._last_ms = now
            return (now << 22) | (self._node << 12) | self._seq


_generator = Snowflake()


def use_node(node: int) -> None:
    """This process's node (several processes on one database: each its own, see pg.claim_node)."""
    global _generator
    _generator = Snowflake(node)


def next_id() -> int:
    """A new Snowflake id."""
    return _generator.next()
