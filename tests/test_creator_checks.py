"""Shared objects of a workspace: any member reads them, only the creator or a workspace admin changes them."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient
from tests.helpers.server import PASSWORD, login
from tests.helpers.wiki import KB, add_text, make_kb

W = "/api/v1/workflows"
T = "/api/v1/wiki/transformations"
SKILLS = "/api/v1/skills"
STEPS = [{"type": "extract"}, {"type": "chunk", "size": 400, "overlap": 50}, {"type": "embed"}]


async def add_member(api: ApiClient, name: str) -> str:
    """Another member of workspace 1 (new users join it as member)."""
    r = await api.post("/api/v1/auth/users", {"username": name, "password": PASSWORD}, token="alice")
    assert r.status == 200, r.body
    await login(api, name)
    return r.data["id"]


def refused(r: Any) -> None:
    assert r.status == 403 and r.body["code"] == 403 and "creator or a workspace admin" in r.body["msg"], r.body


async def test_a_member_cannot_edit_publish_or_delete_another_members_workflow(api: ApiClient, people: dict) -> None:
    await add_member(api, "erin")
    wf = (await api.post(W, {"name": "Bob's flow"}, token="bob")).data
    graph = {"nodes": [{"id": "start", "type": "start", "config": {}}, {"id": "end", "type": "end", "config": {}}],
             "edges": [{"from": "start", "to": "end"}]}
    assert (await api.put(f"{W}/{wf['id']}/draft", {"graph": graph}, token="bob")).status == 200
    refused(await api.put(f"{W}/{wf['id']}", {"name": "Erin's now"}, token="erin"))
    refused(await api.put(f"{W}/{wf['id']}/draft", {"graph": graph}, token="erin"))
    refused(await api.post(f"{W}/{wf['id']}/publish", token="erin"))
    refused(await api.delete(f"{W}/{wf['id']}", token="erin"))
    got = await api.get(f"{W}/{wf['id']}", token="erin")  # reading stays open to the workspace
    assert got.status == 200 and got.data["name"] == "Bob's flow" and got.data["latestRevision"] is None
    assert (await api.post(f"{W}/{wf['id']}/publish", token="bob")).status == 200
    assert (await api.put(f"{W}/{wf['id']}", {"name": "Renamed by an admin"}, token="alice")).status == 200
    assert (await api.delete(f"{W}/{wf['id']}", token="bob")).status == 200


async def test_a_member_cannot_change_another_members_team(api: ApiClient, people: dict) -> None:
    await add_member(api, "erin")
    lead, member = await make_agent(api, name="Lead"), await make_agent(api, name="Member")
    team = (await api.post("/api/v1/teams", {"name": "Docs", "leadAgentId": lead, "memberAgentIds": [member]}, token="bob")).data
    refused(await api.put(f"/api/v1/teams/{team['id']}", {"name": "Hijacked"}, token="erin"))
    refused(await api.delete(f"/api/v1/teams/{team['id']}", token="erin"))
    assert (await api.get(f"/api/v1/teams/{team['id']}", token="erin")).data["name"] == "Docs"
    assert (await api.put(f"/api/v1/teams/{team['id']}", {"name": "Docs 2"}, token="bob")).status == 200
    assert (await api.delete(f"/api/v1/teams/{team['id']}", token="alice")).status == 200


async def test_a_member_cannot_change_another_members_knowledge_base_material_transformation_or_pipeline(api: ApiClient, people: dict) -> None:
    await add_member(api, "erin")
    kb = await make_kb(api, autoProcess=False)
    raw = await add_text(api, kb, "Bob's notes", "Saturn has rings.")
    tid = (await api.post(T, {"name": "Gist", "prompt": "Gist: {{content}}"}, token="bob")).data["id"]
    pipe = await api.post(f"{KB}/{kb}/pipelines", {"name": "notes", "steps": STEPS}, token="bob")
    assert pipe.status == 200 and pipe.data["creatorUserId"] == people["bob"]["id"], pipe.body

    refused(await api.put(f"{KB}/{kb}", {"name": "Erin's now"}, token="erin"))
    refused(await api.put(f"{KB}/{kb}/config", {"autoProcess": True}, token="erin"))
    refused(await api.delete(f"{KB}/{kb}", token="erin"))
    refused(await api.delete(f"{KB}/{kb}/raw/{raw['id']}", token="erin"))
    refused(await api.put(f"{T}/{tid}", {"prompt": "Leak everything"}, token="erin"))
    refused(await api.delete(f"{T}/{tid}", token="erin"))
    refused(await api.post(f"{KB}/{kb}/pipelines", {"name": "notes", "steps": [{"type": "extract"}]}, token="erin"))
    refused(await api.delete(f"{KB}/{kb}/pipelines/{pipe.data['id']}", token="erin"))
    # Nothing changed, and a member still reads all of it.
    assert [r["id"] for r in (await api.get(f"{KB}/{kb}/raw", token="erin")).data] == [raw["id"]]
    assert (await api.get(f"{T}/{tid}", token="erin")).data["prompt"] == "Gist: {{content}}"
    assert (await api.get(f"{KB}/{kb}/pipelines", token="erin")).data[0]["steps"] == STEPS
    # Erin's own pipeline (another name) is hers to change.
    assert (await api.post(f"{KB}/{kb}/pipelines", {"name": "erins", "steps": STEPS}, token="erin")).status == 200

    assert (await api.put(f"{T}/{tid}", {"prompt": "Summary: {{content}}"}, token="bob")).status == 200
    assert (await api.delete(f"{T}/{tid}", token="alice")).status == 200
    assert (await api.delete(f"{KB}/{kb}/pipelines/{pipe.data['id']}", token="bob")).status == 200
    assert (await api.delete(f"{KB}/{kb}/raw/{raw['id']}", token="alice")).status == 200
    assert (await api.put(f"{KB}/{kb}/config", {"autoProcess": True}, token="bob")).status == 200


async def test_a_member_cannot_set_or_delete_the_secrets_of_another_members_skill(api: ApiClient, people: dict) -> None:
    await add_member(api, "erin")
    skill = (await api.post(SKILLS, {"name": "deploy", "description": "Deploys."}, token="bob")).data
    base = f"{SKILLS}/{skill['id']}/secrets"
    assert (await api.post(base, {"key": "TOKEN", "value": "bobs-real-token-1234"}, token="bob")).status == 200
    refused(await api.post(base, {"key": "TOKEN", "value": "erins-token-to-capture"}, token="erin"))
    refused(await api.post(base, {"key": "TOKEN", "value": ""}, token="erin"))
    refused(await api.delete(f"{base}/TOKEN", token="erin"))
    assert [(s["key"], s["preview"]) for s in (await api.get(base, token="erin")).data] == [("TOKEN", "…1234")]
    assert (await api.post(base, {"key": "OTHER", "value": "set-by-a-workspace-admin"}, token="alice")).status == 200
    assert (await api.delete(f"{base}/TOKEN", token="bob")).status == 200
