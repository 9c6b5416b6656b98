"""Agent workspace files, prompt files and memory snapshots: every escape attempt is refused."""
from __future__ import annotations

import io
import os
import re
import stat
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yarl

from platform_server.features.agents import files, memory, service
from platform_server.web.context import Caller, Principal
from platform_server.features.agents.errors import AgentNotFound
from platform_server.web.errors import BadRequest, Forbidden, NotFound
from tests.helpers.client import ApiClient, Response
from tests.helpers.server import RunningServer

AGENTS = "/api/v1/agents"


async def raw(api: ApiClient, method: str, path: str, token: str, data: Any = None, headers: dict | None = None,
              workspace: Any = None) -> Response:
    """A request whose path is sent exactly as written (no client-side normalising of `..` or `%2e`)."""
    h = {"Authorization": "Bearer " + api.tokens[token], **(headers or {})}
    if workspace is not None:
        h["X-Workspace-Id"] = str(workspace)
    url = yarl.URL(api.base_url + path, encoded=True)
    async with api.session.request(method, url, data=data, headers=h) as r:
        body = await r.read()
        try:
            import json

            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        return Response(r.status, parsed, dict(r.headers), body)


@pytest.fixture
async def agent(api: ApiClient, people: dict) -> dict[str, Any]:
    r = await api.post(AGENTS, {"name": "Filer", "systemPrompt": "You are Filer."}, token="bob")
    assert r.status == 200, r.body
    return r.data


def root_of(server: RunningServer, agent: dict[str, Any]) -> Path:
    return service.agent_dir(server.config, int(agent["id"]))


def caller(people: dict, name: str = "bob", workspace: int = 1, role: str = "member") -> Caller:
    return Caller(Principal(int(people[name]["id"]), name, "user", "jwt"), workspace, role)


async def test_a_new_agent_has_its_workspace_folder_at_once_for_files_put_in_by_hand(server: RunningServer, agent: dict) -> None:
    folder = Path(server.config.data_dir) / "agents" / str(agent["id"]) / "workspace"
    assert folder.is_dir()  # before any chat or file route touched it
    assert stat.S_IMODE(folder.stat().st_mode) & 0o077 == 0


async def test_save_read_list_and_delete_a_file(api: ApiClient, server: RunningServer, agent: dict) -> None:
    base = f"{AGENTS}/{agent['id']}/workspace/files"
    r = await api.put(f"{base}/notes/today.md", {"content": "# Today\nhello ✓"}, token="bob")
    assert r.status == 200, r.body
    assert r.data["path"] == "notes/today.md" and r.data["size"] == len("# Today\nhello ✓".encode())
    r = await api.get(f"{base}/notes/today.md", token="carol")
    assert r.status == 200 and r.raw.decode() == "# Today\nhello ✓"
    assert r.headers["Content-Type"].startswith("text/plain")
    r = await api.put(f"{base}/notes/today.md", {"content": "v2"}, token="bob")
    assert r.status == 200 and r.data["size"] == 2
    r = await api.get(base, token="carol")
    assert [(f["path"], f["size"]) for f in r.data] == [("notes/today.md", 2)]
    assert r.data[0]["modifiedTime"].endswith("Z")
    assert (await api.delete(f"{base}/notes/today.md", token="bob")).status == 200
    assert (await api.get(f"{base}/notes/today.md", token="bob")).status == 404
    assert (await api.delete(f"{base}/notes/today.md", token="bob")).status == 404
    assert (await api.delete(f"{base}/notes", token="bob")).status == 200  # the now empty folder
    events = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "AGENT_FILE"})
    assert sorted(e["action"] for e in events.data["records"]) == ["CREATE", "DELETE", "DELETE", "UPDATE"]


