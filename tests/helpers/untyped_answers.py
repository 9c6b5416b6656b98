"""Operations whose 200 answer is still the untyped envelope `R`: the list only shrinks (tests/test_openapi_answers.py).

Give the handler `answers = {METHOD: one(View) | list_of(View) | page_of(View) | NOTHING}` and take its id off.
"""

from __future__ import annotations

UNTYPED: frozenset[str] = frozenset(
    {
    }
)
