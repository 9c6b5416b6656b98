"""The skills curator: managed skills, dry runs and reports, scheduled scans, consolidation, restore points."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from platform_server.db import utcnow
from platform_server.features.skills.models import Skill
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer

SKILLS = "/api/v1/skills"
CURATOR = "/api/v1/skills/curator"

CSV_A = """---
name: csv-clean-a
description: Clean CSV files by trimming whitespace, fixing headers and dropping empty rows.
---

# CSV cleaner

1. Trim whitespace in every cell.
2. Normalize the header names to snake case.
3. Drop empty rows and report how many were removed.
"""
CSV_B = CSV_A.replace("csv-clean-a", "csv-clean-b").replace("report how many", "say how many")


async def create(api: ApiClient, token: str = "bob", workspace: Any = None, **body: Any) -> dict[str, Any]:
    r = await api.post(SKILLS, body, token=token, workspace=workspace)
    assert r.status == 200, r.body
    return r.data


async def adopt(api: ApiClient, *ids: str, token: str = "alice", workspace: Any = None) -> dict[str, Any]:
    r = await api.post(f"{CURATOR}/adopt", list(ids), token=token, workspace=workspace)
    assert r.status == 200, r.body
    return r.data


async def make_agent(api: ApiClient, name: str, **fields: Any) -> str:
    r = await api.post("/api/v1/agents", {"name": name, "systemPrompt": "You help.", **fields}, token="bob")
    assert r.status == 200, r.body
    return r.data["id"]


async def bind(api: ApiClient, agent_id: str, skill_id: str) -> None:
    r = await api.post(f"/api/v1/agents/{agent_id}/skills/{skill_id}", token="bob")
    assert r.status == 200, r.body


def age(skill_id: str, days: int) -> None:
    """Test setup: the skill was created (and never used) `days` ago."""
    Skill.update(create_time=utcnow() - dt.timedelta(days=days)).where(Skill.id == int(skill_id)).execute()


def curator_loop(server: RunningServer, hours: float) -> Any:
    loop = server.platform.services.skills_curator
    loop.clock = lambda: utcnow() + dt.timedelta(hours=hours)
    return loop


async def skill(api: ApiClient, skill_id: str) -> dict[str, Any]:
    r = await api.get(f"{SKILLS}/{skill_id}", token="carol")
    assert r.status == 200, r.body
    return r.data


async def library(api: ApiClient) -> dict[str, dict[str, Any]]:
    """name -> {id, archived, ...} of every skill in workspace 1."""
    out = {}
    for archived in ("false", "true"):
        r = await api.get(SKILLS, token="carol", params={"archived": archived, "size": 100})
        out.update({s["name"]: s for s in r.data["records"]})
    return out


async def audit_details(api: ApiClient, resource_type: str) -> list[str]:
    r = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": resource_type, "size": 100})
    assert r.status == 200, r.body
    return [e["detail"] for e in r.data["records"]]


async def seed_library(api: ApiClient) -> dict[str, str]:
    """Managed skills covering every curator rule; returns name -> id."""
    ids = {}
    for name, body in {
        "old-report": {"name": "old-report", "description": "Write the quarterly board report."},
        "pinned-old": {"name": "pinned-old", "description": "Format legal disclaimers."},
        "fresh": {"name": "fresh", "description": "Draft release notes from merged pull requests."},
        "needs-key": {"content": "---\nname: needs-key\ndescription: Query the billing API.\nrequires:\n"
                                 "  env: [CURATOR_TEST_ABSENT_KEY]\n---\nCall the billing API.\n"},
        "bound-old": {"name": "bound-old", "description": "Translate support tickets."},
        "csv-clean-a": {"content": CSV_A},
        "csv-clean-b": {"content": CSV_B},
    }.items():
        ids[name] = (await create(api, **body))["id"]
    for name in ("old-report", "pinned-old", "bound-old"):
        age(ids[name], 60)
    r = await api.post(f"{SKILLS}/{ids['pinned-old']}/pin", {"pinned": True}, token="bob")
    assert r.status == 200, r.body
    await bind(api, await make_agent(api, "Support"), ids["bound-old"])
    await adopt(api, *ids.values())
    return ids


# ---- control and roles ----------------------------------------------------------------------


async def test_status_starts_inactive_and_only_workspace_admins_control_the_curator(api: ApiClient, people: dict) -> None:
    r = await api.get(f"{CURATOR}/status", token="carol")
    assert r.status == 200, r.body
    assert r.data["active"] is False and r.data["paused"] is False and r.data["consolidate"] is False
    assert r.data["mode"] == "preview" and r.data["lastRunAt"] is None and r.data["nextRunAt"] is None
    assert r.data["unusedDays"] == 30 and r.data["intervalHours"] == 24
    for path, body in (("activate", {"active": True}), ("pause", None), ("resume", None),
                       ("consolidate", {"enabled": True}), ("dry-run", None), ("adopt", ["1"]), ("release", ["1"]),
                       ("snapshots", None)):
        for who in ("bob", "carol"):
            r = await api.post(f"{CURATOR}/{path}", body, token=who)
            assert r.status == 403, (path, who, r.body)
    r = await api.post(f"{CURATOR}/activate", {"active": True}, token="alice")
    assert r.status == 200 and r.data["active"] is True and r.data["mode"] == "archive"
    assert r.data["nextRunAt"] is not None
    r = await api.post(f"{CURATOR}/pause", token="alice")
    assert r.data["paused"] is True and r.data["nextRunAt"] is None
    r = await api.post(f"{CURATOR}/resume", token="alice")
    assert r.data["paused"] is False and r.data["nextRunAt"] is not None
    r = await api.post(f"{CURATOR}/consolidate", {"enabled": True}, token="alice")
    assert r.data["consolidate"] is True

    r = await api.post(f"{CURATOR}/activate", {}, token="alice")
    assert r.status == 400 and r.body["msg"].startswith("active:")
    r = await api.post(f"{CURATOR}/activate", {"active": "sometimes"}, token="alice")
    assert r.status == 400 and r.body["msg"].startswith("active:")
    r = await api.post(f"{CURATOR}/consolidate", [True], token="alice")
    assert r.status == 400
    # neither a body nor the query parameter (both optional in the document): the route's name, true
    for path, body, field in (("consolidate", {"enabled": False}, "consolidate"), ("activate", {"active": False}, "active")):
        assert (await api.post(f"{CURATOR}/{path}", body, token="alice")).data[field] is False
        r = await api.post(f"{CURATOR}/{path}", token="alice")
        assert r.status == 200 and r.data[field] is True, r.body
    r = await api.get(f"{CURATOR}/status", token="dave", workspace=people["dave"]["workspace"])
    assert r.status == 200 and r.data["active"] is False  # per workspace
    details = await audit_details(api, "SKILL_CURATOR")
    assert any("activated" in d for d in details) and any("paused" in d for d in details)


async def test_skills_are_adopted_and_released_in_bulk_all_or_nothing(api: ApiClient, people: dict) -> None:
    a, b, c = [(await create(api, name=n, description=f"skill {n}"))["id"] for n in ("one", "two", "three")]
    r = await api.post(f"{CURATOR}/adopt", [a, b], token="alice")
    assert r.status == 200 and r.data["adopted"] == [a, b] and r.data["alreadyManaged"] == []
    r = await api.get(f"{CURATOR}/managed", token="carol")
    assert [s["name"] for s in r.data] == ["one", "two"] and all(s["managed"] and s["adoptedAt"] for s in r.data)
    # a boolean query parameter's empty value is no boolean (it read as absent)
    assert (await api.get(f"{CURATOR}/unmanaged", token="carol", params={"includeArchived": ""})).status == 400
    r = await api.get(f"{CURATOR}/unmanaged", token="carol")
    names = {s["name"] for s in r.data}
    assert "three" in names and "git-workflow" in names and not names & {"one", "two"}
    r = await api.post(f"{CURATOR}/adopt", [b, c], token="alice")
    assert r.data["adopted"] == [c] and r.data["alreadyManaged"] == [b] and r.data["managedCount"] == 3

    for body, status, msg in (({"ids": [a]}, 400, "Request body must be a JSON array of skill ids"),
                              ([], 400, "body: at least one skill id is required"),
                              (["abc"], 400, "body[0]: must be a skill id (a string of 1-18 digits)"),
                              ([a, True], 400, "body[1]: must be a skill id (a string of 1-18 digits)"),
                              # the document's pattern (^[0-9]{1,18}$), no looser: not a number, nor spaces around
                              ([a, int(a)], 400, "body[1]: must be a skill id (a string of 1-18 digits)"),
                              ([f" {a}"], 400, "body[0]: must be a skill id (a string of 1-18 digits)"),
                              # and no stricter: a well-formed id naming no skill (0 included) is a 404
                              ([a, "0"], 404, "Skill not found: 0"),
                              ([a, "12345"], 404, "Skill not found: 12345")):
        r = await api.post(f"{CURATOR}/release", body, token="alice")
        assert (r.status, r.body["msg"]) == (status, msg), body
    # an array body cannot be left out (an empty body reads as {}): the document marks it required
    op = (await api.get("/v3/api-docs")).body["paths"][f"{CURATOR}/adopt"]["post"]
    assert op["requestBody"]["required"] is True
    r = await api.get(f"{CURATOR}/managed", token="carol")
    assert len(r.data) == 3  # nothing released by the refused calls
    r = await api.post(f"{CURATOR}/release", [a, a], token="alice")
    assert r.data["released"] == [a]  # duplicates in the body count once
    r = await api.post(f"{CURATOR}/release", [a, b], token="alice")
    assert r.data["released"] == [b] and r.data["notManaged"] == [a]
    other = people["dave"]["workspace"]
    r = await api.post(f"{CURATOR}/adopt", [c], token="dave", workspace=other)
    assert r.status == 404  # another workspace's skill
    r = await api.get(f"{CURATOR}/managed", token="dave", workspace=other)
    assert r.data == []
    details = await audit_details(api, "SKILL")
    assert any(d == "skill one: handed over to the curator" for d in details)
    assert any(d == "skill two: returned to user ownership" for d in details)
    r = await api.delete(f"{SKILLS}/{c}", token="alice")
    assert r.status == 200
    r = await api.get(f"{CURATOR}/managed", token="carol")
    assert r.data == []  # a deleted skill leaves curation with it


# ---- dry runs and reports -------------------------------------------------------------------


async def test_a_dry_run_reports_proposed_actions_with_reasons_and_changes_nothing(api: ApiClient, people: dict) -> None:
    ids = await seed_library(api)
    r = await api.post(f"{CURATOR}/dry-run", token="alice")
    assert r.status == 200, r.body
    report = r.data
    assert report["trigger"] == "dry-run" and report["dryRun"] is True and report["snapshotId"] is None
    by_name = {a["skillName"]: a for a in report["actions"]}
    assert set(by_name) == set(ids)
    old = by_name["old-report"]
    assert old["action"] == "archive" and old["outcome"] == "proposed" and old["flags"] == ["unused"]
    assert "never used in the 60 days" in old["reasons"][0]
    pinned = by_name["pinned-old"]
    assert pinned["action"] == "keep" and "unused" in pinned["flags"]
    assert any("pinned" in reason for reason in pinned["reasons"])
    assert by_name["fresh"]["action"] == "keep" and by_name["fresh"]["flags"] == []
    broken = by_name["needs-key"]
    assert broken["action"] == "keep" and broken["flags"] == ["broken_requirements"]
    assert "env CURATOR_TEST_ABSENT_KEY" in broken["reasons"][0]
    bound = by_name["bound-old"]
    assert bound["action"] == "archive" and bound["outcome"] == "skipped"
    assert bound["boundAgents"][0]["name"] == "Support" and "force=true" in bound["note"]
    dup = by_name["csv-clean-b"]
    assert dup["action"] == "archive" and dup["flags"] == ["duplicate"] and dup["outcome"] == "proposed"
    assert dup["duplicateOf"] == {"id": ids["csv-clean-a"], "name": "csv-clean-a"} and dup["similarity"] >= 0.8
    keeper = by_name["csv-clean-a"]
    assert keeper["action"] == "keep" and keeper["duplicates"] == [{"id": ids["csv-clean-b"], "name": "csv-clean-b"}]
    assert report["summary"]["archive"] == 3 and report["summary"]["proposed"] == 2 and report["summary"]["skipped"] == 1
    assert report["summary"]["applied"] == 0

    current = await library(api)
    assert all(current[name]["archived"] == 0 for name in ids)  # a preview changes nothing

    r = await api.get(f"{CURATOR}/reports", token="carol")
    assert [x["id"] for x in r.data] == [report["id"]] and "actions" not in r.data[0]
    r = await api.get(f"{CURATOR}/reports/{report['id']}", token="carol")
    assert r.status == 200 and r.data["actions"] == report["actions"]
    r = await api.get(f"{CURATOR}/status", token="carol")
    assert r.data["lastRunId"] == report["id"] and r.data["lastSummary"]["scanned"] == 7
    assert r.data["counts"]["managed"] == 7 and r.data["counts"]["reports"] == 1
    r = await api.get(f"{CURATOR}/reports/{report['id']}", token="dave", workspace=people["dave"]["workspace"])
    assert r.status == 404
    r = await api.get(f"{CURATOR}/reports/123", token="carol")
    assert r.status == 404 and r.body["msg"] == "Curator report not found"
    r = await api.get(f"{CURATOR}/reports/abc", token="carol")
    assert r.status == 400 and r.body["msg"] == "Invalid value for parameter 'runId': expected Long"
    r = await api.get(f"{CURATOR}/reports", token="carol", params={"limit": "0"})
    assert r.status == 400


# ---- scheduled scans ------------------------------------------------------------------------


async def test_scheduled_scans_preview_until_activated_then_archive_but_never_pinned_or_bound_skills(
    api: ApiClient, people: dict, server: RunningServer
) -> None:
    await seed_library(api)
    assert await curator_loop(server, 1).tick() == []  # not due yet
    written = await curator_loop(server, 25).tick()
    assert len(written) == 1
    r = await api.get(f"{CURATOR}/reports/{written[0]}", token="carol")
    assert r.data["trigger"] == "scheduled" and r.data["dryRun"] is True and r.data["summary"]["proposed"] == 2
    assert all(s["archived"] == 0 for s in (await library(api)).values())
    assert await curator_loop(server, 26).tick() == []  # the next one counts from this scan

    r = await api.post(f"{CURATOR}/activate", {"active": True}, token="alice")
    assert r.status == 200
    written = await curator_loop(server, 50).tick()
    assert len(written) == 1
    r = await api.get(f"{CURATOR}/reports/{written[0]}", token="carol")
    report = r.data
    assert report["applied"] is True and report["snapshotId"] is not None
    outcomes = {a["skillName"]: a["outcome"] for a in report["actions"]}
    assert outcomes["old-report"] == "applied" and outcomes["csv-clean-b"] == "applied"
    assert outcomes["bound-old"] == "skipped" and outcomes["pinned-old"] == "kept" and outcomes["fresh"] == "kept"
    current = await library(api)
    assert current["old-report"]["archived"] == 1 and current["csv-clean-b"]["archived"] == 1
    for name in ("pinned-old", "bound-old", "fresh", "needs-key", "csv-clean-a"):
        assert current[name]["archived"] == 0, name
    details = await audit_details(api, "SKILL")
    assert any(d.startswith("skill old-report: archived by the curator") for d in details)
    r = await api.get(f"{CURATOR}/snapshots", token="carol")
    assert r.data[0]["id"] == report["snapshotId"] and r.data[0]["trigger"] == "curator"

    r = await api.post(f"{CURATOR}/snapshots/{report['snapshotId']}/restore", token="alice")
    assert r.status == 200, r.body
    assert sorted(r.data["updated"]) == ["csv-clean-b", "old-report"] and r.data["archived"] == []
    current = await library(api)
    assert current["old-report"]["archived"] == 0 and current["csv-clean-b"]["archived"] == 0

    r = await api.post(f"{CURATOR}/pause", token="alice")
    assert r.status == 200
    assert await curator_loop(server, 24 * 30).tick() == []
    r = await api.post(f"{CURATOR}/resume", token="alice")
    assert len(await curator_loop(server, 24 * 30).tick()) == 1


@pytest.mark.config(skills_curator_unused_days=400)
async def test_consolidation_merges_duplicates_through_the_model(
    api: ApiClient, people: dict, server: RunningServer, llm: ScriptedOpenAI
) -> None:
    await use_fake_openai(api, llm.url)
    a = (await create(api, content=CSV_A))["id"]
    b = (await create(api, content=CSV_B))["id"]
    await adopt(api, a, b)
    for body in ({"enabled": True}, {"active": True}):
        path = "consolidate" if "enabled" in body else "activate"
        assert (await api.post(f"{CURATOR}/{path}", body, token="alice")).status == 200
    r = await api.post(f"{CURATOR}/dry-run", token="alice")
    merge = next(x for x in r.data["actions"] if x["skillId"] == b)
    assert merge["action"] == "merge" and merge["mergeInto"]["id"] == a and merge["outcome"] == "proposed"
    assert llm.requests == []  # a preview never calls the model

    llm.enqueue(Script(error_status=500))
    written = await curator_loop(server, 25).tick()
    r = await api.get(f"{CURATOR}/reports/{written[0]}", token="carol")
    failed = next(x for x in r.data["actions"] if x["skillId"] == b)
    assert failed["outcome"] == "failed" and failed["note"].startswith("consolidation failed")
    assert (await skill(api, b))["archived"] == 0

    merged = ("```markdown\n---\nname: whatever\ndescription: Clean CSV files and report removed rows.\n---\n\n"
              "# CSV cleaner\n\n1. Trim cells.\n2. Snake-case headers.\n3. Drop empty rows, say and report how many.\n```")
    llm.enqueue(Script(text=merged))
    written = await curator_loop(server, 50).tick()
    r = await api.get(f"{CURATOR}/reports/{written[0]}", token="carol")
    assert next(x for x in r.data["actions"] if x["skillId"] == b)["outcome"] == "applied"
    sent = llm.requests[-1]["messages"]
    assert "merge near-duplicate skills" in sent[0]["content"] and "csv-clean-b" in sent[-1]["content"]
    keeper = await skill(api, a)
    assert keeper["name"] == "csv-clean-a" and keeper["description"] == "Clean CSV files and report removed rows."
    assert "say and report how many" in keeper["content"] and "name: csv-clean-a" in keeper["content"]
    assert (await skill(api, b))["archived"] == 1
    on_disk = Path(server.config.data_dir).resolve() / "skills" / "1" / "csv-clean-a" / "SKILL.md"
    assert on_disk.read_text() == keeper["content"]


# ---- restore points -------------------------------------------------------------------------


async def test_a_restore_point_brings_the_library_back_in_one_go(api: ApiClient, people: dict, server: RunningServer) -> None:
    kept = await create(api, content=CSV_A, files={"notes.txt": "v1"})
    doomed = await create(api, name="doomed", description="Will be deleted.")
    agent_id = await make_agent(api, "Keeper")
    await bind(api, agent_id, doomed["id"])
    await adopt(api, doomed["id"])
    r = await api.post(f"{CURATOR}/snapshots", {"reason": "before cleanup"}, token="alice")
    assert r.status == 200, r.body
    snap = r.data
    assert snap["reason"] == "before cleanup" and snap["trigger"] == "manual" and snap["skillCount"] >= 2
    assert snap["filesOmitted"] == [] and "content" not in snap and "data" not in snap

    r = await api.put(f"{SKILLS}/{kept['id']}", {"description": "Changed.", "files": {"notes.txt": "v2"}}, token="bob")
    assert r.status == 200
    r = await api.delete(f"{SKILLS}/{doomed['id']}", token="alice")
    assert r.status == 200
    later = await create(api, name="doomed-later", description="Created after the restore point.")

    r = await api.post(f"{CURATOR}/snapshots/{snap['id']}/restore", token="bob")
    assert r.status == 403
    r = await api.post(f"{CURATOR}/snapshots/{snap['id']}/restore", token="alice")
    assert r.status == 200, r.body
    result = r.data
    assert result["updated"] == ["csv-clean-a"] and result["recreated"] == ["doomed"]
    assert result["archived"] == ["doomed-later"] and result["preRestoreSnapshotId"]
    restored = await skill(api, kept["id"])
    assert restored["description"] == CSV_A.split("description: ")[1].split("\n")[0]
    assert restored["files"] == [{"path": "notes.txt", "size": 2}]
    back = await skill(api, doomed["id"])
    assert back["name"] == "doomed" and back["archived"] == 0
    r = await api.get(f"/api/v1/agents/{agent_id}/skills", token="bob")
    assert doomed["id"] in [row["skillId"] for row in r.data]  # its agent binding came back with it
    r = await api.get(f"{CURATOR}/managed", token="carol")
    assert [s["id"] for s in r.data] == [doomed["id"]]
    assert (await skill(api, later["id"]))["archived"] == 1
    folder = Path(server.config.data_dir).resolve() / "skills" / "1"
    assert (folder / "csv-clean-a" / "notes.txt").read_text() == "v1" and (folder / "doomed" / "SKILL.md").is_file()

    # the pre-restore point undoes the restore
    r = await api.post(f"{CURATOR}/snapshots/{result['preRestoreSnapshotId']}/restore", token="alice")
    assert r.status == 200, r.body
    assert (await skill(api, later["id"]))["archived"] == 0
    assert (await skill(api, kept["id"]))["description"] == "Changed."
    r = await api.get(f"{CURATOR}/snapshots", token="carol")
    assert {s["trigger"] for s in r.data} == {"manual", "restore"}
    details = await audit_details(api, "SKILL_SNAPSHOT")
    assert any(d.startswith("skill library restored") for d in details)

    r = await api.post(f"{CURATOR}/snapshots/999/restore", token="alice")
    assert r.status == 404 and r.body["msg"] == "Snapshot not found"
    other = people["dave"]["workspace"]
    r = await api.post(f"{CURATOR}/snapshots/{snap['id']}/restore", token="dave", workspace=other)
    assert r.status == 404
    r = await api.get(f"{CURATOR}/snapshots", token="dave", workspace=other)
    assert r.data == []
    r = await api.post(f"{CURATOR}/snapshots", {"reason": "x" * 501}, token="alice")
    assert r.status == 400 and r.body["msg"].startswith("reason:")
    r = await api.post(f"{CURATOR}/snapshots", token="alice")
    assert r.status == 200 and r.data["reason"] == ""


@pytest.mark.config(skills_curator_keep_snapshots=2)
async def test_old_restore_points_are_pruned(api: ApiClient, people: dict) -> None:
    for reason in ("one", "two", "three"):
        r = await api.post(f"{CURATOR}/snapshots", {"reason": reason}, token="alice")
        assert r.status == 200
    r = await api.get(f"{CURATOR}/snapshots", token="carol")
    assert [s["reason"] for s in r.data] == ["three", "two"]


async def test_duplicates_of_a_skill_that_is_itself_archived_are_archived_not_merged(api: ApiClient, people: dict) -> None:
    a = (await create(api, content=CSV_A))["id"]
    b = (await create(api, content=CSV_B))["id"]
    for skill_id in (a, b):
        age(skill_id, 90)
    await adopt(api, a, b)
    assert (await api.post(f"{CURATOR}/consolidate", {"enabled": True}, token="alice")).status == 200
    r = await api.post(f"{CURATOR}/dry-run", token="alice")
    actions = {x["skillId"]: x for x in r.data["actions"]}
    assert actions[a]["action"] == "archive" and actions[a]["flags"] == ["unused"]
    assert actions[b]["action"] == "archive" and actions[b]["flags"] == ["unused", "duplicate"] and "mergeInto" not in actions[b]
    assert r.data["consolidate"] is True


async def test_the_curator_lists_refuse_a_limit_that_is_not_an_integer_an_empty_one_included(api: ApiClient, people: dict) -> None:
    """`limit` is documented as an integer from 1 to 100: an empty value is not one (it was read as absent)."""
    assert (await api.get(f"{CURATOR}/snapshots", token="carol", params={"limit": 5})).status == 200
    for limit in ("", "x", "0", "101"):
        for listing in ("snapshots", "reports"):
            r = await api.get(f"{CURATOR}/{listing}", token="carol", params={"limit": limit})
            assert r.status == 400 and r.msg.startswith(("limit", "Invalid value for parameter 'limit'")), (listing, limit, r.body)