async def test_raw_bytes_are_saved_with_a_non_json_content_type_and_html_is_not_served_as_html(
    api: ApiClient, agent: dict
) -> None:
    base = f"{AGENTS}/{agent['id']}/workspace/files"
    blob = bytes(range(256)) * 4
    r = await api.put(f"{base}/bin/data.bin", data=blob, token="bob", headers={"Content-Type": "application/octet-stream"})
    assert r.status == 200 and r.data["size"] == 1024
    r = await api.get(f"{base}/bin/data.bin", token="bob")
    assert r.raw == blob and r.headers["Content-Type"] == "application/octet-stream"
    await api.put(f"{base}/page.html", {"content": "<script>alert(1)</script>"}, token="bob")
    r = await api.get(f"{base}/page.html", token="bob")
    assert r.headers["Content-Type"].startswith("text/plain") and "sandbox" in r.headers["Content-Security-Policy"]
    r = await api.put(f"{base}/x.md", {"text": "no content"}, token="bob")
    assert r.status == 400 and r.body["msg"].startswith("content: ")
    # a folder in the way, or a file where a folder would be: what the folder holds refuses it, a 409
    r = await api.put(f"{base}/bin", {"content": "over a folder"}, token="bob")
    assert r.status == 409 and r.body["msg"] == "path: is a directory", r.body
    r = await api.get(f"{base}/bin", token="bob")
    assert r.status == 409
    r = await api.put(f"{base}/bin/data.bin/inner.txt", {"content": "under a file"}, token="bob")
    assert r.status == 409 and r.body["msg"] == "path: a parent is not a directory", r.body
    r = await api.delete(f"{base}/bin", token="bob")
    assert r.status == 409 and r.body["msg"] == "Directory not empty"  # what the folder holds: a conflict


async def test_viewers_read_only_and_other_workspaces_see_nothing(api: ApiClient, agent: dict, people: dict) -> None:
    base = f"{AGENTS}/{agent['id']}/workspace/files"
    await api.put(f"{base}/a.txt", {"content": "a"}, token="bob")
    assert (await api.put(f"{base}/a.txt", {"content": "b"}, token="carol")).status == 403
    assert (await api.delete(f"{base}/a.txt", token="carol")).status == 403
    ws = people["dave"]["workspace"]
    for method in ("GET", "PUT", "DELETE"):
        r = await api.request(method, f"{base}/a.txt", {"content": "x"} if method == "PUT" else None, token="dave", workspace=ws)
        assert r.status == 404
    assert (await api.get(base, token="dave", workspace=ws)).status == 404
    assert (await api.get(f"{base}/a.txt", token="bob")).raw == b"a"


ESCAPES = [
    "../escape.txt",
    "a/../../escape.txt",
    "%2e%2e/escape.txt",
    "%2E%2E%2Fescape.txt",
    "..%2fescape.txt",
    "a/%2e%2e/%2e%2e/escape.txt",
    "/escape.txt",
    "%2fescape.txt",
    "/tmp/escape.txt",
    "escape%00.txt",
    "..%5cescape.txt",
    "a%5c..%5c..%5cescape.txt",
    "C:%5cescape.txt",
    "x" * 300,
    "/".join(["d"] * 40) + "/f",
    "..",
    "",
]


async def test_every_path_escape_is_refused_for_every_method(api: ApiClient, server: RunningServer, agent: dict) -> None:
    base = f"/api/v1/agents/{agent['id']}/workspace/files/"
    data_dir = Path(server.config.data_dir).resolve()
    before = sorted(p for p in data_dir.parent.rglob("*") if "escape" in p.name)
    for rel in ESCAPES:
        for method in ("GET", "PUT", "DELETE"):
            body = b'{"content":"pwned"}' if method == "PUT" else None
            r = await raw(api, method, base + rel, "bob", data=body, headers={"Content-Type": "application/json"})
            assert r.status in (400, 403), (method, rel, r.status, r.body)
            assert r.body["code"] == r.status and r.body["data"] is None
    after = sorted(p for p in data_dir.parent.rglob("*") if "escape" in p.name)
    assert after == before == []
    assert not Path("/tmp/escape.txt").exists()
    r = await raw(api, "GET", base + "..%2f..%2f..%2fplatform.db", "bob")
    assert r.status == 403


