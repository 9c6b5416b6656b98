"""Reads kept until their table changes: a write (same thread, another thread's commit, a rollback) is seen at once."""
from __future__ import annotations

import threading

import peewee

from platform_server.db import database, utcnow
from platform_server.features.settings.models import Setting
from platform_server.memo import memo_on
from tests.helpers.client import ApiClient

KEY = "test.memo.value"
reads: list[int] = []


@memo_on(Setting)
def stored_value(key: str) -> object:
    reads.append(1)
    row = Setting.get_or_none(Setting.key == key)
    return None if row is None else row.value


def put(value: object) -> None:
    Setting.insert(key=KEY, value=value, update_time=utcnow()).on_conflict_replace().execute()


async def test_a_memo_answers_from_memory_until_its_table_changes(api: ApiClient, people: dict) -> None:
    put("one")
    reads.clear()
    assert stored_value(KEY) == "one" and stored_value(KEY) == "one"
    assert len(reads) == 1  # the second answer came from memory
    put("two")
    assert stored_value(KEY) == "two"
    r = await api.put("/api/v1/settings", {"language": "zh-CN"}, token="alice")  # any write to the table
    assert r.status == 200, r.body
    assert stored_value(KEY) == "two" and len(reads) == 3


async def test_what_was_read_before_another_threads_commit_is_not_kept_after_it(api: ApiClient) -> None:
    put("before")
    assert stored_value(KEY) == "before"
    written, commit = threading.Event(), threading.Event()

    def writer() -> None:
        with database.atomic():  # this thread's own connection
            put("after")
            written.set()
            commit.wait(5)
        database.close()

    thread = threading.Thread(target=writer)
    thread.start()
    assert written.wait(5)
    assert stored_value(KEY) == "before"  # not committed yet: the old value is read (and cached)
    commit.set()
    thread.join(5)
    assert stored_value(KEY) == "after"


async def test_a_value_read_inside_a_rolled_back_transaction_is_forgotten(api: ApiClient) -> None:
    put("kept")
    assert stored_value(KEY) == "kept"
    try:
        with database.atomic():
            put("rolled back")
            assert stored_value(KEY) == "rolled back"
            raise peewee.IntegrityError("undo")
    except peewee.IntegrityError:
        pass
    assert stored_value(KEY) == "kept"


async def test_what_a_transaction_reads_from_its_older_snapshot_is_not_kept(api: ApiClient) -> None:
    put("old")
    started, changed = threading.Event(), threading.Event()
    seen: list[object] = []

    def reader() -> None:
        with database.atomic():  # a transaction on this thread's connection: its snapshot starts at the first read
            Setting.select().count()
            started.set()
            changed.wait(5)
            seen.append(stored_value(KEY))  # the snapshot's value, older than the commit below
        database.close()

    thread = threading.Thread(target=reader)
    thread.start()
    assert started.wait(5)
    put("new")  # committed after the reader's snapshot
    changed.set()
    thread.join(5)
    assert seen == ["old"]
    assert stored_value(KEY) == "new"
