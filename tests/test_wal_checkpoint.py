"""A WAL checkpoint runs in the commit that crosses the limit (as SQLite's own); a slow one is logged."""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest

from platform_server import db
from platform_server.db import database


def test_a_commit_past_the_wal_limit_checkpoints_and_a_slow_checkpoint_is_logged(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(db, "WAL_AUTOCHECKPOINT_PAGES", 20)
    monkeypatch.setattr(db, "SLOW_CHECKPOINT_S", 0.0)  # every checkpoint counts as slow here
    path = str(tmp_path / "wal.db")
    db.open_database(path)
    try:
        database.execute_sql("CREATE TABLE note (id INTEGER PRIMARY KEY, body TEXT)")
        size = os.path.getsize(path)
        with caplog.at_level(logging.WARNING, logger="platform_server.db"):
            for i in range(30):  # a page or more per commit
                with database.atomic():
                    database.execute_sql("INSERT INTO note (body) VALUES (?)", ("x" * 3000 + str(i),))
        assert os.path.getsize(path) > size  # rows were copied into the database file itself
        assert any("WAL checkpoint of" in r.getMessage() for r in caplog.records)
    finally:
        db.close_database()