async def test_symlinks_planted_inside_the_folder_are_never_followed(
    api: ApiClient, server: RunningServer, agent: dict, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    root = root_of(server, agent)
    os.symlink(outside, root / "dirlink")
    os.symlink(outside / "secret.txt", root / "filelink")
    (root / "real").mkdir()
    os.symlink("../dirlink", root / "real" / "nested")
    base = f"{AGENTS}/{agent['id']}/workspace/files"
    for rel in ("dirlink/secret.txt", "filelink", "real/nested/secret.txt", "dirlink/new.txt"):
        for method in ("GET", "PUT", "DELETE"):
            r = await api.request(method, f"{base}/{rel}", {"content": "pwned"} if method == "PUT" else None, token="bob")
            assert r.status == 403, (method, rel, r.status, r.body)
    assert (outside / "secret.txt").read_text() == "top secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert os.path.islink(root / "filelink")
    listing = (await api.get(base, token="bob")).data
    assert listing == []
    with pytest.raises(Forbidden):
        files.resolve_inside(root, "dirlink/secret.txt")
    with pytest.raises(Forbidden):
        files.resolve_inside(root, "../x")
    with pytest.raises(BadRequest):
        files.resolve_inside(root, "/etc/passwd")
    with pytest.raises(BadRequest):
        files.resolve_inside(root, "a\x00b")
    assert files.resolve_inside(root, "real/./ok.txt") == root / "real" / "ok.txt"


async def test_prompt_files_are_appended_to_the_system_prompt_in_order(
    api: ApiClient, server: RunningServer, agent: dict, tmp_path: Path
) -> None:
    base = f"{AGENTS}/{agent['id']}/workspace"
    assert (await api.get(f"{base}/prompt-files", token="carol")).data["files"] == []
    r = await api.put(f"{base}/prompt-files", {"files": ["SOUL.md", "./AGENTS.md", "missing.md", "leak.md"]}, token="bob")
    assert r.status == 200 and r.data["files"] == ["SOUL.md", "AGENTS.md", "missing.md", "leak.md"]
    await api.put(f"{base}/files/AGENTS.md", {"content": "Use tools wisely."}, token="bob")
    await api.put(f"{base}/files/SOUL.md", {"content": "Be kind."}, token="bob")
    (tmp_path / "secret.md").write_text("LEAKED")
    os.symlink(tmp_path / "secret.md", root_of(server, agent) / "leak.md")
    a = service.get_agent(caller_of(server), int(agent["id"]))
    prompt = service.system_prompt(server.config, a)
    assert prompt.startswith("You are Filer.")
    assert prompt.index("Be kind.") < prompt.index("Use tools wisely.")
    assert "LEAKED" not in prompt and "missing.md" not in prompt
    for bad in (["../x.md"], ["/etc/passwd"], ["a\\b.md"], [""], ["."], ["./"], ["a\x01.md"]):
        r = await api.put(f"{base}/prompt-files", {"files": bad}, token="bob")
        assert r.status in (400, 403), bad
    # the document states what names a file, so a client sends only those (the server refuses the others itself)
    item = (await api.get("/v3/api-docs")).body["components"]["schemas"]["PromptFiles"]["properties"]["files"]["items"]
    assert item["maxLength"] == 256 and re.search(item["pattern"], "docs/AGENTS.md") and not re.search(item["pattern"], "./")
    assert (await api.put(f"{base}/prompt-files", {"files": ["x"] * 40}, token="bob")).status == 400
    assert (await api.put(f"{base}/prompt-files", {"files": ["x"]}, token="carol")).status == 403


def caller_of(server: RunningServer) -> Caller:
    return Caller(Principal(0, "system", "admin", "jwt"), 1, "owner")


async def test_the_service_api_for_the_runtime(api: ApiClient, server: RunningServer, agent: dict, people: dict) -> None:
    me = caller(people)
    aid = int(agent["id"])
    assert service.get_agent_for_chat(me, aid).id == aid
    with pytest.raises(AgentNotFound) as exc:
        service.get_agent_for_chat(caller(people, "dave", int(people["dave"]["workspace"]), "owner"), aid)
    assert exc.value.code == 1001
    with pytest.raises(NotFound):
        service.get_agent(caller(people, "dave", int(people["dave"]["workspace"]), "owner"), aid)
    await api.put(f"{AGENTS}/{aid}", {"enabled": False}, token="bob")
    with pytest.raises(BadRequest, match="Agent is disabled"):
        service.get_agent_for_chat(me, aid)
    assert service.to_dict(service.get_agent(me, aid))["enabled"] is False
    root = service.agent_dir(server.config, aid)
    assert root == Path(server.config.data_dir).resolve() / "agents" / str(aid) / "workspace" and root.is_dir()
    assert service.memory_dir(server.config, aid, None) == root / "memory"
    assert service.memory_dir(server.config, aid, "user-1") == root / "memory" / "users" / "user-1"
    weird = service.memory_dir(server.config, aid, "../../etc")
    assert weird.parent == root / "memory" / "users" and weird.name.startswith("_") and weird.is_dir()
    assert service.memory_dir(server.config, aid, "..").parent == root / "memory" / "users"
    assert service.memory_dir(server.config, aid, "..").name != ".."


def make_zip(entries: list[tuple[str, bytes]], symlinks: list[tuple[str, str]] = ()) -> bytes:  # type: ignore[assignment]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
        for name, target in symlinks:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buf.getvalue()


async def test_memory_export_contains_memory_files_only(api: ApiClient, server: RunningServer, agent: dict, tmp_path: Path) -> None:
    base = f"{AGENTS}/{agent['id']}/workspace"
    await api.put(f"{base}/files/MEMORY.md", {"content": "# Memory"}, token="bob")
    await api.put(f"{base}/files/memory/2024/notes.md", {"content": "note"}, token="bob")
    await api.put(f"{base}/files/memory/users/u1/MEMORY.md", {"content": "u1"}, token="bob")
    await api.put(f"{base}/files/other.txt", {"content": "not memory"}, token="bob")
    (tmp_path / "s.txt").write_text("secret")
    os.symlink(tmp_path / "s.txt", root_of(server, agent) / "memory" / "link.txt")
    r = await api.get(f"{base}/memory/export", token="carol")
    assert r.status == 200 and r.headers["Content-Type"] == "application/zip"
    assert "attachment" in r.headers["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(r.raw)) as zf:
        assert sorted(zf.namelist()) == ["MEMORY.md", "memory/2024/notes.md", "memory/users/u1/MEMORY.md"]
        assert zf.read("memory/2024/notes.md") == b"note"


async def test_memory_import_preview_writes_nothing_and_import_refuses_escapes(
    api: ApiClient, server: RunningServer, agent: dict, tmp_path: Path
) -> None:
    base = f"{AGENTS}/{agent['id']}/workspace"
    root = root_of(server, agent)
    await api.put(f"{base}/files/MEMORY.md", {"content": "old"}, token="bob")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "memory")
    archive = make_zip(
        [
            ("MEMORY.md", b"new memory"),
            ("memory/linked/x.md", b"through the planted link"),
            ("../evil.txt", b"zip slip"),
            ("memory/../../evil2.txt", b"zip slip"),
            ("/abs-evil.txt", b"absolute"),
            ("memory\\..\\..\\evil3.txt", b"backslash"),
            ("notes.txt", b"not memory"),
        ],
        symlinks=[("memory/sym", "/etc/passwd")],
    )
    r = await api.post(f"{base}/memory/import/preview", data=archive, token="bob", headers={"Content-Type": "application/zip"})
    assert r.status == 200, r.body
    by_path = {e["path"]: e for e in r.data["entries"]}
    assert by_path["MEMORY.md"]["action"] == "overwrite"
    refused = {e["path"] for e in r.data["entries"] if e["action"] == "refused"}
    assert refused == set(by_path) - {"MEMORY.md"}
    assert r.data["overwriteCount"] == 1 and r.data["createCount"] == 0 and r.data["refusedCount"] == 7
    assert (root / "MEMORY.md").read_text() == "old"
    r = await api.post(f"{base}/memory/import", data=archive, token="bob", headers={"Content-Type": "application/zip"})
    assert r.status == 200 and r.data["imported"] == 1
    assert (root / "MEMORY.md").read_text() == "new memory"
    assert list(outside.iterdir()) == []
    assert not any("evil" in p.name for p in tmp_path.rglob("*"))
    assert not any("evil" in p.name for p in Path(server.config.data_dir).rglob("*"))


async def test_memory_import_accepts_multipart_and_merges(api: ApiClient, server: RunningServer, agent: dict) -> None:
    import aiohttp

    base = f"{AGENTS}/{agent['id']}/workspace"
    await api.put(f"{base}/files/memory/keep.md", {"content": "keep"}, token="bob")
    form = aiohttp.FormData()
    form.add_field("file", make_zip([("memory/new.md", b"new"), ("memory/users/u1/MEMORY.md", b"u1")]),
                   filename="m.zip", content_type="application/zip")
    r = await api.post(f"{base}/memory/import", data=form, token="bob")
    assert r.status == 200 and r.data["imported"] == 2 and r.data["createCount"] == 2
    root = root_of(server, agent)
    assert (root / "memory" / "keep.md").read_text() == "keep"
    assert (root / "memory" / "new.md").read_text() == "new"
    assert (root / "memory" / "users" / "u1" / "MEMORY.md").read_text() == "u1"
    assert (await api.post(f"{base}/memory/import", data=b"not a zip", token="bob")).status == 400
    assert (await api.post(f"{base}/memory/import", data=make_zip([]), token="carol")).status == 403
    events = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "AGENT_MEMORY"})
    assert len(events.data["records"]) == 1


