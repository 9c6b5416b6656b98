"""Plans are as private as the conversation they ran in: only the user whose turn made one reads it."""
from __future__ import annotations

from tests.helpers.chat import chat_env
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI


async def test_another_user_can_neither_list_nor_read_a_plan(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    env = await chat_env(api, people, llm, agentType="plan_execute")
    llm.enqueue(Script(text='["Read my diary"]'), Script(text="the diary says: secret"), Script(text="Done."))
    r = await api.post(f"/api/v1/agents/{env.agent_id}/execute", {"task": "my private task"}, token="bob")
    assert r.status == 200, r.body
    plan = r.data["plan"]
    assert plan["goal"] == "my private task" and plan["steps"][0]["result"] == "the diary says: secret"

    mine = await api.get("/api/v1/plans", params={"agentId": env.agent_id}, token="bob")
    assert [p["id"] for p in mine.data] == [plan["id"]]
    for someone in ("carol", "alice"):  # a viewer of the workspace, and the global admin (as with conversations)
        listed = await api.get("/api/v1/plans", params={"agentId": env.agent_id}, token=someone)
        assert listed.status == 200 and listed.data == [], (someone, listed.body)
        r = await api.get(f"/api/v1/plans/{plan['id']}", token=someone)
        assert r.status == 404 and r.body == {"code": 404, "msg": "Plan not found", "data": None}, (someone, r.body)
    assert (await api.get(f"/api/v1/plans/{plan['id']}", token="bob")).data["steps"][0]["result"] == "the diary says: secret"
