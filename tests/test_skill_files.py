"""One bundle file of a skill read and written on its own (the console's file viewer/editor)."""
from __future__ import annotations

from typing import Any

from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer
from tests.test_skills import PDF_SKILL, SKILLS, cache_dir, create


async def test_a_bundle_file_is_read_as_text_and_one_file_is_replaced_without_touching_the_others(
    api: ApiClient, people: dict, server: RunningServer
) -> None:
    skill = await create(api, content=PDF_SKILL, files={"scripts/run.sh": "echo one\n", "notes.txt": "keep me"})
    r = await api.get(f"{SKILLS}/{skill['id']}/files/scripts/run.sh", token="carol")
    assert r.status == 200, r.body
    assert r.data == {"skillId": skill["id"], "path": "scripts/run.sh", "size": 9, "content": "echo one\n"}

    r = await api.put(f"{SKILLS}/{skill['id']}/files/scripts/run.sh", {"content": "echo two\n"}, token="bob")
    assert r.status == 200, r.body
    assert r.data["content"] == "echo two\n"
    r = await api.put(f"{SKILLS}/{skill['id']}/files/docs/new.md", {"content": "# New"}, token="bob")
    assert r.status == 200, r.body
    full = (await api.get(f"{SKILLS}/{skill['id']}", token="bob")).data
    assert [f["path"] for f in full["files"]] == ["docs/new.md", "notes.txt", "scripts/run.sh"]
    assert (cache_dir(server, "pdf-tools") / "scripts" / "run.sh").read_text() == "echo two\n"
    assert (await api.get(f"{SKILLS}/{skill['id']}/files/notes.txt", token="bob")).data["content"] == "keep me"


async def test_skill_file_routes_refuse_bad_paths_viewers_and_other_workspaces(api: ApiClient, people: dict[str, Any]) -> None:
    skill = await create(api, content=PDF_SKILL, files={"a.txt": "a"})
    base = f"{SKILLS}/{skill['id']}/files"
    assert (await api.get(f"{base}/missing.txt", token="bob")).status == 404
    assert (await api.get(f"{base}/SKILL.md", token="bob")).status == 400
    assert (await api.put(f"{base}/../../etc/passwd", {"content": "x"}, token="bob")).status in (400, 404)
    assert (await api.put(f"{base}/a.txt", {"content": 5}, token="bob")).status == 400
    r = await api.put(f"{base}/a.txt", {"content": "changed"}, token="carol")
    assert r.status == 403, r.body
    assert (await api.get(f"{base}/a.txt", token="dave")).status in (403, 404)
    assert (await api.get(f"{base}/a.txt", token="bob")).data["content"] == "a"


async def test_a_bundle_file_path_is_documented_and_checked_as_one_pattern(api: ApiClient, people: dict[str, Any]) -> None:
    """`{path}` carries the pattern the server checks: the route path rule (files.ROUTE_PATH_PATTERN) and neither
    SKILL.md nor LESSONS.md. A control character, or SKILL.md itself, was a 400 for a path the document allowed."""
    import re
    from urllib.parse import quote

    document = (await api.get("/v3/api-docs")).body
    for method in ("get", "put"):
        params = document["paths"][f"{SKILLS}/{{id}}/files/{{path}}"][method]["parameters"]
        schema = next(p["schema"] for p in params if p["name"] == "path")
        assert schema["maxLength"] == 256 and schema["minLength"] == 1
    rule = re.compile(schema["pattern"])
    skill = await create(api, content=PDF_SKILL, files={"a.txt": "a"})
    base = f"{SKILLS}/{skill['id']}/files"
    for rel in ("SKILL.md", "LESSONS.md", "a\x0bb.txt", "x" * 64, "a//b.txt"):
        assert not rule.fullmatch(rel), rel
        for method, body in (("GET", None), ("PUT", {"content": "x"})):
            r = await api.request(method, f"{base}/{quote(rel, safe='/')}", body, token="bob")
            assert r.status == 400 and r.body["msg"].startswith("path: "), (method, rel, r.body)
    for rel in ("skill.md", "docs/SKILL.md", "é" * 63):
        assert rule.fullmatch(rel), rel
        r = await api.put(f"{base}/{quote(rel, safe='/')}", {"content": "kept"}, token="bob")
        assert r.status == 200, (rel, r.body)
        assert (await api.get(f"{base}/{quote(rel, safe='/')}", token="bob")).data["content"] == "kept"


