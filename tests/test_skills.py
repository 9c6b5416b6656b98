"""Skills: CRUD and roles, lifecycle states, secrets, requirements, the prompt hook, cache folder, templates."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from platform_server.features.agents.models import Agent
from platform_server.features.skills import service
from platform_server.features.skills.models import SkillSecret
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer

SKILLS = "/api/v1/skills"

PDF_SKILL = """---
name: pdf-tools
description: Extract text and tables from PDF files.
---

# PDF tools

1. Convert the PDF with pdftotext.
2. Check the page count.
"""


async def create(api: ApiClient, token: str = "bob", workspace: Any = None, **body: Any) -> dict[str, Any]:
    r = await api.post(SKILLS, body, token=token, workspace=workspace)
    assert r.status == 200, r.body
    return r.data


async def make_agent(api: ApiClient, name: str = "Helper", token: str = "bob", **fields: Any) -> str:
    r = await api.post("/api/v1/agents", {"name": name, "systemPrompt": "You help.", **fields}, token=token)
    assert r.status == 200, r.body
    return r.data["id"]


async def bind(api: ApiClient, agent_id: str, skill_id: str) -> None:
    r = await api.post(f"/api/v1/agents/{agent_id}/skills/{skill_id}", token="bob")
    assert r.status == 200, r.body


def cache_dir(server: RunningServer, name: str, workspace: int = 1) -> Path:
    return Path(server.config.data_dir).resolve() / "skills" / str(workspace) / name


# ---- CRUD and roles -------------------------------------------------------------------------


async def test_built_in_skills_are_seeded_and_a_viewer_can_read_them(api: ApiClient, people: dict, server: RunningServer) -> None:
    r = await api.get(SKILLS, token="carol")
    assert r.status == 200, r.body
    names = {s["name"] for s in r.data["records"]}
    assert {"web-research", "structured-summary", "git-workflow"} <= names
    record = next(s for s in r.data["records"] if s["name"] == "git-workflow")
    assert record["skillType"] == "builtin" and record["requires"]["bins"] == ["git"] and "content" not in record
    assert record["archived"] == 0 and record["pinned"] == 0 and record["enabled"] is True
    assert (cache_dir(server, "web-research") / "SKILL.md").read_text().startswith("---\nname: web-research")
    # a page far past the end is an empty page (its offset overflowed the database's int64: a 400)
    r = await api.get(SKILLS, token="carol", params={"page": "46376092721873920000", "size": "10"})
    assert r.status == 200 and r.data["records"] == [] and r.data["total"] > 0, r.body


async def test_a_member_creates_a_skill_from_skill_md_and_the_cache_folder_mirrors_it(
    api: ApiClient, people: dict, server: RunningServer
) -> None:
    skill = await create(api, content=PDF_SKILL, files={"scripts/extract.sh": "pdftotext \"$1\" -\n"})
    assert skill["name"] == "pdf-tools" and skill["description"] == "Extract text and tables from PDF files."
    assert skill["skillType"] == "custom" and skill["version"] == "1.0.0" and skill["useCount"] == 0
    assert skill["files"] == [{"path": "scripts/extract.sh", "size": 17}]
    assert skill["createTime"].endswith("Z") and skill["lastUsedAt"] is None
    folder = cache_dir(server, "pdf-tools")
    assert (folder / "SKILL.md").read_text() == skill["content"]
    assert (folder / "scripts" / "extract.sh").read_text() == "pdftotext \"$1\" -\n"

    r = await api.get(f"{SKILLS}/{skill['id']}", token="carol")
    assert r.status == 200 and r.data["content"] == skill["content"]
    r = await api.put(f"{SKILLS}/{skill['id']}", {"description": "Read PDFs.", "files": {}}, token="bob")
    assert r.status == 200, r.body
    assert r.data["description"] == "Read PDFs." and "description: Read PDFs." in r.data["content"]
    assert r.data["files"] == [] and not (folder / "scripts").exists()
    assert "# PDF tools" in (folder / "SKILL.md").read_text()


async def test_create_without_content_composes_a_skill_md(api: ApiClient, people: dict) -> None:
    skill = await create(api, name="greeter", displayName="Greeter", description="Greet warmly.")
    assert skill["displayName"] == "Greeter"
    assert skill["content"].startswith("---\nname: greeter\ndisplayName: Greeter\ndescription: Greet warmly.\n")


async def test_bad_input_is_refused_with_clear_400s_and_duplicates_with_409(api: ApiClient, people: dict) -> None:
    cases = [
        ({"name": "Bad Name"}, "name: must be a slug"),
        ({"name": "x", "skillType": "builtin"}, "skillType: "),
        ({"content": "---\nname: x\nrequires:\n  bins: [a/b]\n---\n"}, "requires.bins: 'a/b'"),
        ({"content": "---\nname: x\n"}, "no closing '---'"),
    ]
    for body, message in cases:
        r = await api.post(SKILLS, body, token="bob")
        assert r.status == 400 and message in r.body["msg"], (body, r.body)
    # a `files` key that is no bundle path: valid per the document (OpenAPI 3.0 has no rule on an object's keys),
    # so unprocessable (422, documented on the operation), not a malformed request; nothing is created
    for files, message in (({"../evil": "x"}, "files: '../evil'"), ({"SKILL.md": "x"}, "is not a bundle file")):
        r = await api.post(SKILLS, {"name": "keys", "files": files}, token="bob")
        assert r.status == 422 and message in r.body["msg"], (files, r.body)
    assert [s["name"] for s in (await api.get(SKILLS, token="bob")).data["records"] if s["name"] == "keys"] == []
    doc = (await api.get("/v3/api-docs")).body
    assert "propertyNames" in doc["paths"][SKILLS]["post"]["responses"]["422"]["description"]
    # no name anywhere: one is made (the display name's slug, else `skill`), as the document says
    r = await api.post(SKILLS, {"content": "no front matter", "displayName": "Release Notes"}, token="bob")
    assert r.status == 200 and r.data["name"] == "release-notes", r.body
    r = await api.post(SKILLS, {"name": " padded "}, token="bob")
    assert r.status == 400 and r.msg.startswith("name: must be a slug")  # the document's pattern, no stripping
    await create(api, name="dup")
    r = await api.post(SKILLS, {"name": "dup"}, token="bob")
    assert r.status == 409 and r.body == {"code": 409, "msg": "A skill named 'dup' already exists in this workspace", "data": None}
    r = await api.get(f"{SKILLS}/abc", token="bob")
    assert r.status == 400 and r.body["msg"] == "Invalid value for parameter 'id': expected Long"
    r = await api.get(f"{SKILLS}/123", token="bob")
    assert r.status == 404 and r.body["msg"] == "Skill not found"


async def test_viewers_read_members_write_and_only_admins_hard_delete(api: ApiClient, people: dict, server: RunningServer) -> None:
    r = await api.post(SKILLS, {"name": "nope"}, token="carol")
    assert r.status == 403
    skill = await create(api, name="doomed")
    agent_id = await make_agent(api)
    await bind(api, agent_id, skill["id"])
    await api.post(f"{SKILLS}/{skill['id']}/secrets", {"key": "TOKEN", "value": "abcdefghijklmnop"}, token="bob")
    for token, path, method in (("carol", "/toggle", "PUT"), ("carol", "/pin", "POST"), ("carol", "/archive", "POST")):
        r = await api.request(method, f"{SKILLS}/{skill['id']}{path}", token=token)
        assert r.status == 403, (path, r.body)
    r = await api.delete(f"{SKILLS}/{skill['id']}", token="bob")
    assert r.status == 403
    assert cache_dir(server, "doomed").is_dir()
    r = await api.delete(f"{SKILLS}/{skill['id']}", token="alice")
    assert r.status == 200 and r.body["data"] is None
    assert not cache_dir(server, "doomed").exists()
    r = await api.get(f"/api/v1/agents/{agent_id}/skills", token="bob")
    assert r.data == []
    assert SkillSecret.select().count() == 0
    r = await api.get(f"{SKILLS}/{skill['id']}", token="bob")
    assert r.status == 404
    r = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "SKILL"})
    assert r.status == 200, r.body
    actions = {(e["action"], e["actorUsername"]) for e in r.data["records"] if e["resourceId"] == skill["id"]}
    assert {("CREATE", "bob"), ("DELETE", "alice")} <= actions


# ---- lifecycle states -----------------------------------------------------------------------


async def test_archiving_a_skill_bound_to_an_enabled_agent_needs_force(api: ApiClient, people: dict) -> None:
    skill = await create(api, name="bound")
    agent_id = await make_agent(api, name="Worker")
    idle_id = await make_agent(api, name="Idle", enabled=False)
    await bind(api, agent_id, skill["id"])
    await bind(api, idle_id, skill["id"])
    r = await api.post(f"{SKILLS}/{skill['id']}/archive", token="bob")
    assert r.status == 409
    assert r.body["code"] == 409 and "force=true" in r.body["message"]
    assert r.body["boundAgents"] == [{"id": agent_id, "name": "Worker"}]
    r = await api.get(f"{SKILLS}/{skill['id']}", token="bob")
    assert r.data["archived"] == 0

    r = await api.post(f"{SKILLS}/{skill['id']}/archive", {"force": True}, token="bob")
    assert r.status == 200 and r.data["archived"] == 1 and r.data["archivedAt"]
    r = await api.get(SKILLS, token="bob")
    assert skill["id"] not in {s["id"] for s in r.data["records"]}
    r = await api.get(SKILLS, token="bob", params={"archived": "true"})
    assert [s["id"] for s in r.data["records"]] == [skill["id"]]

    r = await api.post(f"{SKILLS}/{skill['id']}/restore", token="bob")
    assert r.status == 200 and r.data["archived"] == 0 and r.data["archivedAt"] is None
    r = await api.post(f"{SKILLS}/{skill['id']}/restore", token="bob")
    assert r.status == 409 and r.body["msg"] == "Skill is not archived"  # the skill's state: a conflict
    # a malformed body is refused even when the query already forces (the body is still read and checked)
    r = await api.post(f"{SKILLS}/{skill['id']}/archive", [None, None], token="bob", params={"force": "true"})
    assert r.status == 400, r.body
    r = await api.post(f"{SKILLS}/{skill['id']}/archive", token="bob", params={"force": "true"})
    assert r.status == 200 and r.data["archived"] == 1
    unbound = await create(api, name="free")
    r = await api.post(f"{SKILLS}/{unbound['id']}/archive", token="bob")
    assert r.status == 200 and r.data["archived"] == 1


async def test_openapi_documents_the_archive_confirmation(api: ApiClient) -> None:
    r = await api.get("/v3/api-docs")
    op = r.body["paths"]["/api/v1/skills/{id}/archive"]["post"]
    assert op["responses"]["409"]["content"]["application/json"]["schema"]["$ref"].endswith("/Confirmation")


async def test_pin_toggle_counts_summary_and_lists_by_type(api: ApiClient, people: dict) -> None:
    skill = await create(api, name="alpha")
    r = await api.post(f"{SKILLS}/{skill['id']}/pin", {"pinned": True}, token="bob")
    assert r.status == 200 and r.data["pinned"] == 1
    r = await api.get(SKILLS, token="bob")
    assert r.data["records"][0]["id"] == skill["id"]  # pinned first
    r = await api.post(f"{SKILLS}/{skill['id']}/pin", token="bob")
    assert r.data["pinned"] == 0
    r = await api.put(f"{SKILLS}/{skill['id']}/toggle", {"enabled": False}, token="bob")
    assert r.status == 200 and r.data["enabled"] is False
    r = await api.put(f"{SKILLS}/{skill['id']}/toggle", token="bob")
    assert r.data["enabled"] is True
    await api.put(f"{SKILLS}/{skill['id']}/toggle", {"enabled": False}, token="bob")

    r = await api.get(f"{SKILLS}/counts", token="carol")
    by_type = {"builtin": 3, "custom": 1, "installed": 0, "synthesized": 0, "template": 0}
    assert r.data == {"total": 4, "enabled": 3, "archived": 0, "pinned": 0, "byType": by_type, "all": 4, **by_type}
    r = await api.get(f"{SKILLS}/summary", token="carol")
    assert r.data["total"] == 3 and [g["skillType"] for g in r.data["groups"]] == ["builtin"]
    r = await api.get(f"{SKILLS}/enabled", token="carol")
    assert skill["id"] not in {s["id"] for s in r.data}
    r = await api.get(f"{SKILLS}/type/custom", token="carol")
    assert [s["name"] for s in r.data] == ["alpha"]
    r = await api.get(f"{SKILLS}/type/nonsense", token="carol")
    assert r.status == 400 and r.body["msg"].startswith("skillType: must be one of")
    r = await api.get(SKILLS, token="carol", params={"enabled": "false", "type": "custom", "keyword": "alp"})
    assert r.data["total"] == 1
    for params in ({"type": ""}, {"skillType": ""}, {"type": " custom"}):  # not of the document's enum: no "every type"
        r = await api.get(SKILLS, token="carol", params=params)
        assert r.status == 400 and r.body["msg"].startswith(f"{next(iter(params))}: must be one of"), (params, r.body)
    r = await api.get(SKILLS, token="carol", params={"keyword": "research"})
    assert [s["name"] for s in r.data["records"]] == ["web-research"]
    r = await api.get(SKILLS, token="carol", params={"size": "0"})
    assert r.status == 400


# ---- secrets and requirements ---------------------------------------------------------------


async def test_secrets_are_masked_encrypted_at_rest_and_never_returned(api: ApiClient, people: dict) -> None:
    skill = await create(api, name="api-caller")
    base = f"{SKILLS}/{skill['id']}/secrets"
    plaintext = "sk-live-1234567890abcd"
    pin = "pin-Qx7z"  # letters: it cannot turn up inside a random numeric id or a timestamp
    r = await api.post(base, {"key": "API_KEY", "value": plaintext}, token="bob")
    assert r.status == 200 and r.data["preview"] == "…abcd" and plaintext not in r.raw.decode()
    await api.post(base, {"key": "PIN", "value": pin}, token="bob")
    r = await api.get(base, token="bob")
    assert [(s["key"], s["preview"]) for s in r.data] == [("API_KEY", "…abcd"), ("PIN", "••••")]
    for path in (base, f"{SKILLS}/{skill['id']}", SKILLS, f"{SKILLS}/{skill['id']}/requirements"):
        r = await api.get(path, token="bob")
        assert plaintext not in r.raw.decode() and pin not in r.raw.decode() and "sk-live" not in r.raw.decode()
    stored = SkillSecret.get(SkillSecret.key == "API_KEY").value
    assert plaintext not in stored and "sk-" not in stored
    r = await api.get(base, token="carol")
    assert r.status == 403

    r = await api.post(base, {"key": "PIN", "value": ""}, token="bob")
    assert r.status == 200 and r.data["deleted"] is True
    r = await api.delete(f"{base}/API_KEY", token="bob")
    assert r.status == 200
    r = await api.delete(f"{base}/API_KEY", token="bob")
    assert r.status == 404 and r.body["msg"] == "Secret not found"
    r = await api.post(base, {"key": "bad key!", "value": "x"}, token="bob")
    assert r.status == 400 and r.body["msg"].startswith("key: ")
    r = await api.get(base, token="bob")
    assert r.data == []


async def test_requirements_report_env_vars_binaries_and_secrets(api: ApiClient, people: dict, monkeypatch: Any) -> None:
    content = ("---\nname: needs-things\ndescription: d\nrequires:\n  env: [SKILLTEST_PRESENT, SKILLTEST_ABSENT]\n"
               "  bins:\n    - sh\n    - no-such-binary-xyz\n  secrets: [TOKEN]\n---\nDo things.\n")
    monkeypatch.setenv("SKILLTEST_PRESENT", "1")
    monkeypatch.delenv("SKILLTEST_ABSENT", raising=False)
    skill = await create(api, content=content)
    assert skill["requires"] == {"env": ["SKILLTEST_PRESENT", "SKILLTEST_ABSENT"], "bins": ["sh", "no-such-binary-xyz"],
                                 "secrets": ["TOKEN"]}
    r = await api.get(f"{SKILLS}/{skill['id']}/requirements", token="carol")
    assert r.status == 200 and r.data["satisfied"] is False
    status = {(i["kind"], i["name"]): i["status"] for i in r.data["requirements"]}
    assert status == {("env", "SKILLTEST_PRESENT"): "ok", ("env", "SKILLTEST_ABSENT"): "missing", ("bin", "sh"): "ok",
                      ("bin", "no-such-binary-xyz"): "missing", ("secret", "TOKEN"): "missing"}
    await api.post(f"{SKILLS}/{skill['id']}/secrets", {"key": "TOKEN", "value": "t0ken-value-long"}, token="bob")
    await api.post(f"{SKILLS}/{skill['id']}/secrets", {"key": "SKILLTEST_ABSENT", "value": "v"}, token="bob")
    r = await api.get(f"{SKILLS}/{skill['id']}/requirements", token="carol")
    items = {(i["kind"], i["name"]): i for i in r.data["requirements"]}
    assert items[("secret", "TOKEN")]["status"] == "ok" and items[("env", "SKILLTEST_ABSENT")]["source"] == "secret"
    assert [k for k, i in items.items() if i["status"] == "missing"] == [("bin", "no-such-binary-xyz")]
    r = await api.get(f"{SKILLS}/runtime/status", token="carol")
    entry = next(s for s in r.data if s["id"] == skill["id"])
    assert entry["status"] == "requirements_missing" and entry["missing"] == [{"kind": "bin", "name": "no-such-binary-xyz"}]


# ---- the runtime hook -----------------------------------------------------------------------


async def test_prompt_preview_shows_the_bound_usable_skills_exactly_as_the_runtime_does(
    api: ApiClient, people: dict, server: RunningServer
) -> None:
    usable = await create(api, content=PDF_SKILL)
    disabled = await create(api, name="off-skill", description="never shown", enabled=False)
    missing = await create(api, content="---\nname: needs-bin\ndescription: never\nrequires:\n  bins: [no-such-bin-q]\n---\nX\n")
    archived = await create(api, name="old-skill", description="archived one")
    unbound = await create(api, name="unbound", description="not bound")
    agent_id = await make_agent(api)
    for s in (usable, disabled, missing, archived):
        await bind(api, agent_id, s["id"])
    await api.post(f"{SKILLS}/{archived['id']}/archive", {"force": True}, token="bob")

    r = await api.get(f"{SKILLS}/prompt-preview", token="carol", params={"agentId": agent_id})
    assert r.status == 200, r.body
    prompt = r.data["prompt"]
    assert r.data["skills"] == ["pdf-tools"] and r.data["length"] == len(prompt)
    assert prompt.startswith("## Skills\n\n") and "### pdf-tools" in prompt
    assert "Extract text and tables from PDF files." in prompt and "1. Convert the PDF with pdftotext." in prompt
    assert "name: pdf-tools" not in prompt  # the front matter is not repeated
    for other in (disabled, missing, archived, unbound):
        assert other["name"] not in prompt
    agent = Agent.get_by_id(int(agent_id))
    assert service.prompt_for_agent(server.config, agent) == prompt

    r = await api.get(f"{SKILLS}/runtime/active", token="carol")
    entry = next(a for a in r.data if a["agentId"] == agent_id)
    assert [s["name"] for s in entry["skills"]] == ["pdf-tools"]
    r = await api.get(f"{SKILLS}/{usable['id']}/employees", token="carol")
    assert [e["id"] for e in r.data] == [agent_id]

    service.mark_used(["pdf-tools"], workspace_id=1)
    r = await api.get(f"{SKILLS}/{usable['id']}", token="carol")
    assert r.data["useCount"] == 1 and r.data["lastUsedAt"]

    await api.put(f"/api/v1/agents/{agent_id}", {"skillsDisabled": True}, token="bob")
    r = await api.get(f"{SKILLS}/prompt-preview", token="carol", params={"agentId": agent_id})
    assert r.data["prompt"] == "" and r.data["skills"] == [] and r.data["skillsDisabled"] is True
    assert service.prompt_for_agent(server.config, Agent.get_by_id(int(agent_id))) == ""
    r = await api.get(f"{SKILLS}/{usable['id']}/employees", token="carol")
    assert r.data == []
    r = await api.get(f"{SKILLS}/prompt-preview", token="carol")
    assert r.status == 400 and r.body["msg"] == "agentId: must not be null"
    r = await api.get(f"{SKILLS}/prompt-preview", token="carol", params={"agentId": "999"})
    assert r.status == 404


async def test_long_instructions_are_capped_per_skill_and_in_total(api: ApiClient, people: dict, server: RunningServer) -> None:
    agent_id = await make_agent(api)
    for i in range(6):
        body = f"---\nname: big-{i}\ndescription: big {i}\n---\n" + ("word " * 3000)
        skill = await create(api, content=body)
        await bind(api, agent_id, skill["id"])
    prompt = service.prompt_for_agent(server.config, Agent.get_by_id(int(agent_id)))
    assert len(prompt) <= service.PROMPT_TOTAL_CAP + 200
    assert "[... instructions truncated ...]" in prompt and "(Omitted for length: " in prompt


# ---- the cache folder -----------------------------------------------------------------------


async def test_lessons_are_read_and_cleared_from_the_cache_folder(api: ApiClient, people: dict, server: RunningServer,
                                                                  llm: ScriptedOpenAI) -> None:
    from tests.helpers.fake_openai import ScriptedToolCall

    skill = await create(api, name="learner")
    r = await api.get(f"{SKILLS}/{skill['id']}/lessons", token="carol")
    assert r.data == {"skillId": skill["id"], "exists": False, "content": "", "size": 0}
    # The product writes the lesson: a turn whose tool call on the skill's files failed.
    await use_fake_openai(api, llm.url)
    agent_id = await make_agent(api)
    await bind(api, agent_id, skill["id"])
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("read_file", {"path": "skills/learner/TIMEZONES.md"})]),
                Script(text="I could not read it."))
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent_id, "conversationId": "l1",
                                                           "message": "which zone?"}, token="bob")
    assert events[-1].event == "done", events
    r = await api.post(f"{SKILLS}/{skill['id']}/sync-files", token="bob")  # a re-sync keeps the lessons
    assert r.status == 200
    r = await api.get(f"{SKILLS}/{skill['id']}/lessons", token="carol")
    assert r.data["exists"] is True and r.data["content"].startswith("- Using learner, `read_file` failed: ")
    r = await api.post(f"{SKILLS}/{skill['id']}/lessons/clear", token="carol")
    assert r.status == 403
    r = await api.post(f"{SKILLS}/{skill['id']}/lessons/clear", token="bob")
    assert r.data["cleared"] is True and not (cache_dir(server, "learner") / "LESSONS.md").exists()


async def test_sync_files_workspace_info_and_rescan(api: ApiClient, people: dict, server: RunningServer) -> None:
    skill = await create(api, content=PDF_SKILL, files={"a.txt": "A"})
    folder = cache_dir(server, "pdf-tools")
    r = await api.get(f"{SKILLS}/{skill['id']}/workspace", token="carol")
    assert r.data["path"] == "skills/1/pdf-tools" and r.data["inSync"] is True
    assert {f["path"]: f["size"] for f in r.data["files"]} == {"SKILL.md": len(skill["content"].encode()), "a.txt": 1}
    (folder / "a.txt").write_text("changed")
    (folder / "stray.txt").write_text("stray")
    r = await api.get(f"{SKILLS}/{skill['id']}/workspace", token="carol")
    assert r.data["inSync"] is False
    r = await api.post(f"{SKILLS}/{skill['id']}/sync-files", token="bob")
    assert r.status == 200
    assert (folder / "a.txt").read_text() == "A" and not (folder / "stray.txt").exists()

    r = await api.post(f"{SKILLS}/sync-files", token="bob")
    assert r.status == 403
    (folder / "a.txt").unlink()
    r = await api.post(f"{SKILLS}/sync-files", token="alice")
    assert r.status == 200 and r.data["synced"] == 4 and (folder / "a.txt").read_text() == "A"

    edited = PDF_SKILL.replace("Extract text and tables from PDF files.", "Edited on disk.").replace("version", "v")
    (folder / "SKILL.md").write_text(edited.replace("---\n\n", "version: 2.0.0\n---\n\n", 1))
    r = await api.post(f"{SKILLS}/{skill['id']}/rescan", token="bob")
    assert r.status == 200, r.body
    assert r.data["adoptedFromFolder"] is True
    assert r.data["skill"]["description"] == "Edited on disk." and r.data["skill"]["version"] == "2.0.0"
    r = await api.post(f"{SKILLS}/{skill['id']}/rescan", token="bob")
    assert r.data["adoptedFromFolder"] is False


async def test_a_skill_is_exported_into_an_agent_workspace(api: ApiClient, people: dict) -> None:
    skill = await create(api, content=PDF_SKILL, files={"scripts/x.sh": "echo"})
    agent_id = await make_agent(api)
    r = await api.post(f"{SKILLS}/{skill['id']}/export-workspace", {"agentId": agent_id}, token="bob")
    assert r.status == 200, r.body
    assert r.data["path"] == "skills/pdf-tools" and {f["path"] for f in r.data["files"]} == {"SKILL.md", "scripts/x.sh"}
    r = await api.get(f"/api/v1/agents/{agent_id}/workspace/files", token="bob")
    assert {"skills/pdf-tools/SKILL.md", "skills/pdf-tools/scripts/x.sh"} <= {f["path"] for f in r.data}
    await bind(api, agent_id, skill["id"])
    r = await api.get(f"{SKILLS}/prompt-preview", token="bob", params={"agentId": agent_id})
    assert "`skills/pdf-tools/`" in r.data["prompt"]
    r = await api.post(f"{SKILLS}/{skill['id']}/export-workspace", {"agentId": "1"}, token="bob")
    assert r.status == 404
    r = await api.post(f"{SKILLS}/{skill['id']}/export-workspace", {}, token="bob")
    assert r.status == 400 and r.body["msg"].startswith("agentId: ")


async def test_runtime_refresh_with_resync_restores_built_in_content(api: ApiClient, people: dict, server: RunningServer) -> None:
    r = await api.get(f"{SKILLS}/type/builtin", token="bob")
    builtin = next(s for s in r.data if s["name"] == "web-research")
    r = await api.put(f"{SKILLS}/{builtin['id']}", {"content": "---\nname: web-research\n---\nmine\n"}, token="bob")
    assert r.status == 200 and "mine" in r.data["content"]
    r = await api.put(f"{SKILLS}/{builtin['id']}", {"name": "renamed"}, token="bob")
    assert r.status == 409 and r.body["msg"] == "Built-in skills cannot be renamed"
    r = await api.post(f"{SKILLS}/runtime/refresh", token="bob")
    assert r.status == 200 and r.data["builtinsSynced"] == []
    r = await api.delete(f"{SKILLS}/{builtin['id']}", token="alice")
    r = await api.post(f"{SKILLS}/runtime/refresh", token="bob", params={"resync": "true"})
    assert r.status == 200 and r.data["builtinsSynced"] == ["web-research"]
    r = await api.get(f"{SKILLS}/type/builtin", token="bob")
    fresh = next(s for s in r.data if s["name"] == "web-research")
    assert "# Web research" in (cache_dir(server, "web-research") / "SKILL.md").read_text() and fresh["id"] != builtin["id"]


# ---- isolation, templates, synthesis --------------------------------------------------------


async def test_workspaces_are_isolated(api: ApiClient, people: dict, server: RunningServer) -> None:
    skill = await create(api, content=PDF_SKILL)
    other = people["dave"]["workspace"]
    for method, path in (("GET", f"{SKILLS}/{skill['id']}"), ("PUT", f"{SKILLS}/{skill['id']}/toggle"),
                         ("GET", f"{SKILLS}/{skill['id']}/secrets"), ("POST", f"{SKILLS}/{skill['id']}/archive"),
                         ("DELETE", f"{SKILLS}/{skill['id']}")):
        r = await api.request(method, path, token="dave", workspace=other)
        assert r.status == 404, (method, path, r.body)
    r = await api.get(SKILLS, token="dave", workspace=other)
    names = {s["name"] for s in r.data["records"]}
    assert "pdf-tools" not in names and "web-research" in names
    assert all(s["workspaceId"] == str(other) for s in r.data["records"])
    r = await api.get(SKILLS, token="dave")  # not a member of workspace 1
    assert r.status == 403
    theirs = await create(api, token="dave", workspace=other, content=PDF_SKILL)  # same name, other workspace
    assert theirs["id"] != skill["id"] and (cache_dir(server, "pdf-tools", int(other)) / "SKILL.md").exists()
    agent_id = await make_agent(api)
    r = await api.post(f"/api/v1/agents/{agent_id}/skills/{theirs['id']}", token="bob")
    assert r.status == 403, r.body  # another workspace's skill is never bound
    r = await api.get(f"{SKILLS}/prompt-preview", token="bob", params={"agentId": agent_id})
    assert r.data["prompt"] == ""


async def test_templates_are_listed_and_instantiated_into_template_skills(api: ApiClient, people: dict) -> None:
    r = await api.get("/api/v1/skill-templates", token="carol")
    assert r.status == 200 and [t["name"] for t in r.data] == ["code-review", "meeting-notes", "api-integration"]
    template_id = r.data[0]["id"]
    r = await api.get(f"/api/v1/skill-templates/{template_id}", token="carol")
    assert "# Code review" in r.data["content"]
    r = await api.post(f"/api/v1/skill-templates/{template_id}/instantiate", token="carol")
    assert r.status == 403
    r = await api.post(f"/api/v1/skill-templates/{template_id}/instantiate", token="bob")
    assert r.status == 200 and r.data["name"] == "code-review" and r.data["skillType"] == "template"
    assert r.data["source"] == f"template:{template_id}"
    r = await api.post(f"/api/v1/skill-templates/{template_id}/instantiate", token="bob")
    assert r.data["name"] == "code-review-2"
    r = await api.post(f"/api/v1/skill-templates/{template_id}/instantiate", {"name": "code-review"}, token="bob")
    assert r.status == 409
    r = await api.post(f"/api/v1/skill-templates/{template_id}/instantiate", {"name": "my-review"}, token="bob")
    assert r.data["name"] == "my-review" and "name: my-review" in r.data["content"]
    r = await api.post(f"/api/v1/skill-templates/{template_id}/instantiate", {"name": "H"}, token="bob")
    assert r.status == 400 and r.msg.startswith("name: must be a slug"), r.body  # the document's pattern says so too
    doc = (await api.get("/v3/api-docs")).body
    assert "pattern" in doc["components"]["schemas"]["InstantiateBody"]["properties"]["name"]
    r = await api.get("/api/v1/skill-templates/42", token="bob")
    assert r.status == 404


async def test_a_skill_is_synthesized_from_the_owners_conversation_and_starts_disabled(
    api: ApiClient, people: dict, llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(api, llm.url)
    agent_id = await make_agent(api, token="alice")
    llm.enqueue(Script(text="Use the ISO week number and list the tasks."))
    r = await api.post("/api/v1/chat", {"agentId": agent_id, "message": "Plan my weekly review", "conversationId": "weekly"},
                       token="bob")
    assert r.status == 200, r.body
    drafted = ("```markdown\n---\nname: weekly-review\ndescription: Run a weekly review of open tasks.\n---\n\n"
               "# Weekly review\n\n1. List open tasks.\n```")
    llm.enqueue(Script(text=drafted))
    r = await api.post(f"{SKILLS}/synthesize-from-conversation", {"conversationId": "weekly"}, token="bob")
    assert r.status == 200, r.body
    skill = r.data
    assert skill["name"] == "weekly-review" and skill["skillType"] == "synthesized" and skill["enabled"] is False
    assert skill["description"] == "Run a weekly review of open tasks." and skill["source"] == "conversation:weekly"
    assert "# Weekly review" in skill["content"] and "```" not in skill["content"]
    sent = llm.requests[-1]["messages"]
    assert "Plan my weekly review" in sent[-1]["content"] and "ISO week number" in sent[-1]["content"]

    llm.enqueue(Script(text="no front matter here, just steps"))
    r = await api.post(f"{SKILLS}/synthesize-from-conversation", {"conversationId": "weekly", "name": "steps"}, token="bob")
    assert r.status == 200 and r.data["name"] == "steps" and "just steps" in r.data["content"]
    r = await api.post(f"{SKILLS}/synthesize-from-conversation", {"conversationId": "weekly", "name": "steps"}, token="bob")
    assert r.status == 409
    r = await api.post(f"{SKILLS}/synthesize-from-conversation", {"conversationId": "weekly"}, token="alice")
    assert r.status == 403  # only the conversation's owner
    r = await api.post(f"{SKILLS}/synthesize-from-conversation", {"conversationId": "nope"}, token="bob")
    assert r.status == 404
    llm.enqueue(Script(error_status=500), Script(error_status=500), Script(error_status=500))
    r = await api.post(f"{SKILLS}/synthesize-from-conversation", {"conversationId": "weekly"}, token="bob")
    assert r.body["code"] == 2001


def test_the_front_matter_parser_reads_what_skill_files_use() -> None:
    from platform_server.features.skills import frontmatter as fm

    doc = fm.parse(
        "\ufeff---\n"
        "name: 'My Skill'  \n"
        "# a comment\n"
        'description: "Says \\"hi\\" # not a comment"\n'
        "summary: >\n  folded\n  text\n"
        "notes: |\n  line one\n    indented\n"
        "tags: [a, 'b, c']\n"
        "requires:\n  env:\n    - HOME_DIR\n    - bad name\n  binaries: [git]\n  other: [x]\n"
        "---\n\n# Body\n"
    )
    assert doc.meta["name"] == "My Skill" and doc.meta["description"] == 'Says "hi" # not a comment'
    assert doc.meta["summary"] == "folded text" and doc.meta["notes"] == "line one\n  indented"
    assert doc.meta["tags"] == ["a", "b, c"] and doc.body == "# Body"
    assert fm.requirements(doc.meta) == {"env": ["HOME_DIR"], "bins": ["git"], "secrets": []}
    assert fm.requirements({"requires": ["env:A", "secret:B", "curl"]}) == {"env": ["A"], "bins": ["curl"], "secrets": ["B"]}
    assert fm.parse("plain text").meta == {} and fm.slugify("  Hello, World! ") == "hello-world"
    again = fm.parse(fm.compose({"name": "x", "description": "a: b", "requires": {"env": ["A"]}}, "Body"))
    assert again.meta == {"name": "x", "description": "a: b", "requires": {"env": ["A"]}} and again.body == "Body"
