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
