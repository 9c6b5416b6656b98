"""LLM Wiki transformations: templates applied to materials and pages as runs; cancel, save as page, aggregate."""
from __future__ import annotations

from typing import Any

from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, use_fake_wiki_models, wait_idle

T = "/api/v1/wiki/transformations"


async def run_until(api: ApiClient, run_id: str, status: str) -> dict[str, Any]:
    async def reached() -> Any:
        r = await api.get(f"{T}/runs/{run_id}", token="bob")
        assert r.data["status"] == status, f"run {run_id} is not {status}: {r.data}"
        return r.data

    return await eventually(reached)


async def setup(api: ApiClient, llm: ScriptedOpenAI) -> tuple[str, str, str]:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api, name="Astronomy")
    llm.enqueue(Script(text=pages_answer(page("saturn", "Saturn", "# Saturn\n\nSaturn has rings of ice.", ["c1"], "entity"))))
    raw = await add_text(api, kb, "Planets", "Saturn is a gas giant with rings made of ice and rock.")
    await wait_idle(api, kb)
    r = await api.post(T, {"name": "Key points", "prompt": "List the key points of {{title}}:\n{{content}}"}, token="bob")
    assert r.status == 200, r.body
    return kb, raw["id"], r.data["id"]


async def test_a_template_runs_on_a_material_and_a_page_and_aggregates(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb, raw, tid = await setup(api, llm)
    assert [t["name"] for t in (await api.get(T, params={"kbId": kb}, token="carol")).data] == ["Key points"]
    llm.enqueue(Script(text="- Saturn is a gas giant"))
    r = await api.post(f"{T}/{tid}/apply", {"kbId": kb, "rawId": raw}, token="bob")
    assert r.status == 200 and r.data["status"] == "running" and r.data["targetType"] == "raw"
    done = await run_until(api, r.data["id"], "completed")
    assert done["output"] == "- Saturn is a gas giant"
    assert "List the key points of Planets:\nSaturn is a gas giant" in llm.requests[-1]["messages"][-1]["content"]
    saved = await api.post(f"{T}/runs/{done['id']}/save-as-page", {"title": "Planet points"}, token="bob")
    assert saved.status == 200 and saved.data["page"]["pageType"] == "synthesis"
    p = (await api.get(f"{KB}/{kb}/pages/{saved.data['page']['slug']}", token="bob")).data
    assert p["title"] == "Planet points" and p["citationCount"] == 1 and p["rawIds"] == [raw]
    llm.enqueue(Script(text="- Rings of ice"))
    r = await api.post(f"{T}/{tid}/apply", {"kbId": kb, "slug": "saturn"}, token="bob")
    await run_until(api, r.data["id"], "completed")
    runs = (await api.get(f"{T}/runs", params={"transformationId": tid, "status": "completed"}, token="carol")).data
    for status in ("", " completed"):  # not a run state of the document's enum: a 400, not every run
        r = await api.get(f"{T}/runs", params={"status": status}, token="carol")
        assert r.status == 400 and r.msg.startswith("status: must be one of"), (status, r.body)
    assert len(runs) == 2
    llm.enqueue(Script(text="# Key points of Astronomy\n\n- Saturn is a gas giant with rings of ice. See [[saturn]]."))
    agg = await api.post(f"{T}/{tid}/aggregate", {"kbId": kb}, token="bob")
    assert agg.status == 200 and agg.data["targetType"] == "kb"
    agg_done = await run_until(api, agg.data["id"], "completed")
    prompt = llm.requests[-1]["messages"][-1]["content"]
    assert "- Saturn is a gas giant" in prompt and "- Rings of ice" in prompt

    async def saved() -> Any:
        run = (await api.get(f"{T}/runs/{agg.data['id']}", token="bob")).data
        return run["pageSlug"] and run

    agg_done = await eventually(saved, what="the synthesis page saved")
    page_kb = (await api.get(f"{KB}/{kb}/pages/{agg_done['pageSlug']}", token="bob")).data
    assert page_kb["pageType"] == "synthesis" and page_kb["links"][0]["slug"] == "saturn"


async def test_a_cancelled_run_stops_midway_and_leaves_no_page(
        server: RunningServer, api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb, raw, tid = await setup(api, llm)
    before = (await api.get(f"{KB}/{kb}/pages", params={"page": "1"}, token="bob")).data["total"]
    llm.enqueue(Script(hang=True))
    asked = len(llm.requests)
    r = await api.post(f"{T}/{tid}/apply", {"kbId": kb, "rawId": raw}, token="bob")
    await eventually(lambda: len(llm.requests) > asked, what="the run's model call")  # midway
    assert (await api.get(f"{T}/runs/{r.data['id']}", token="bob")).data["status"] == "running"
    c = await api.post(f"{T}/runs/{r.data['id']}/cancel", token="bob")
    assert c.status == 200 and c.data["status"] == "cancelled"
    assert (await api.post(f"{T}/runs/{r.data['id']}/cancel", token="bob")).status == 409  # the run's state decides
    s = await api.post(f"{T}/runs/{r.data['id']}/save-as-page", {}, token="bob")
    assert s.status == 409 and "completed" in s.msg
    engine = server.platform.services.wiki
    await eventually(lambda: not engine.tasks, what="the cancelled run's task ended")  # it saved nothing on its way out
    assert (await api.get(f"{T}/runs/{r.data['id']}", token="bob")).data["status"] == "cancelled"
    assert (await api.get(f"{KB}/{kb}/pages", params={"page": "1"}, token="bob")).data["total"] == before
    assert (await api.post(f"{T}/{tid}/aggregate", {"kbId": kb}, token="bob")).status == 409  # nothing completed
    assert (await api.delete(f"{T}/runs/{r.data['id']}", token="bob")).status == 200
    assert (await api.get(f"{T}/runs/{r.data['id']}", token="bob")).status == 404


async def test_transformations_refuse_bad_input_and_other_workspaces(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    kb, raw, tid = await setup(api, llm)
    assert (await api.post(T, {"name": "", "prompt": "x"}, token="bob")).status == 400
    assert (await api.post(T, {"name": "x", "prompt": "x"}, token="carol")).status == 403
    r = await api.post(f"{T}/{tid}/apply", {"kbId": kb}, token="bob")
    assert r.status == 400 and r.msg.startswith("rawId: ")
    # exactly one of rawId or slug, as the document's oneOf says (a null one is an absent one)
    r = await api.post(f"{T}/{tid}/apply", {"kbId": kb, "rawId": raw, "slug": "saturn"}, token="bob")
    assert r.status == 400 and r.msg.startswith("rawId: ")
    assert (await api.post(f"{T}/{tid}/apply", {"kbId": kb, "rawId": None, "slug": "nope"}, token="bob")).status == 404
    one_of = (await api.get("/v3/api-docs")).body["components"]["schemas"]["ApplyRequest"]["oneOf"]
    assert [branch["required"] for branch in one_of] == [["rawId"], ["slug"]]
    assert (await api.post(f"{T}/{tid}/apply", {"kbId": kb, "slug": "nope"}, token="bob")).status == 404
    assert (await api.post(f"{T}/{tid}/apply", {"kbId": kb, "rawId": "1"}, token="bob")).status == 404
    r = await api.put(f"{T}/{tid}", {"prompt": "Summarise {{content}}"}, token="bob")
    assert r.status == 200 and r.data["prompt"] == "Summarise {{content}}"
    ws = people["dave"]["workspace"]
    assert (await api.get(f"{T}/{tid}", token="dave", workspace=ws)).status == 404
    assert (await api.get(T, token="dave", workspace=ws)).data == []
    assert (await api.delete(f"{T}/{tid}", token="bob")).status == 200
    assert (await api.get(f"{T}/{tid}", token="bob")).status == 404
