"""Cron and trigger test helpers: the in-process scheduler (ticked with a chosen clock) and job creation."""
from __future__ import annotations

import datetime as dt
from typing import Any

from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer


def scheduler(server: RunningServer) -> Any:
    return server.platform.services.cron


def utc(text: str) -> dt.datetime:
    """An API timestamp (`...Z`) as naive UTC, the scheduler's clock."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


async def make_job(api: ApiClient, agent_id: str, token: str = "alice", **fields: Any) -> dict[str, Any]:
    body = {"name": "Digest", "agentId": agent_id, "cronExpression": "*/5 * * * *", "message": "Write the digest", **fields}
    r = await api.post("/api/v1/cron-jobs", body, token=token)
    assert r.status == 200, r.body
    return r.data


async def runs(api: ApiClient, token: str = "alice", job_id: str | None = None, **params: Any) -> dict[str, Any]:
    path = "/api/v1/dashboard/cron-runs" + (f"/{job_id}" if job_id else "")
    r = await api.get(path, token=token, params=params or None)
    assert r.status == 200, r.body
    return r.data
