"""Linked wiki folders belong to a workspace: a KB links only under the roots given to its workspace
(`<workspaceId>:<folder>` entries of `wiki_source_roots`); a bare root is for global admins only."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer, start_server
from tests.helpers.wiki import KB

FAST = {"wiki_watch_debounce_s": 0.1, "wiki_watch_check_s": 0.1}


async def restart(server: RunningServer, **overrides: Any) -> RunningServer:
    """The same data dir (people and tokens kept) with other settings."""
    tokens = dict(server.client.tokens)
    await server.stop()

    async def stopped() -> None:
        return None

    server.stop = stopped  # type: ignore[method-assign]  # the fixture's teardown stops it again
    again = await start_server(server.config.data_dir, **overrides)
    again.client.tokens.update(tokens)
    return again


async def kb_of(api: ApiClient, token: str, workspace: Any = None) -> str:
    r = await api.post(KB, {"name": "Notes", "description": "test"}, token=token, workspace=workspace)
    assert r.status == 200, r.body
    return r.data["id"]


def folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "note.md").write_text(f"# {path.name}\n\nprivate notes of {path.name}\n")
    return path


async def test_another_workspace_cannot_link_a_folder_under_a_root_not_given_to_it(
        server: RunningServer, people: dict, tmp_path: Path) -> None:
    server_files = folder(tmp_path / "server" / "etc")  # a bare root: the global admin's
    team = folder(tmp_path / "team" / "handbook")  # workspace 1's root
    dave_ws = people["dave"]["workspace"]
    daves = folder(tmp_path / "dave" / "notes")  # dave's workspace's root
    roots = f"{tmp_path / 'server'},1:{tmp_path / 'team'},{dave_ws}:{tmp_path / 'dave'}"
    server = await restart(server, **FAST, wiki_source_roots=roots)
    try:
        api = server.client
        dave_kb = await kb_of(api, "dave", dave_ws)
        for path in (server_files, team):
            r = await api.put(f"{KB}/{dave_kb}/source-directory", {"path": str(path)}, token="dave", workspace=dave_ws)
            assert r.status == 400 and r.body["code"] == 400 and r.body["data"] is None, r.body
            assert "outside the source folders allowed here" in r.msg and str(tmp_path / "team") not in r.msg, r.body
        assert (await api.get(f"{KB}/{dave_kb}", token="dave", workspace=dave_ws)).data["sourceDirectory"] is None
        assert (await api.get(f"{KB}/{dave_kb}/raw", token="dave", workspace=dave_ws)).data == []
        state = (await api.get(f"{KB}/{dave_kb}/source-watcher", token="dave", workspace=dave_ws)).data
        assert state["roots"] == [str((tmp_path / "dave").resolve())]
        r = await api.put(f"{KB}/{dave_kb}/source-directory", {"path": str(daves), "watch": False}, token="dave", workspace=dave_ws)
        assert r.status == 200, r.body

        # A member of workspace 1 links under its root, not under the global one; the global admin may.
        bob_kb = await kb_of(api, "bob")
        r = await api.put(f"{KB}/{bob_kb}/source-directory", {"path": str(server_files)}, token="bob")
        assert r.status == 400, r.body
        assert (await api.put(f"{KB}/{bob_kb}/source-directory", {"path": str(team), "watch": False}, token="bob")).status == 200
        r = await api.put(f"{KB}/{bob_kb}/source-directory", {"path": str(server_files), "watch": False}, token="alice")
        assert r.status == 200, r.body
    finally:
        await server.stop()


async def test_a_workspace_without_roots_is_told_who_assigns_them(server: RunningServer, people: dict, tmp_path: Path) -> None:
    server = await restart(server, **FAST, wiki_source_roots=str(folder(tmp_path / "root")))
    try:
        dave_ws = people["dave"]["workspace"]
        kb = await kb_of(server.client, "dave", dave_ws)
        r = await server.client.put(f"{KB}/{kb}/source-directory", {"path": str(tmp_path / "root")}, token="dave", workspace=dave_ws)
        assert r.status == 400 and f'"{dave_ws}:<folder>"' in r.msg, r.body
    finally:
        await server.stop()


async def test_a_link_outside_the_workspace_roots_after_a_settings_change_is_not_watched(
        server: RunningServer, people: dict, tmp_path: Path) -> None:
    dave_ws = people["dave"]["workspace"]
    daves = folder(tmp_path / "dave" / "notes")
    server = await restart(server, **FAST, wiki_source_roots=f"{dave_ws}:{tmp_path / 'dave'}")
    try:
        kb = await kb_of(server.client, "dave", dave_ws)
        r = await server.client.put(f"{KB}/{kb}/source-directory", {"path": str(daves), "watch": False}, token="dave", workspace=dave_ws)
        assert r.status == 200, r.body
        # The folder becomes a global root (or another workspace's): the old link stops at the next start.
        server = await restart(server, **FAST, wiki_source_roots=f"{tmp_path / 'dave'},1:{tmp_path / 'dave'}")
        state = (await server.client.get(f"{KB}/{kb}/source-watcher", token="dave", workspace=dave_ws)).data
        assert state["state"] == "unlinked" and state["roots"] == [], state
        r = await server.client.post(f"{KB}/{kb}/scan", token="dave", workspace=dave_ws)
        assert r.status == 400, r.body
    finally:
        await server.stop()
