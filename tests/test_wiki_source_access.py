"""Linked wiki folders belong to a workspace: a KB links only under the roots given to its workspace
(`<workspaceId>:<folder>` entries of `wiki_source_roots`); a bare root is for global admins only."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, restart

FAST = {"wiki_watch_debounce_s": 0.1, "wiki_watch_check_s": 0.1}


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
        assert r.status == 409, r.body  # unlinked: the KB's state, not the request
    finally:
        await server.stop()


async def test_a_file_swapped_for_a_link_between_the_scan_and_the_read_never_brings_the_link_target_in(
        server: RunningServer, people: dict, tmp_path: Path, monkeypatch: Any) -> None:
    """The attacker writes in the linked folder and swaps a scanned file (or a folder on its way) for a
    link to a secret right after the scan stat'ed it: the read must not follow the link."""
    import json
    import os
    import shutil

    from platform_server.features.wiki import source
    from platform_server.features.wiki.models import RawMaterial

    secret_dir = tmp_path / "server-secrets"
    secret_dir.mkdir()
    (secret_dir / "jwt_secret.md").write_text("TOP-SECRET-SIGNING-KEY\n")
    (secret_dir / "sub").mkdir()
    (secret_dir / "sub" / "b.md").write_text("TOP-SECRET-IN-A-FOLDER\n")
    notes = tmp_path / "root" / "notes"
    notes.mkdir(parents=True)

    original = source.read_files
    swapped: list[bool] = []

    def swap_then_read(config: Any, kb_id: int, files: list, known: dict, result: Any) -> Any:
        # The scan has listed and stat'ed every file; swap before anything is read.
        if not swapped:
            swapped.append(True)
            (notes / "a.md").unlink()
            os.symlink(secret_dir / "jwt_secret.md", notes / "a.md")
            shutil.rmtree(notes / "sub")
            os.symlink(secret_dir / "sub", notes / "sub")
        return original(config, kb_id, files, known, result)

    server = await restart(server, **FAST, wiki_source_roots=f"1:{tmp_path / 'root'}")
    try:
        api = server.client
        kb = await kb_of(api, "bob")
        r = await api.put(f"{KB}/{kb}/source-directory", {"path": str(notes), "watch": False}, token="bob")
        assert r.status == 200, r.body

        async def scanned() -> Any:  # the scan a link starts, of the still empty folder
            return (await api.get(f"{KB}/{kb}/source-watcher", token="bob")).data["lastScan"]

        await eventually(scanned, interval=0.05)
        (notes / "a.md").write_text("harmless a\n")
        (notes / "sub").mkdir()
        (notes / "sub" / "b.md").write_text("harmless b\n")
        monkeypatch.setattr(source, "read_files", swap_then_read)
        r = await api.post(f"{KB}/{kb}/scan", token="bob")
        assert r.status == 200, r.body
        assert swapped
        rows = list(RawMaterial.select().where(RawMaterial.kb == int(kb)))
        assert all("TOP-SECRET" not in (row.text or "") for row in rows)
        failed = {f["path"]: f["error"] for f in r.data["failed"]}
        assert set(failed) >= {"a.md", "sub/b.md"} and r.data["added"] + r.data["updated"] == 0, r.data
        assert "symbolic link was put in its place" in failed["a.md"] and "folder on its path" in failed["sub/b.md"], failed
        assert "TOP-SECRET" not in json.dumps((await api.get(f"{KB}/{kb}/raw", token="bob")).body)
        data_dir = Path(server.config.data_dir)  # no stored copy holds the secret either
        assert not any(b"TOP-SECRET" in p.read_bytes() for p in data_dir.rglob("*.md") if p.is_file())
    finally:
        await server.stop()