async def test_a_secret_key_carries_its_pattern(api: ApiClient, people: dict[str, Any]) -> None:
    """The key's rule is in the document (a key the document allowed was a 400), and refused as stated."""
    import re

    schema = (await api.get("/v3/api-docs")).body["components"]["schemas"]["SecretBody"]["properties"]["key"]
    rule = re.compile(schema["pattern"])
    skill = await create(api, content=PDF_SKILL)
    for key in ("TOKEN\n", "1abc", "a b", "", "k" * 129):
        assert not rule.fullmatch(key), key
        r = await api.post(f"{SKILLS}/{skill['id']}/secrets", {"key": key, "value": "v"}, token="bob")
        assert r.status == 400 and r.body["msg"].startswith("key: "), (key, r.body)
    for key in ("_x", "API.key-2", "k" * 128):
        assert rule.fullmatch(key)
        assert (await api.post(f"{SKILLS}/{skill['id']}/secrets", {"key": key, "value": "v"}, token="bob")).status == 200


async def test_a_bundle_never_holds_a_file_where_a_folder_is(api: ApiClient, people: dict[str, Any]) -> None:
    """`d` beside `d/x.txt` cannot both be on disk: a single-file write that would need it is a 409 with nothing saved
    (it was saved, then every cache sync of the workspace failed with `path: is a directory`), a whole bundle a 422."""
    skill = await create(api, content=PDF_SKILL, files={"d/x.txt": "x"})
    base = f"{SKILLS}/{skill['id']}/files"
    for rel in ("d", "d/x.txt/y"):
        r = await api.put(f"{base}/{rel}", {"content": "clash"}, token="bob")
        assert r.status == 409 and "both a file and a folder" in r.body["msg"], (rel, r.body)
    r = await api.get(f"{SKILLS}/{skill['id']}", token="bob")
    assert [f["path"] for f in r.data["files"]] == ["d/x.txt"]
    assert (await api.post(f"{SKILLS}/sync-files", token="alice")).status == 200
    r = await api.post(SKILLS, {"name": "clash", "content": PDF_SKILL, "files": {"a": "1", "a/b": "2"}}, token="bob")
    assert r.status == 422 and r.body["msg"] == "files: 'a' is both a file and a folder", r.body  # keys' rule: 3.0 cannot state it


async def test_a_binary_bundle_file_is_no_text_and_a_new_name_is_a_slug(api: ApiClient, people: dict[str, Any]) -> None:
    """Reading a binary bundle file as text: what the file holds refuses it (409; it was a 400 for a valid path). A
    rename carries the slug pattern the server checks (a name the document allowed was a 400); empty keeps the name."""
    from platform_server.features.skills.models import SkillFile

    skill = await create(api, content=PDF_SKILL, files={"bin.dat": "x"})
    SkillFile.update(data=b"\xff\xfe\x00binary").where(SkillFile.skill == int(skill["id"])).execute()
    r = await api.get(f"{SKILLS}/{skill['id']}/files/bin.dat", token="bob")
    assert r.status == 409 and r.body["msg"] == "'bin.dat' is not a text file", r.body
    import re

    pattern = (await api.get("/v3/api-docs")).body["components"]["schemas"]["SkillUpdate"]["properties"]["name"]["pattern"]
    for bad in ("Cg x", "UPPER", " pdf", "-x"):
        assert not re.fullmatch(pattern, bad)
        r = await api.put(f"{SKILLS}/{skill['id']}", {"name": bad}, token="bob")
        assert r.status == 400 and r.body["msg"].startswith("name: must be a slug"), (bad, r.body)
    r = await api.put(f"{SKILLS}/{skill['id']}", {"name": ""}, token="bob")
    assert r.status == 200 and r.data["name"] == skill["name"], r.body
    r = await api.put(f"{SKILLS}/{skill['id']}", {"name": "renamed-1"}, token="bob")
    assert r.status == 200 and r.data["name"] == "renamed-1", r.body


async def test_a_bundles_file_count_is_stated_and_a_skills_last_free_secret_slot_is_state(api: ApiClient, people: dict[str, Any]) -> None:
    """`files` states the 500 files the server takes (501 were valid per the document, then a 400); the 101st secret
    of a skill is refused by what the skill holds, not by the body: a 409 the operation documents."""
    from tests.helpers.openapi_inputs import conforms

    doc = (await api.get("/v3/api-docs")).body
    many = {"content": PDF_SKILL, "files": {f"f{i}.txt": "x" for i in range(501)}}
    r = await api.post(SKILLS, many, token="bob")
    assert r.status == 400 and not conforms(doc, "SkillCreate", many), r.body
    assert conforms(doc, "SkillCreate", {"files": {f"f{i}.txt": "x" for i in range(500)}})
    skill = await create(api, content=PDF_SKILL)
    for i in range(100):
        assert (await api.post(f"{SKILLS}/{skill['id']}/secrets", {"key": f"K{i}", "value": "v"}, token="bob")).status == 200
    r = await api.post(f"{SKILLS}/{skill['id']}/secrets", {"key": "ONE_MORE", "value": "v"}, token="bob")
    assert r.status == 409 and "409" in doc["paths"]["/api/v1/skills/{skillId}/secrets"]["post"]["responses"], r.body
