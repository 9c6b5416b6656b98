"""The caller's own memory files of an agent (private folder): listed, read, daily notes and DREAMS.md edited."""
from __future__ import annotations

from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.memory import base, fact, summarize


async def test_the_owner_lists_reads_and_edits_their_memory_files_and_memory_md_stays_the_facts(env: ChatEnv) -> None:
    await summarize(env, [fact("city", "Lives in Lyon")])
    r = await env.api.get(f"{base(env)}/files", token="alice")
    assert r.status == 200, r.body
    paths = {f["path"]: f["editable"] for f in r.data}
    daily = next(p for p in paths if p.startswith("daily/"))
    assert paths["MEMORY.md"] is False and paths[daily] is True
    r = await env.api.get(f"{base(env)}/files/MEMORY.md", token="alice")
    assert r.status == 200 and "Lives in Lyon" in r.data["content"] and r.data["editable"] is False
    r = await env.api.put(f"{base(env)}/files/{daily}", {"content": "- moved to Paris\n"}, token="alice")
    assert r.status == 200, r.body
    assert (await env.api.get(f"{base(env)}/files/{daily}", token="alice")).data["content"] == "- moved to Paris\n"
    r = await env.api.put(f"{base(env)}/files/MEMORY.md", {"content": "x"}, token="alice")
    assert r.status == 409 and "rebuilt from the facts" in r.msg  # a well-formed path to a generated file


async def test_memory_files_are_private_to_their_owner_and_confined(env: ChatEnv, people: dict[str, Any]) -> None:
    await summarize(env, [fact("city", "Lives in Lyon")])
    assert (await env.api.get(f"{base(env)}/files", token="bob")).data == []  # bob's own memory is empty
    assert (await env.api.get(f"{base(env)}/files/MEMORY.md", token="bob")).status == 404
    assert (await env.api.put(f"{base(env)}/files/notes.md", {"content": "x"}, token="carol")).status == 403
    for bad in ("../../../workspace/MEMORY.md", "users/x/MEMORY.md", "notes.txt"):
        r = await env.api.put(f"{base(env)}/files/{bad}", {"content": "x"}, token="alice")
        assert r.status in (400, 404), (bad, r.body)
    assert (await env.api.put(f"{base(env)}/files/notes.md", {"content": 1}, token="alice")).status == 400
    # the document states the path: relative and Markdown; an end user's file from the user's own scope is not there
    op = (await env.api.get("/v3/api-docs")).body["paths"]["/api/v1/memory/{agentId}/files/{path}"]["put"]
    path = next(p for p in op["parameters"] if p["name"] == "path")["schema"]
    assert path["pattern"].endswith("\\.md$") and path["maxLength"] == 256 and "409" in op["responses"]
    long_name = "x" * 61 + ".md"  # 64 characters: the document's limit per name, below the file system's 255 bytes
    for bad in (long_name, "a:b.md"):
        assert (await env.api.put(f"{base(env)}/files/{bad}", {"content": "x"}, token="alice")).status == 400, bad
        assert (await env.api.get(f"{base(env)}/files/{bad}", token="alice")).status == 400, bad
    assert (await env.api.put(f"{base(env)}/files/users/x/notes.md", {"content": "x"}, token="alice")).status == 404
