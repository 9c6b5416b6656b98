"""Editing one remembered fact (the console's fact editor): the statement changes, MEMORY.md follows."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.memory import base, fact, folder, summarize
from tests.helpers.openapi_inputs import conforms


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
    assert r.status == 409 and r.msg == "Only an active fact can be edited"  # the fact's state refuses it, not the body


async def test_a_blank_statement_or_an_end_user_id_over_128_characters_is_refused_as_the_document_states(env: ChatEnv) -> None:
    """A blank statement was kept as an empty fact, an endUserId of 129 characters with spaces around was read
    stripped: the document now states both rules (not blank; at most 128 characters as sent) and the server checks them."""
    doc = (await env.api.get("/v3/api-docs")).body
    r = await summarize(env, [fact("city", "Lives in Lyon")])
    url = f"{base(env)}/facts/{r.data['facts'][0]['id']}/edit"
    for body in ({"statement": " "}, {"statement": "\u3000\t"}):
        r = await env.api.post(url, body, token="alice")
        assert r.status == 400 and not conforms(doc, "FactEditRequest", body), (body, r.body)
    assert not conforms(doc, "EditRequest", {"after": " "}) and conforms(doc, "EditRequest", {"after": " x "})
    param = next(p for p in doc["paths"]["/api/v1/memory/{agentId}/facts"]["get"]["parameters"] if p["name"] == "endUserId")
    assert param["schema"]["maxLength"] == 128
    for value, status in ((" " + "u" * 127, 200), ("  " + "u" * 127, 400), ("u" * 129, 400)):
        r = await env.api.get(f"{base(env)}/facts", token="alice", params={"endUserId": value})
        assert r.status == status, (len(value), r.body)
