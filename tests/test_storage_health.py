"""Read-only mode without a full disk at hand: a free-space threshold above what the disk has puts the
server in it at start (writes 507, /health DEGRADED with the reason, reads and logins served), and the
periodic check (`storage_check_s`) ends it once space is enough again."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import apsw
import pytest

from platform_server import storage

from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.server import RunningServer

HUGE_MB = 1 << 40  # more free space than any disk has


@pytest.mark.config(storage_min_free_mb=HUGE_MB, storage_check_s=0.1)
async def test_free_space_under_the_threshold_makes_writes_answer_507_until_a_check_finds_enough(server: RunningServer, api: ApiClient) -> None:
    r = await api.post("/api/v1/setup/init", {"username": "alice", "password": "password-123"})
    assert r.status == 507 and r.body["code"] == 507 and "Free space" in r.body["msg"] and r.body["data"] is None
    r = await api.get("/api/v1/setup/status")
    assert r.status == 200 and r.data["hasAdmin"] is False  # nothing was written
    server.platform.storage.min_free_bytes = 1  # (the disk "gets" space: the threshold is now met)

    async def accepted() -> Any:
        r = await api.post("/api/v1/setup/init", {"username": "alice", "password": "password-123"})
        return r.status != 507 and r

    r = await eventually(accepted, interval=0.05, what="setup accepted once the disk has room")
    assert r.status == 200, r.body
    api.tokens["alice"] = r.data["token"]
    health = (await api.get("/api/v1/system/health", token="alice")).data
    assert health["status"] == "UP" and health["storage"]["readOnly"] is False


@pytest.mark.config(storage_check_s=0)
async def test_with_storage_check_s_0_read_only_mode_lasts_until_a_restart(server: RunningServer, api: ApiClient, people: Any) -> None:
    server.platform.storage.min_free_bytes = HUGE_MB << 20
    assert server.platform.storage.check() is False  # (what the start measures)
    health = (await api.get("/api/v1/system/health", token="alice")).data
    assert health["status"] == "DEGRADED" and "threshold" in health["storage"]["reason"]
    r = await api.post("/api/v1/auth/login", {"username": "bob", "password": "password-123"})
    assert r.status == 200  # logins are served read-only
    r = await api.post("/api/v1/agents", {"name": "Nope", "agentType": "react"}, token="alice")
    assert r.status == 507 and "read-only" in r.body["msg"]
    server.platform.storage.min_free_bytes = 1
    assert server.platform.storage_loop is None  # no periodic check runs that could ever measure again
    r = await api.post("/api/v1/agents", {"name": "Nope", "agentType": "react"}, token="alice")
    assert r.status == 507


def test_the_space_a_freed_reserve_gave_back_does_not_end_read_only_mode(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A start on a full disk freed the 2 MB reserve to open the database: those 2 MB are not space back.
    free = {"bytes": storage.RESERVE_BYTES}
    monkeypatch.setattr(storage.shutil, "disk_usage", lambda _: SimpleNamespace(free=free["bytes"]))
    health = storage.StorageHealth(str(tmp_path), 1024 * 1024)
    health.note_fault(apsw.FullError("database or disk is full"))
    health.reserve_owed = True
    assert not health.check() and health.snapshot()["status"] == "DEGRADED"
    free["bytes"] = storage.RESERVE_BYTES + 2 * 1024 * 1024  # room for the reserve and the threshold: writes resume
    assert health.check()
    loop = storage.StorageCheckLoop(health, 1)
    free["bytes"] = 10 * storage.RESERVE_BYTES
    assert loop.tick() and not health.reserve_owed and (tmp_path / storage.RESERVE_NAME).exists()
