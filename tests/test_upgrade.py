"""Upgrades: a database made by the previous version's migrations (tests/fixtures/previous_db.sql.gz, made by
tests/fixtures/make_previous_db.py) is migrated by today's server, its data intact and its secrets sealed."""
from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path
from typing import Any

from tests.helpers.server import PASSWORD, login, start_server

FIXTURE = Path(__file__).parent / "fixtures" / "previous_db.sql.gz"


async def test_a_database_from_the_previous_migrations_is_upgraded_in_place(tmp_path: Any) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as fh, sqlite3.connect(data / "platform.db") as db:
        db.executescript(fh.read())
        before = {row[0] for row in db.execute("SELECT name FROM schema_migration")}
        assert db.execute("SELECT count(*) FROM model_provider WHERE api_key = 'test-key'").fetchone()[0] == 1
    server = await start_server(str(data))
    try:
        with sqlite3.connect(data / "platform.db") as db:
            after = {row[0] for row in db.execute("SELECT name FROM schema_migration")}
        assert before < after and "models_0002_seal_api_keys" in after
        raw = (data / "platform.db").read_bytes()
        assert b"old-channel-secret-0123456789" not in raw and b"test-key" not in raw
        api = server.client
        await login(api, "alice", PASSWORD)
        convs = await api.get("/api/v1/conversations", token="alice")
        assert {"old-1", "old-2"} <= {c["conversationId"] for c in convs.data}
        messages = await api.get("/api/v1/conversations/old-1/messages", token="alice")
        assert [m["content"] for m in messages.data] == ["hello from old-1", "Echo: hello from old-1"]
        skills = await api.get("/api/v1/skills", token="alice", params={"size": 100})
        records = skills.data["records"] if isinstance(skills.data, dict) else skills.data
        old = next(s for s in records if s["name"] == "old-skill")
        secrets = await api.get(f"/api/v1/skills/{old['id']}/secrets", token="alice")
        assert [s["preview"] for s in secrets.data] == ["…wxyz"]
        from platform_server.features.channels.models import Channel
        from platform_server.features.models.models import Provider
        assert Channel.get(Channel.name == "old im").secret == "old-channel-secret-0123456789"
        assert Provider.get_by_id("fake").api_key == "test-key"
    finally:
        await server.stop()
