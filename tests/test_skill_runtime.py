"""Skills at run time: secrets reach tool executions (masked in output), lessons are learned, uses are real."""
from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script, ScriptedToolCall

SKILLS = "/api/v1/skills"
SECRET = "tok-9f8e7d6c5b4a"
DEPLOYER = ("---\nname: deployer\ndescription: Deploy the site.\nrequires:\n  secrets: [DEPLOY_TOKEN]\n---\n"
            "Run `sh skills/deployer/deploy.sh` with shell_exec to deploy.\n")


async def deployer(env: ChatEnv) -> str:
    """The deployer skill (secret set, bound), shell_exec bound, the guard off: tool calls run at once."""
    r = await env.api.post(SKILLS, {"content": DEPLOYER}, token="alice")
    assert r.status == 200, r.body
    skill_id = r.data["id"]
    r = await env.api.post(f"{SKILLS}/{skill_id}/secrets", {"key": "DEPLOY_TOKEN", "value": SECRET}, token="alice")
    assert r.status == 200, r.body
    assert (await env.api.post(f"/api/v1/agents/{env.agent_id}/skills/{skill_id}", token="alice")).status == 200
    r = await env.api.put("/api/v1/workspaces/1", {"hostTools": ["shell"]}, token="alice")  # a global admin enables it
    assert r.status == 200, r.body
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["shell_exec"]}, token="alice")
    assert r.status == 200, r.body
    r = await env.api.put("/api/v1/security/guard/config", {"enabled": False}, token="alice")
    assert r.status == 200, r.body
    return skill_id


def shell(command: str) -> Script:
    return Script(tool_calls=[ScriptedToolCall("shell_exec", {"command": command})])


async def skill(env: ChatEnv, skill_id: str) -> dict[str, Any]:
    r = await env.api.get(f"{SKILLS}/{skill_id}", token="alice")
    assert r.status == 200, r.body
    return r.data


async def lessons(env: ChatEnv, skill_id: str) -> str:
    r = await env.api.get(f"{SKILLS}/{skill_id}/lessons", token="alice")
    assert r.status == 200, r.body
    return r.data["content"]


@pytest.mark.config(shell_exec_enabled=True)
async def test_shell_exec_in_a_skill_sees_its_secret_and_the_transcript_shows_it_masked(env: ChatEnv) -> None:
    skill_id = await deployer(env)
    env.llm.enqueue(shell("echo deployer token=$DEPLOY_TOKEN length=${#DEPLOY_TOKEN}"), Script(text="done"))
    events = await env.stream("deploy please")
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed["success"] is True
    assert f"token=****** length={len(SECRET)}" in completed["result"]
    everything = json.dumps([e.data for e in events]) + json.dumps(await env.messages())
    assert SECRET not in everything
    assert not any(SECRET in json.dumps(r) for r in env.llm.requests)  # neither the prompt nor the tool result
    assert "### deployer" in env.llm.requests[0]["messages"][0]["content"]  # the skill is in the prompt
    assert (await skill(env, skill_id))["useCount"] == 1


@pytest.mark.config(shell_exec_enabled=True)
async def test_a_failed_skill_turn_leaves_one_lesson_that_the_next_prompt_carries(env: ChatEnv) -> None:
    skill_id = await deployer(env)
    assert await lessons(env, skill_id) == ""
    for conversation in ("c1", "c2"):  # the same failure twice: one lesson
        env.llm.enqueue(shell("sh skills/deployer/deploy.sh || (echo 'deploy.sh: host unreachable'; exit 3)"),
                        Script(text="it failed"))
        await env.stream("deploy please", conversation_id=conversation)
    text = await lessons(env, skill_id)
    assert text.count("\n") == 1 and "Using deployer, `shell_exec` failed: deploy.sh: host unreachable" in text
    env.llm.enqueue(Script(text="ok"))
    await env.stream("hello", conversation_id="c3")
    system = env.llm.requests[-1]["messages"][0]["content"]
    assert "Lessons learned with this skill" in system and "host unreachable" in system
    assert (await skill(env, skill_id))["useCount"] == 2  # the plain hello did not use it


@pytest.mark.config(shell_exec_enabled=True)
async def test_a_user_correction_after_a_skill_turn_becomes_a_lesson(env: ChatEnv) -> None:
    skill_id = await deployer(env)
    env.llm.enqueue(shell("echo deployer ran"), Script(text="Deployed to staging."))
    await env.stream("deploy please")
    env.llm.enqueue(Script(text="Sorry."))
    await env.stream("No, deploy to production, not staging")
    assert "was corrected by the user: \"No, deploy to production, not staging\"" in await lessons(env, skill_id)
    env.llm.enqueue(Script(text="Fine."))
    await env.stream("thanks")
    assert (await lessons(env, skill_id)).count("\n") == 1
