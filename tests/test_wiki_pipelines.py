"""LLM Wiki pipelines: definitions over the step catalogue, validation listing every error, runs with step detail."""
from __future__ import annotations

from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, use_fake_wiki_models, wait_idle

STEPS = [{"type": "extract"}, {"type": "chunk", "size": 400, "overlap": 50}, {"type": "embed"},
         {"type": "synthesize", "maxChunksPerCall": 4}, {"type": "link"}]


async def test_an_enabled_pipeline_processes_materials_with_timed_steps(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    await use_fake_wiki_models(api, llm.url)
    kb = await make_kb(api)
    r = await api.post("/api/v1/wiki/transformations", {"name": "Gist", "prompt": "One line gist: {{content}}"}, token="bob")
    tid = r.data["id"]
    r = await api.post(f"{KB}/{kb}/pipelines", {"name": "notes", "steps": [*STEPS, {"type": "transform", "transformationId": tid,
                                                                                    "saveAsPage": True}]}, token="bob")
    assert r.status == 200, r.body
    pid = r.data["id"]
    llm.enqueue(Script(text=pages_answer(page("saturn", "Saturn", "# Saturn\n\nRings, see [[rings]] and [[moons]].", ["c1"]),
                                         page("rings", "Rings", "# Rings\n\nIce.", ["c1"]))),
                Script(text="Saturn is ringed."))
    raw = await add_text(api, kb, "Planets", "Saturn is a gas giant with rings made of ice and rock.")
    await wait_idle(api, kb)
    assert (await api.get(f"{KB}/{kb}/raw", token="bob")).data[0]["status"] == "completed"
    runs = (await api.get(f"{KB}/{kb}/pipelines/{pid}/runs", token="carol")).data
    assert len(runs) == 1 and runs[0]["rawId"] == raw["id"] and runs[0]["status"] == "completed"
    detail = (await api.get(f"{KB}/{kb}/pipeline-runs/{runs[0]['id']}", token="carol")).data
    steps = detail["steps"]
    assert [(s["type"], s["status"]) for s in steps] == [(t, "completed") for t in
                                                        ("extract", "chunk", "embed", "synthesize", "link", "transform")]
    assert all(s["durationMs"] is not None and s["startTime"] and s["endTime"] for s in steps)
    assert steps[4]["detail"] == {"pages": 2, "brokenLinks": 1}
    gist = steps[5]["detail"]["pageSlug"]
    assert "Saturn is ringed" in (await api.get(f"{KB}/{kb}/pages/{gist}", token="bob")).data["markdown"]
    # A failing step is recorded with its error; the rest are skipped.
    llm.enqueue(Script(error_status=400, error_message="no pages today"))
    await add_text(api, kb, "Moons", "Titan is Saturn's largest moon.")
    await wait_idle(api, kb)
    last = (await api.get(f"{KB}/{kb}/pipelines/{pid}/runs", token="bob")).data[0]
    assert last["status"] == "failed"
    assert [(s["type"], s["status"]) for s in last["steps"]][3:] == [("synthesize", "failed"), ("link", "skipped"),
                                                                     ("transform", "skipped")]
    # It says what failed with an error id; the provider's answer and address are only in the log under that id.
    assert "The model provider rejected the request. (error " in last["steps"][3]["error"]
    assert "no pages today" not in last["steps"][3]["error"] and llm.url.split("//")[1] not in last["steps"][3]["error"]
    assert (await api.delete(f"{KB}/{kb}/pipelines/{pid}", token="bob")).status == 200
    assert (await api.get(f"{KB}/{kb}/pipeline-runs/{runs[0]['id']}", token="bob")).status == 404


async def test_validate_lists_every_error_and_an_invalid_pipeline_is_not_saved(api: ApiClient, people: dict) -> None:
    kb = await make_kb(api)
    bad = {"name": "", "steps": [{"type": "chunk", "size": 50}, {"type": "fly"}, {"type": "transform"},
                                 {"type": "synthesize", "colour": "red"}], "extra": 1}
    r = await api.post(f"{KB}/{kb}/pipelines/validate", bad, token="carol")
    assert r.status == 200 and r.data["valid"] is False
    errors = r.data["errors"]
    for expected in ("name: must not be blank", "extra: unknown field", "steps[0].type: the first step must be extract",
                     "steps[0]: chunk needs a extract step before it", "steps[0].size: must be between 200 and 8000",
                     "steps[1].type: must be one of", "steps[2].transformationId: required",
                     "steps[3]: synthesize needs a embed step before it", "steps[3].colour: unknown parameter",
                     "steps: chunks are stored by the embed step"):
        assert any(e.startswith(expected) for e in errors), (expected, errors)
    r = await api.post(f"{KB}/{kb}/pipelines", bad, token="bob")  # breaks the document (PipelineBody): 400
    assert r.status == 400 and r.msg.startswith("name: must not be blank"), r.body
    disordered = {"name": "odd", "steps": [{"type": "chunk", "size": 200, "overlap": 150}, {"type": "extract"}, {"type": "extract"}]}
    r = await api.post(f"{KB}/{kb}/pipelines", disordered, token="bob")  # well formed, but it does not hold together: 422
    assert r.status == 422 and r.body["code"] == 422, r.body
    for expected in ("steps[0].type: the first step must be extract", "steps[0].overlap: must be less than half of size",
                     "steps[2].type: extract appears twice", "steps: chunks are stored by the embed step"):
        assert expected in r.msg, (expected, r.msg)
    assert (await api.get(f"{KB}/{kb}/pipelines", token="bob")).data == []
    good = await api.post(f"{KB}/{kb}/pipelines/validate", {"name": "ok", "steps": STEPS}, token="carol")
    assert good.data == {"valid": True, "errors": []}
    for body in ([STEPS], "steps"):  # not a JSON object: nothing to check
        r = await api.post(f"{KB}/{kb}/pipelines/validate", body, token="carol")
        assert r.status == 400 and r.msg == "Request body must be a JSON object", r.body
    for step, error in (({"type": "transform", "transformationId": "²"}, "steps[1].transformationId: must be an id"),
                        ({"type": "chunk", "size": True}, "steps[1].size: must be an integer")):
        r = await api.post(f"{KB}/{kb}/pipelines", {"name": "odd", "steps": [STEPS[0], step]}, token="bob")
        assert r.status == 400 and r.msg.startswith("steps.1."), r.body  # the document's step types (PipelineStep)
        r = await api.post(f"{KB}/{kb}/pipelines/validate", {"name": "odd", "steps": [STEPS[0], step]}, token="bob")
        assert error in r.data["errors"], r.body  # an id is ASCII digits (int("²") failed), an integer no boolean
    r = await api.post(f"{KB}/{kb}/pipelines", {"name": "\ufeff", "steps": STEPS}, token="bob")
    assert r.status == 400 and "name: must not be blank" in r.msg, r.body  # blank as the document's pattern reads it
    doc = (await api.get("/v3/api-docs")).body["components"]["schemas"]
    body = doc["PipelineBody"]
    assert body["additionalProperties"] is False and body["anyOf"][1] == {"required": ["name", "steps"]}
    assert body["properties"]["steps"]["items"]["discriminator"]["propertyName"] == "type"
    assert doc["TransformStep"]["required"] == ["type", "transformationId"]
    as_yaml = "name: yaml-one\nenabled: false\nsteps:\n  - type: extract\n  - type: chunk\n  - type: embed\n"
    r = await api.post(f"{KB}/{kb}/pipelines", {"yaml": as_yaml}, token="bob")
    assert r.status == 200 and r.data["enabled"] is False and len(r.data["steps"]) == 3
    for text in ("name: [unclosed", ""):  # text, as the document says, that is no definition: 422
        r = await api.post(f"{KB}/{kb}/pipelines", {"yaml": text}, token="bob")
        assert r.status == 422 and r.msg.startswith("yaml: "), r.body
    assert (await api.post(f"{KB}/{kb}/pipelines", {"name": "x", "steps": STEPS}, token="carol")).status == 403
    ws = people["dave"]["workspace"]
    assert (await api.get(f"{KB}/{kb}/pipelines", token="dave", workspace=ws)).status == 404