async def test_memory_import_bounds_the_uncompressed_size(
    api: ApiClient, server: RunningServer, agent: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory, "MAX_TOTAL_BYTES", 1024 * 1024)
    monkeypatch.setattr(memory, "MAX_ENTRY_BYTES", 768 * 1024)
    base = f"{AGENTS}/{agent['id']}/workspace"
    bomb = make_zip([("memory/a.md", b"\0" * 700_000), ("memory/b.md", b"\0" * 700_000)])
    assert len(bomb) < 10_000
    r = await api.post(f"{base}/memory/import", data=bomb, token="bob")
    assert r.status == 400 and "expands to more than" in r.body["msg"]
    r = await api.post(f"{base}/memory/import/preview", data=make_zip([("memory/big.md", b"\0" * 800_000)]), token="bob")
    assert r.status == 200 and r.data["entries"][0]["action"] == "refused"
    assert not (root_of(server, agent) / "memory" / "a.md").exists()


async def test_a_memory_import_is_documented_as_a_zip_and_a_personal_file_by_its_stated_patterns(api: ApiClient, agent: dict, people: dict) -> None:
    """The document types the upload application/zip (as the multipart part's encoding and as the raw body), so a
    generator sends a ZIP; the personal file's filename and ownerKey carry the patterns the server checks (an
    ownerKey of Unicode digits was a 500: isdigit() passed it to int())."""
    import re

    document = (await api.get("/v3/api-docs")).body
    for path in (f"{AGENTS}/{{agentId}}/workspace/memory/import", f"{AGENTS}/{{agentId}}/workspace/memory/import/preview"):
        content = document["paths"][path]["post"]["requestBody"]["content"]
        assert content["multipart/form-data"]["encoding"] == {"file": {"contentType": "application/zip"}}
        assert set(content) == {"multipart/form-data", "application/zip"}
    params = {p["name"]: p["schema"] for p in document["paths"][f"{AGENTS}/{{agentId}}/workspace/memory/personal-file"]["get"]["parameters"]}
    filename, owner = re.compile(params["filename"]["pattern"]), re.compile(params["ownerKey"]["pattern"])
    assert filename.search("memory/2026-01-01.md") and not filename.search(".") and not filename.search("a\\b")
    uid = people["alice"]["id"]
    base = f"{AGENTS}/{agent['id']}/workspace/memory/personal-file"
    for name, key in (("MEMORY.md", "user:²"), ("MEMORY.md", f"user: {uid}"), (".", f"user:{uid}"), ("", f"user:{uid}")):
        assert not (filename.search(name) and owner.search(key)), (name, key)
        r = await api.get(base, params={"filename": name, "ownerKey": key}, token="alice")
        assert r.status == 400, (name, key, r.body)
    r = await api.get(base, params={"filename": "MEMORY.md", "ownerKey": f"user:{uid}"}, token="alice")
    assert r.status == 404, r.body  # well formed: no such file yet


