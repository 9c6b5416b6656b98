"""A create sent again with the same Idempotency-Key creates nothing new: the first answer is replayed;
the same key with another body answers 422, a key whose request still runs 409, per user."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest

from platform_server.db import database
from platform_server.idempotency import IdempotencyRecord
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually


def _key(value: str) -> dict[str, str]:
    return {"Idempotency-Key": value}


async def _agents_named(api: ApiClient, name: str) -> list[dict[str, Any]]:
    r = await api.get("/api/v1/agents", token="alice")
    return [a for a in r.data if a["name"] == name]


async def test_a_retried_create_with_the_same_key_returns_the_first_answer_and_creates_once(api: ApiClient, people: Any) -> None:
    body = {"name": "Once", "agentType": "react"}
    first = await api.post("/api/v1/agents", body, token="alice", headers=_key("create-once-1"))
    again = await api.post("/api/v1/agents", body, token="alice", headers=_key("create-once-1"))
    assert first.status == again.status == 200
    assert again.body == first.body and again.headers.get("Idempotent-Replayed") == "true"
    assert len(await _agents_named(api, "Once")) == 1
    other = await api.post("/api/v1/agents", body, token="alice", headers=_key("create-once-2"))  # a new key: a new create
    assert other.status == 200 and other.data["id"] != first.data["id"]
    for path, payload in (("/api/v1/workspaces", {"name": "Team K"}),):
        a = await api.post(path, payload, token="alice", headers=_key("ws-1"))
        b = await api.post(path, payload, token="alice", headers=_key("ws-1"))
        assert a.status == 200 and b.body == a.body


async def test_the_same_key_with_another_body_answers_422_and_creates_nothing(api: ApiClient, people: Any) -> None:
    await api.post("/api/v1/agents", {"name": "First", "agentType": "react"}, token="alice", headers=_key("k-422"))
    r = await api.post("/api/v1/agents", {"name": "Second", "agentType": "react"}, token="alice", headers=_key("k-422"))
    assert r.status == 422 and r.body["code"] == 422 and "different request body" in r.body["msg"]
    assert not await _agents_named(api, "Second")


async def test_a_key_whose_first_request_still_runs_answers_409(api: ApiClient, people: Any) -> None:
    body = {"name": "Racing", "agentType": "react"}
    first, second = await asyncio.gather(
        api.post("/api/v1/agents", body, token="alice", headers=_key("k-409")),
        api.post("/api/v1/agents", body, token="alice", headers=_key("k-409")),
    )
    statuses = sorted([first.status, second.status])
    # both arrive in one loop pass: the second finds the first either running (409) or done (replayed)
    assert statuses in ([200, 200], [200, 409])
    assert len(await _agents_named(api, "Racing")) == 1
    with database.atomic():  # a request cut off while running (a crash): its key is held ...
        IdempotencyRecord.insert(user_id=int(people["alice"]["id"]), method="POST", path="/api/v1/agents", key="k-held",
                                 request_hash="x", create_time=dt.datetime.utcnow()).execute()
    r = await api.post("/api/v1/agents", body, token="alice", headers=_key("k-held"))
    assert r.status == 409 and "still being processed" in r.body["msg"]


async def test_keys_are_per_user_a_failed_request_keeps_nothing_and_a_bad_key_is_refused(api: ApiClient, people: Any) -> None:
    body = {"name": "Mine", "agentType": "react"}
    a = await api.post("/api/v1/agents", body, token="alice", headers=_key("shared"))
    b = await api.post("/api/v1/agents", body, token="bob", headers=_key("shared"))
    assert a.status == b.status == 200 and a.data["id"] != b.data["id"]
    bad = await api.post("/api/v1/agents", {"name": ""}, token="alice", headers=_key("bad-1"))
    assert bad.status == 400
    again = await api.post("/api/v1/agents", {"name": ""}, token="alice", headers=_key("bad-1"))
    assert again.status == 400 and again.body == bad.body  # a 4xx is the request's final answer too
    r = await api.post("/api/v1/agents", body, token="alice", headers=_key("x" * 300))
    assert r.status == 400 and "Idempotency-Key" in r.body["msg"]


@pytest.mark.config(idempotency_ttl_s=0.5)
async def test_a_key_is_forgotten_after_idempotency_ttl_s(api: ApiClient, people: Any) -> None:
    body = {"name": "Expiring", "agentType": "react"}
    first = await api.post("/api/v1/agents", body, token="alice", headers=_key("k-ttl"))

    async def forgotten() -> Any:  # within the ttl a retry is answered with the first answer: nothing is created
        again = await api.post("/api/v1/agents", body, token="alice", headers=_key("k-ttl"))
        assert again.status == 200, again.body
        return again.data["id"] != first.data["id"] and again

    second = await eventually(forgotten, interval=0.05, what="the key forgotten after its ttl")
    assert first.status == second.status == 200
    names = [a["name"] for a in (await api.get("/api/v1/agents", token="alice")).data]
    assert names.count("Expiring") == 2  # the retries inside the ttl created nothing
