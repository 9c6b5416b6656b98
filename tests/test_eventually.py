"""The shared waiting helper: the first truthy answer, an assertion counts as not yet, a timeout says what it saw."""
from __future__ import annotations

import threading
import time

import pytest

from tests.helpers.eventually import Timeout, eventually, eventually_sync


async def test_eventually_answers_the_first_truthy_value_of_a_sync_or_async_check() -> None:
    calls: list[int] = []

    def sync_check() -> list[int] | None:
        calls.append(1)
        return calls if len(calls) == 3 else None

    assert await eventually(sync_check, interval=0) == [1, 1, 1]

    async def async_check() -> str:
        return "ready"

    assert await eventually(async_check) == "ready"


async def test_an_assertion_in_the_check_means_not_yet_and_the_last_one_is_reported_at_the_timeout() -> None:
    tries: list[int] = []

    def check() -> bool:
        tries.append(1)
        assert len(tries) > 2, f"only {len(tries)} tries"
        return True

    assert await eventually(check, interval=0) is True
    with pytest.raises(Timeout, match=r"the job did not hold within 0.05 s \(last failure: never\)"):
        await eventually(lambda: (_ for _ in ()).throw(AssertionError("never")), timeout=0.05, what="the job")
    with pytest.raises(Timeout, match=r"last value: \[\]"):
        await eventually(lambda: [], timeout=0.05)


async def test_other_errors_are_not_swallowed() -> None:
    with pytest.raises(KeyError):
        await eventually(lambda: {}["missing"])


def test_eventually_sync_waits_for_another_thread() -> None:
    done = threading.Event()
    threading.Timer(0.05, done.set).start()
    started = time.monotonic()
    assert eventually_sync(done.is_set) is True and time.monotonic() - started < 5
    with pytest.raises(Timeout):
        eventually_sync(lambda: 0, timeout=0.05)
