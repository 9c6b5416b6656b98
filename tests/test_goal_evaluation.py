"""Goals that are judged: after each turn the model's verdict is recorded; goals complete or exhaust by themselves."""
from __future__ import annotations

import json
from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script


async def make_goal(env: ChatEnv, **fields: Any) -> dict[str, Any]:
    body = {"conversationId": "g1", "agentId": env.agent_id, "title": "Ship the launch",
            "criteria": ["Landing page live", "Press kit sent"], **fields}
    r = await env.api.post("/api/v1/goals", body, token="alice")
    assert r.status == 200, r.body
    return r.data


def verdict(progress: int, completed: bool, reason: str, blocked: bool = False) -> Script:
    return Script(text=json.dumps({"progress": progress, "completed": completed, "blocked": blocked, "reason": reason}))


async def goal(env: ChatEnv, goal_id: str) -> dict[str, Any]:
    r = await env.api.get(f"/api/v1/goals/{goal_id}", token="alice")
    assert r.status == 200, r.body
    return r.data


async def test_a_goal_is_judged_after_each_turn_and_completes_by_itself(env: ChatEnv, server: Any) -> None:
    await env.stream("let us plan the launch", conversation_id="g1")
    g = await make_goal(env)
    evaluator = server.platform.services.goals_evaluator
    assert await evaluator.tick() == 0  # no turn since the goal was set
    await env.stream("the landing page is live", conversation_id="g1")
    env.llm.enqueue(verdict(50, False, "The press kit is not sent yet."))
    assert await evaluator.tick() == 1
    judge = env.llm.requests[-1]["messages"]
    assert "progress" in judge[0]["content"]
    asked = json.loads(judge[1]["content"])
    assert asked["goal"] == "Ship the launch" and "the landing page is live" in asked["conversation"]
    assert await evaluator.tick() == 0  # that turn is judged
    detail = await goal(env, g["id"])
    assert detail["status"] == "active" and detail["attempts"] == 1
    assert detail["lastEvaluation"]["progress"] == 50 and detail["lastEvaluation"]["reason"] == "The press kit is not sent yet."

    await env.stream("press kit sent too", conversation_id="g1")
    env.llm.enqueue(verdict(100, True, "Both criteria hold."))
    assert await evaluator.tick() == 1
    detail = await goal(env, g["id"])
    assert detail["status"] == "completed" and detail["closedAt"] and detail["attempts"] == 2
    events = (await env.api.get(f"/api/v1/goals/{g['id']}/events", token="alice")).data
    assert [e["type"] for e in events] == ["created", "evaluated", "evaluated", "completed"]
    assert events[-1]["detail"]["reason"] == "Both criteria hold." and events[-1]["actorUserId"] is None
    messages = await env.messages("g1")
    judged = [m for m in messages if (m.get("metadata") or {}).get("goalEvaluation")]
    assert [m["metadata"]["goalEvaluation"]["progress"] for m in judged] == [50, 100]
    assert judged[-1]["metadata"]["goalEvaluation"]["goalStatus"] == "completed"
    await env.stream("anything else?", conversation_id="g1")
    assert await evaluator.tick() == 0  # a closed goal is not judged again
    usage = (await env.api.get("/api/v1/token-usage", params={"groupBy": "source"}, token="alice")).data
    assert {i["source"]: i["calls"] for i in usage["items"]}["goal"] == 2


async def test_a_goal_runs_out_of_attempts_and_is_exhausted(env: ChatEnv, server: Any) -> None:
    await env.stream("let us plan the launch", conversation_id="g1")
    g = await make_goal(env, maxAttempts=2)
    assert g["maxAttempts"] == 2
    evaluator = server.platform.services.goals_evaluator
    for i, text in enumerate(("try one", "try two")):
        await env.stream(text, conversation_id="g1")
        env.llm.enqueue(verdict(10, False, "Waiting for the designer.", blocked=True))
        assert await evaluator.tick() == 1
        assert (await goal(env, g["id"]))["status"] == ("active" if i == 0 else "exhausted")
    detail = await goal(env, g["id"])
    assert detail["lastEvaluation"]["blocked"] is True and detail["attempts"] == 2
    r = await env.api.patch(f"/api/v1/goals/{g['id']}", {"maxAttempts": 5}, token="alice")
    assert r.status == 409  # terminal now: the stored status refuses it (documented)


async def test_a_judge_that_never_answers_json_counts_attempts_and_exhausts_the_goal_without_asking_every_tick(
    env: ChatEnv, server: Any
) -> None:
    await env.stream("let us plan the launch", conversation_id="g1")
    g = await make_goal(env, maxAttempts=3)
    evaluator = server.platform.services.goals_evaluator
    for i in range(3):
        await env.stream(f"turn {i}", conversation_id="g1")
        env.llm.enqueue(Script(text="I think it is going well, keep it up!"))
        asked = len(env.llm.requests)
        assert await evaluator.tick() == 1
        assert len(env.llm.requests) == asked + 1
        for _ in range(5):  # that turn is judged, unreadable or not: not asked again tick after tick
            assert await evaluator.tick() == 0
        assert len(env.llm.requests) == asked + 1
        detail = await goal(env, g["id"])
        assert detail["attempts"] == i + 1 and detail["status"] == ("exhausted" if i == 2 else "active")
    assert "not the JSON verdict" in detail["lastEvaluation"]["reason"]
    events = (await env.api.get(f"/api/v1/goals/{g['id']}/events", token="alice")).data
    assert [e["type"] for e in events] == ["created", "evaluated", "evaluated", "evaluated", "exhausted"]
    assert all(e["detail"]["unreadable"] is True for e in events if e["type"] == "evaluated")
    asked = len(env.llm.requests)
    await env.stream("one more turn", conversation_id="g1")
    assert await evaluator.tick() == 0
    assert len(env.llm.requests) == asked + 1  # only the chat turn itself
