"""WAL checkpoints run on the checkpointer's thread, never in a commit: a commit past the limit wakes it
(PASSIVE), an idle database gets its WAL truncated, and a checkpoint's failure never reaches a writer."""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import apsw
import peewee
import pytest

from platform_server import db
from platform_server.db import database
from tests.helpers.eventually import eventually_sync


def test_commits_past_the_wal_limit_are_checkpointed_by_the_checkpointer_and_an_idle_wal_is_truncated(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "WAL_AUTOCHECKPOINT_PAGES", 20)
    monkeypatch.setattr(db, "CHECKPOINT_IDLE_S", 0.3)
    path = str(tmp_path / "wal.db")
    db.open_database(path)
    checkpointer = db.start_checkpointer(path)
    try:
        database.execute_sql("CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT)")
        size = os.path.getsize(path)
        for i in range(30):  # a page or more per commit
            with database.atomic():
                database.execute_sql("INSERT INTO note (body) VALUES (?)", ("x" * 3000 + str(i),))
        eventually_sync(lambda: os.path.getsize(path) > size)  # rows were copied into the database file itself
        eventually_sync(lambda: checkpointer.checkpoints >= 1)  # (counted once its copy is done)
        assert checkpointer.thread.is_alive()
        eventually_sync(lambda: os.path.getsize(path + "-wal") == 0)  # idle: truncated
    finally:
        db.stop_checkpointer()
        db.close_database()


def test_a_checkpoint_that_fails_is_logged_and_reported_and_the_commit_that_woke_it_stands(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(db, "WAL_AUTOCHECKPOINT_PAGES", 1)
    path = str(tmp_path / "wal.db")
    db.open_database(path)
    faults: list[BaseException] = []
    checkpointer = db.start_checkpointer(path, faults.append)
    try:
        eventually_sync(lambda: checkpointer.thread.is_alive())
        with caplog.at_level(logging.WARNING, logger="platform_server.db"):
            monkeypatch.setattr(checkpointer, "_checkpoint", _failing(checkpointer, faults))
            database.execute_sql("CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT)")
            with database.atomic():  # past the limit: the checkpointer wakes and fails
                database.execute_sql("INSERT INTO note (body) VALUES ('kept')")
            eventually_sync(lambda: bool(faults))
        assert database.execute_sql("SELECT body FROM note").fetchall() == [("kept",)]
        assert checkpointer.thread.is_alive() and any("WAL checkpoint (PASSIVE) failed" in r.getMessage() for r in caplog.records)
    finally:
        db.stop_checkpointer()
        db.close_database()


def _failing(checkpointer: db.Checkpointer, faults: list[BaseException]) -> Any:
    original = checkpointer._checkpoint

    def run(conn: Any, mode: str) -> bool:
        conn.close()  # the checkpoint then fails as a disk error would: inside the checkpointer only
        checkpointer.on_fault = faults.append
        return original(conn, mode)

    return run


def test_writes_that_never_pause_do_not_grow_the_wal_without_bound(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "WAL_AUTOCHECKPOINT_PAGES", 50)
    monkeypatch.setattr(db, "WAL_HARD_LIMIT_PAGES", 400)
    monkeypatch.setattr(db, "CHECKPOINT_GAP_S", 0.01)
    path = str(tmp_path / "wal.db")
    db.open_database(path)
    db.start_checkpointer(path)
    try:
        database.execute_sql("CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT)")
        largest = 0
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:  # a page or more per commit, no pause between commits
            with database.atomic():
                database.execute_sql("INSERT INTO note (body) VALUES (?)", ("x" * 3000,))
            largest = max(largest, os.path.getsize(path + "-wal"))
        rows = database.execute_sql("SELECT count(*) FROM note").fetchone()[0]
        assert rows > 1000  # (many times the limit went through the WAL)
        assert largest < 400 * 4200 * 2  # restarted along the way: never far past the hard limit
    finally:
        db.stop_checkpointer()
        db.close_database()


def test_a_process_without_a_checkpointer_checkpoints_after_commits_past_the_limit(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db, "WAL_AUTOCHECKPOINT_PAGES", 20)
    path = str(tmp_path / "wal.db")
    db.open_database(path)  # as a command-line tool does: no checkpointer thread
    try:
        database.execute_sql("CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT)")
        size = os.path.getsize(path)
        for i in range(30):
            with database.atomic():
                database.execute_sql("INSERT INTO note (body) VALUES (?)", ("x" * 3000 + str(i),))
        assert os.path.getsize(path) > size
    finally:
        db.close_database()


def test_writes_from_a_connection_that_never_waits_for_a_lock_never_fail_while_the_checkpointer_works(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reader on an old snapshot keeps each PASSIVE from copying the whole WAL (as a slow page read does under
    # load), so the WAL grows past twice the limit; a checkpoint that then took the write lock to copy the rest
    # would make the writer, which waits for no lock (the IOLoop's waits 20 ms), fail with 'database is locked'.
    monkeypatch.setattr(db, "WAL_AUTOCHECKPOINT_PAGES", 20)
    monkeypatch.setattr(db, "CHECKPOINT_GAP_S", 0.005)
    monkeypatch.setattr(db, "CHECKPOINT_IDLE_S", 0.05)
    path = str(tmp_path / "wal.db")
    db.open_database(path, loop_busy_timeout_ms=0)
    database.execute_sql("CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT)")
    checkpointer = db.start_checkpointer(path)
    reader = apsw.Connection(path)
    failures: list[str] = []
    try:
        deadline = time.monotonic() + 2.0
        n = 0
        while time.monotonic() < deadline:
            n += 1
            if n % 40 == 1:  # the reader holds its snapshot across 40 commits, then lets go
                if reader.in_transaction:
                    reader.execute("COMMIT")
                reader.execute("BEGIN")
                reader.execute("SELECT count(*) FROM note").fetchall()
            if n % 200 == 0:
                time.sleep(0.08)  # a pause: the checkpointer finds the database idle
            try:
                with database.atomic():
                    database.execute_sql("INSERT INTO note (body) VALUES (?)", ("x" * 3000,))
            except peewee.OperationalError as exc:
                failures.append(str(exc))
        assert n > 500 and checkpointer.checkpoints > 5
        assert failures == []
    finally:
        if reader.in_transaction:
            reader.execute("COMMIT")
        reader.close()
        db.stop_checkpointer()
        db.close_database()
