"""Per-user memory stays private: out of the agent's shared workspace, its files routes, tools, export and prompt files."""
from __future__ import annotations

import io
import zipfile
from typing import Any

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.helpers.memory import fact, folder, summarize

SECRET = "Alice's bank PIN hint is heron."


async def alice_remembers(env: ChatEnv, server: Any) -> str:
    r = await summarize(env, [fact("pin_hint", SECRET)])
    assert r.status == 200, r.body
    assert SECRET in (folder(server, env) / "MEMORY.md").read_text()
    return f"memory/people/{env.people['alice']['id']}/MEMORY.md"


async def test_another_member_cannot_read_or_write_a_users_memory_through_the_files_routes(
        env: ChatEnv, server: Any) -> None:
    rel = await alice_remembers(env, server)
    files = f"/api/v1/agents/{env.agent_id}/workspace/files"
    assert (await env.api.get(f"{files}/{rel}", token="bob")).status == 404
    listing = await env.api.get(files, token="bob")
    assert listing.status == 200 and b"people" not in listing.raw
    r = await env.api.put(f"{files}/{rel}", {"content": "# Memory\n- forged"}, token="bob")
    assert SECRET in (folder(server, env) / "MEMORY.md").read_text()
    assert r.status in (200, 400, 403, 404)


async def test_the_memory_export_zip_holds_no_users_memory(env: ChatEnv, server: Any) -> None:
    await alice_remembers(env, server)
    r = await env.api.get(f"/api/v1/agents/{env.agent_id}/workspace/memory/export", token="bob")
    assert r.status == 200
    with zipfile.ZipFile(io.BytesIO(r.raw)) as archive:
        names = archive.namelist()
        assert not any("people" in n for n in names), names
        assert all(SECRET.encode() not in archive.read(n) for n in names)


async def test_the_read_file_tool_of_a_webchat_visitor_cannot_reach_the_owners_memory(env: ChatEnv, server: Any) -> None:
    rel = await alice_remembers(env, server)
    r = await env.api.post("/api/v1/channels", {"name": "w", "channelType": "webchat", "agentId": env.agent_id},
                           token="alice")
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("read_file", {"path": rel})]), Script(text="done"))
    await env.api.sse("POST", "/api/v1/channels/webchat/stream",
                      {"token": r.data["publicToken"], "sessionId": "v1", "message": "read it"})
    tool_results = [m for m in env.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_results and SECRET not in tool_results[-1]["content"]


async def test_a_webchat_visitor_cannot_read_another_visitors_notes(env: ChatEnv, server: Any) -> None:
    r = await env.api.post("/api/v1/channels", {"name": "w", "channelType": "webchat", "agentId": env.agent_id},
                           token="alice")
    token = r.data["publicToken"]
    await env.api.sse("POST", "/api/v1/channels/webchat/stream", {"token": token, "sessionId": "one", "message": "hi"})
    from platform_server.features.agents import service as agents
    notes = agents.memory_dir(server.config, int(env.agent_id), "webchat:one") / "MEMORY.md"
    notes.write_text("Visitor one lives at 12 Elm Street.")
    rel = notes.relative_to(agents.agent_dir(server.config, int(env.agent_id))).as_posix()
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("read_file", {"path": rel})]), Script(text="done"))
    await env.api.sse("POST", "/api/v1/channels/webchat/stream", {"token": token, "sessionId": "two", "message": "read"})
    tool_results = [m for m in env.llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_results and "Elm Street" not in tool_results[-1]["content"]


async def test_prompt_files_cannot_pull_a_users_memory_into_the_shared_prompt(env: ChatEnv, server: Any) -> None:
    rel = await alice_remembers(env, server)
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/workspace/prompt-files", {"files": [rel]}, token="alice")
    await env.stream("hello", token="bob", conversation_id="b1")
    assert SECRET not in env.llm.requests[-1]["messages"][0]["content"]
    assert r.status in (200, 400)


async def test_memory_kept_in_the_workspace_by_older_versions_moves_to_the_private_folder(tmp_path: Any) -> None:
    from pathlib import Path

    from tests.helpers.server import start_server

    data = tmp_path / "data"
    old = data / "agents" / "42" / "workspace" / "memory" / "people" / "7"
    old.mkdir(parents=True)
    (old / "MEMORY.md").write_text(SECRET)
    running = await start_server(str(data))
    try:
        moved = Path(data) / "agents" / "42" / "private" / "memory" / "people" / "7" / "MEMORY.md"
        assert moved.read_text() == SECRET
        assert not (data / "agents" / "42" / "workspace" / "memory" / "people").exists()
        assert (moved.parents[3].stat().st_mode & 0o777) == 0o700
    finally:
        await running.stop()


async def test_another_user_cannot_reach_a_users_memory_through_the_memory_files_routes(
        env: ChatEnv, server: Any) -> None:
    await alice_remembers(env, server)
    alice = env.people["alice"]["id"]
    base = f"/api/v1/memory/{env.agent_id}/files"
    own = await env.api.get(base, token="alice")
    assert own.status == 200 and "MEMORY.md" in [f["path"] for f in own.data]
    listing = await env.api.get(base, token="bob")
    assert listing.status == 200 and listing.data == []
    assert (await env.api.get(f"{base}/MEMORY.md", token="bob")).status == 404
    for sneaky in (f"..%2F{alice}%2FMEMORY.md", f"../{alice}/MEMORY.md", f"..%2F..%2Fpeople%2F{alice}%2FMEMORY.md"):
        r = await env.api.get(f"{base}/{sneaky}", token="bob")
        assert r.status in (400, 403, 404) and SECRET.encode() not in r.raw
    for end_user in (f"../../{alice}", f"../{alice}"):
        r = await env.api.get(f"{base}/MEMORY.md", params={"endUserId": end_user}, token="bob")
        assert r.status in (400, 403, 404) and SECRET.encode() not in r.raw
    r = await env.api.put(f"{base}/..%2F{alice}%2Fdaily%2Fforged.md", {"content": "forged"}, token="bob")
    assert r.status in (400, 403, 404)
    assert not (folder(server, env) / "daily" / "forged.md").exists()
    assert (await env.api.get(base, token="dave")).status in (403, 404)
