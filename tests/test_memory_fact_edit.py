"""Editing one remembered fact (the console's fact editor): the statement changes, MEMORY.md follows."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.memory import base, fact, folder, summarize


async def test_an_edited_fact_is_marked_user_edited_and_memory_md_is_rebuilt(env: ChatEnv, server: Any) -> None:
    r = await summarize(env, [fact("city", "Lives in Lyon"), fact("pet", "Has a cat")])
    city = r.data["facts"][0]
    r = await env.api.post(f"{base(env)}/facts/{city['id']}/edit", {"statement": "  Lives in Paris  "}, token="alice")
    assert r.status == 200, r.body
    assert r.data["statement"] == "Lives in Paris" and r.data["userEdited"] is True and r.data["status"] == "active"
    memory = (folder(server, env) / "MEMORY.md").read_text()
    assert "Lives in Paris" in memory and "Lyon" not in memory and "Has a cat" in memory


async def test_fact_edit_refuses_blank_text_forgotten_facts_other_people_and_viewers(env: ChatEnv) -> None:
    r = await summarize(env, [fact("city", "Lives in Lyon")])
    fid = r.data["facts"][0]["id"]
    url = f"{base(env)}/facts/{fid}/edit"
    assert (await env.api.post(url, {"statement": ""}, token="alice")).status == 400
    assert (await env.api.post(url, {}, token="alice")).status == 400
    assert (await env.api.post(f"{base(env)}/facts/999/edit", {"statement": "x"}, token="alice")).status == 404
    assert (await env.api.post(url, {"statement": "x"}, token="bob")).status == 404  # bob's memory has no such fact
    assert (await env.api.post(url, {"statement": "x"}, token="carol")).status == 403
    await env.api.post(f"{base(env)}/facts/{fid}/forget", token="alice")
    r = await env.api.post(url, {"statement": "Lives in Paris"}, token="alice")
    assert r.status == 400 and r.msg == "Only an active fact can be edited"