async def test_a_file_path_is_documented_and_checked_as_one_pattern(api: ApiClient, agent: dict) -> None:
    """The document states the `{path}` rule (1-32 names of 1-63 characters, none '.', no backslash, colon or control
    character, at most 256 characters) and every method refuses exactly what it refuses: a name past 255 bytes or a
    backslash was a 400 for a path the document allowed."""
    document = (await api.get("/v3/api-docs")).body
    path_rule = re.compile(files.ROUTE_PATH_PATTERN)
    for method in ("get", "put", "delete"):
        params = document["paths"][f"{AGENTS}/{{agentId}}/workspace/files/{{path}}"][method]["parameters"]
        schema = next(p["schema"] for p in params if p["name"] == "path")
        assert schema == {"type": "string", "minLength": 1, "maxLength": 256, "pattern": files.ROUTE_PATH_PATTERN}
    base = f"{AGENTS}/{agent['id']}/workspace/files/"
    refused = ["a\\b.txt", "a\x0cb.txt", "x" * 64, "a//b.txt", "a/./b.txt", "a/", "C:x.txt", "a:b.txt", "é" * 64, "a/" * 129 + "b"]
    for rel in refused:
        assert not path_rule.fullmatch(rel) or len(rel) > 256, rel
        for method in ("GET", "PUT", "DELETE"):
            body = b'{"content":"x"}' if method == "PUT" else None
            r = await raw(api, method, base + quote(rel, safe="/"), "bob", data=body, headers={"Content-Type": "application/json"})
            assert r.status == 400 and r.body["msg"].startswith("path: a relative path of 1-32 names"), (method, rel, r.body)
    for rel in ("é" * 63, ".env", "dir/" * 31 + "x" * 63, "notes (1).md"):
        assert path_rule.fullmatch(rel) and len(rel) <= 256, rel
        r = await api.put(base + rel, {"content": "kept"}, token="bob")
        assert r.status == 200, (rel, r.body)
        assert (await api.get(base + rel, token="bob")).raw == b"kept"
