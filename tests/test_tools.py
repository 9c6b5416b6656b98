"""Tools: the registry's selection rules, every built-in tool through `execute`, and the /api/v1/tools routes."""
from __future__ import annotations

import asyncio
import json
import os
import pathlib
from typing import Any, AsyncIterator

import pytest
from aiohttp import web

from platform_server.features.tools.registry import ToolContext, ToolDefinition, ToolError, ToolRegistry
from tests.helpers.server import RunningServer, free_port

SYSTEM_TOOLS = {"get_current_time", "list_files", "read_file", "write_file", "web_fetch", "shell_exec"}


def registry_of(server: RunningServer) -> ToolRegistry:
    return server.platform.services.tools


@pytest.fixture
def ctx(server: RunningServer, tmp_path: pathlib.Path) -> ToolContext:
    return ToolContext(
        user_id=1, workspace_id=1, agent_id=7, conversation_id="c1",
        agent_dir=tmp_path / "agents" / "7", config=server.config, role="owner",
    )


async def run(server: RunningServer, ctx: ToolContext, name: str, args: Any) -> tuple[bool, str]:
    text = args if isinstance(args, str) else json.dumps(args)
    outcome = await registry_of(server).execute(name, text, ctx)
    return outcome.success, outcome.result


def fake_tool(name: str, source: str, reply: str = "ok") -> ToolDefinition:
    async def run_it(args: dict[str, Any], ctx: ToolContext) -> str:
        return reply

    return ToolDefinition(name, f"{name} tool", {"type": "object", "properties": {}}, run_it, source)


# ---- selection ----------------------------------------------------------------------------


async def test_unbound_agents_get_every_enabled_system_tool_except_shell_exec(server: RunningServer) -> None:
    registry = registry_of(server)
    registry.register(fake_tool("mcp_search", "mcp"))
    names = [s.name for s in registry.specs_for([], tools_disabled=False)]
    assert set(names) == SYSTEM_TOOLS - {"shell_exec"}
    spec = next(s for s in registry.specs_for([], False) if s.name == "read_file")
    assert spec.parameters["required"] == ["path"] and spec.description


async def test_bound_tools_are_offered_exactly_and_in_order(server: RunningServer) -> None:
    registry = registry_of(server)
    registry.register(fake_tool("mcp_search", "mcp"))
    specs = registry.specs_for(["shell_exec", "mcp_search", "read_file", "no_such_tool", "read_file"], False)
    assert [s.name for s in specs] == ["shell_exec", "mcp_search", "read_file"]


async def test_tools_disabled_keeps_only_system_tools(server: RunningServer) -> None:
    registry = registry_of(server)
    registry.register(fake_tool("mcp_search", "mcp"))
    registry.register(fake_tool("skill_tool", "skill"))
    specs = registry.specs_for(["mcp_search", "skill_tool", "get_current_time"], tools_disabled=True)
    assert [s.name for s in specs] == ["get_current_time"]
    assert "mcp_search" not in [s.name for s in registry.specs_for([], tools_disabled=True)]


async def test_disabled_tools_are_neither_offered_nor_run(server: RunningServer, ctx: ToolContext) -> None:
    from platform_server.features.tools.models import Tool

    Tool.update(enabled=False).where(Tool.name == "get_current_time").execute()
    registry = registry_of(server)
    assert "get_current_time" not in [s.name for s in registry.specs_for([], False)]
    assert registry.specs_for(["get_current_time"], False) == []
    ok, text = await run(server, ctx, "get_current_time", {})
    assert not ok and "disabled" in text


async def test_unregistered_tools_disappear_from_offers_and_execution(server: RunningServer, ctx: ToolContext) -> None:
    registry = registry_of(server)
    registry.register(fake_tool("mcp_search", "mcp", "found it"))
    assert await run(server, ctx, "mcp_search", {}) == (True, "found it")
    registry.unregister("mcp_search")
    assert registry.specs_for(["mcp_search"], False) == []
    ok, text = await run(server, ctx, "mcp_search", {})
    assert not ok and "Unknown tool" in text


# ---- execute: failures are results ----------------------------------------------------------


async def test_bad_arguments_become_failed_outcomes(server: RunningServer, ctx: ToolContext) -> None:
    assert (await run(server, ctx, "read_file", "{not json"))[0] is False
    ok, text = await run(server, ctx, "read_file", "[1, 2]")
    assert not ok and "JSON object" in text
    ok, text = await run(server, ctx, "read_file", {})
    assert not ok and "Missing required argument 'path'" in text
    ok, text = await run(server, ctx, "read_file", {"path": 5})
    assert not ok and "must be of type string" in text
    ok, text = await run(server, ctx, "no_such_tool", {})
    assert not ok and "Unknown tool: no_such_tool" in text


async def test_exceptions_and_timeouts_become_failed_outcomes(server: RunningServer, ctx: ToolContext) -> None:
    registry = registry_of(server)

    async def explode(args: dict[str, Any], c: ToolContext) -> str:
        raise RuntimeError("kaboom")

    async def hang(args: dict[str, Any], c: ToolContext) -> str:
        await asyncio.sleep(10)
        return "never"

    async def expected(args: dict[str, Any], c: ToolContext) -> str:
        raise ToolError("nothing to see")

    async def huge(args: dict[str, Any], c: ToolContext) -> str:
        return "x" * 200_000

    for name, fn in (("explode", explode), ("hang", hang), ("expected", expected), ("huge", huge)):
        registry.register(ToolDefinition(name, name, {"type": "object", "properties": {}}, fn, "custom"))
    ok, text = await run(server, ctx, "explode", {})
    assert not ok and "RuntimeError: kaboom" in text
    assert await run(server, ctx, "expected", {}) == (False, "nothing to see")
    ok, text = await run(server, ctx, "huge", {})
    assert ok and len(text) < 70_000 and "[truncated: result was 200000 bytes" in text
    registry.timeout_s = 0.2
    ok, text = await run(server, ctx, "hang", "")
    assert not ok and "timed out" in text


# ---- get_current_time ---------------------------------------------------------------------


async def test_current_time_in_a_named_zone(server: RunningServer, ctx: ToolContext) -> None:
    ok, text = await run(server, ctx, "get_current_time", {"timezone": "Asia/Tokyo"})
    assert ok and "+09:00" in text and "Asia/Tokyo" in text
    ok, text = await run(server, ctx, "get_current_time", {})
    assert ok and "+00:00" in text and "UTC" in text


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", " "])
async def test_bad_time_zones_fail_with_a_message(server: RunningServer, ctx: ToolContext, zone: str) -> None:
    ok, text = await run(server, ctx, "get_current_time", {"timezone": zone})
    assert not ok and "Unknown time zone" in text


# ---- workspace files --------------------------------------------------------------------------


async def test_write_read_and_list_files_in_the_agent_folder(server: RunningServer, ctx: ToolContext) -> None:
    ok, text = await run(server, ctx, "write_file", {"path": "notes/day 1/todo.md", "content": "héllo\nworld"})
    assert ok and text == "Created notes/day 1/todo.md (12 bytes)"
    assert (ctx.agent_dir / "notes" / "day 1" / "todo.md").read_text("utf-8") == "héllo\nworld"
    assert await run(server, ctx, "read_file", {"path": "./notes/day 1/todo.md"}) == (True, "héllo\nworld")
    await run(server, ctx, "write_file", {"path": "a.txt", "content": "abc"})
    ok, text = await run(server, ctx, "list_files", {})
    assert ok and "notes/" in text and "a.txt (3 bytes)" in text
    ok, text = await run(server, ctx, "list_files", {"path": "notes"})
    assert ok and "day 1/" in text
    ok, text = await run(server, ctx, "read_file", {"path": "missing.txt"})
    assert not ok and "File not found: missing.txt" in text
    ok, text = await run(server, ctx, "read_file", {"path": "notes"})
    assert not ok and "directory" in text
    ok, text = await run(server, ctx, "list_files", {"path": "a.txt"})
    assert not ok and "Not a directory" in text
    ok, text = await run(server, ctx, "write_file", {"path": "a.txt", "content": "new"})
    assert ok and text.startswith("Overwrote a.txt")


@pytest.mark.parametrize(
    "path", ["../outside.txt", "notes/../../outside.txt", "/etc/passwd", "..", "a\x00b", "link/secret.txt", "link", "link/../x", "C:/x"]
)
async def test_file_tools_never_escape_the_agent_folder(
    server: RunningServer, ctx: ToolContext, tmp_path: pathlib.Path, path: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    ctx.agent_dir.mkdir(parents=True)
    os.symlink(outside, ctx.agent_dir / "link")
    for name, args in (
        ("read_file", {"path": path}),
        ("write_file", {"path": path, "content": "pwned"}),
        ("list_files", {"path": path}),
    ):
        ok, text = await run(server, ctx, name, args)
        assert not ok, (name, path, text)
        assert "top secret" not in text and "secret.txt" not in text.replace(path, "")
    assert (outside / "secret.txt").read_text() == "top secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert not (tmp_path / "outside.txt").exists()


async def test_a_symlinked_file_inside_pointing_out_cannot_be_read(server: RunningServer, ctx: ToolContext, tmp_path: pathlib.Path) -> None:
    (tmp_path / "passwd").write_text("root:x:0:0")
    ctx.agent_dir.mkdir(parents=True)
    os.symlink(tmp_path / "passwd", ctx.agent_dir / "innocent.txt")
    ok, text = await run(server, ctx, "read_file", {"path": "innocent.txt"})
    assert not ok and "root:x" not in text
    ok, text = await run(server, ctx, "write_file", {"path": "innocent.txt", "content": "x"})
    assert not ok and (tmp_path / "passwd").read_text() == "root:x:0:0"
    ok, text = await run(server, ctx, "list_files", {})
    assert ok and "innocent.txt (symlink)" in text


async def test_binary_and_large_files(server: RunningServer, ctx: ToolContext) -> None:
    ctx.agent_dir.mkdir(parents=True)
    (ctx.agent_dir / "img.bin").write_bytes(b"\x89PNG\x00\x00\x01")
    ok, text = await run(server, ctx, "read_file", {"path": "img.bin"})
    assert not ok and "Binary file" in text
    (ctx.agent_dir / "big.txt").write_text("y" * 300_000)
    ok, text = await run(server, ctx, "read_file", {"path": "big.txt"})
    assert ok and "truncated" in text and len(text.encode()) < 70_000


# ---- shell_exec ------------------------------------------------------------------------------


async def test_shell_exec_is_refused_unless_enabled(server: RunningServer, ctx: ToolContext) -> None:
    enable_shell()  # in the workspace, but not on the server
    ok, text = await run(server, ctx, "shell_exec", {"command": "touch made.txt"})
    assert not ok and "disabled" in text and "shell_exec_enabled" in text
    assert not (ctx.agent_dir / "made.txt").exists()


def enable_shell(workspace_id: int = 1) -> None:
    """What `PUT /api/v1/workspaces/{id} {hostTools: ["shell"]}` by a global admin stores."""
    from platform_server.features.workspaces.models import Workspace
    Workspace.update(host_tools=["shell"]).where(Workspace.id == workspace_id).execute()


@pytest.mark.config(shell_exec_enabled=True)
async def test_shell_exec_is_refused_in_a_workspace_where_no_global_admin_enabled_it(server: RunningServer, ctx: ToolContext) -> None:
    ok, text = await run(server, ctx, "shell_exec", {"command": "touch made.txt"})
    assert not ok and "not enabled in this workspace" in text and '"hostTools"' in text
    assert not (ctx.agent_dir / "made.txt").exists()


@pytest.mark.config(shell_exec_enabled=True, shell_exec_timeout_s=1.0)
async def test_shell_exec_runs_in_the_agent_folder_with_a_timeout(server: RunningServer, ctx: ToolContext) -> None:
    enable_shell()
    ok, text = await run(server, ctx, "shell_exec", {"command": "echo hi > made.txt && pwd && echo $PLATFORM_JWT_SECRET"})
    assert ok and text.startswith("exit code: 0") and "/workspace" in text  # the agent folder, at /workspace
    assert (ctx.agent_dir / "made.txt").read_text() == "hi\n"
    ok, text = await run(server, ctx, "shell_exec", {"command": "echo oops; exit 3"})
    assert not ok and "exit code: 3" in text and "oops" in text
    ok, text = await run(server, ctx, "shell_exec", {"command": "head -c 200000 /dev/zero | tr '\\0' z"})
    assert ok and "truncated" in text and len(text) < 70_000
    ok, text = await run(server, ctx, "shell_exec", {"command": "echo started; sleep 30"})
    assert not ok and "timed out" in text and "started" in text


# ---- web_fetch -------------------------------------------------------------------------------


@pytest.fixture
async def site() -> AsyncIterator[str]:
    """A local HTTP server with pages, redirects and a large body."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"

    async def page(request: web.Request) -> web.Response:
        markup = (
            "<html><head><title>Hello page</title><style>body{color:red}</style>"
            "<script>var secret = 'js';</script></head><body><h1>Welcome</h1><p>First &amp; best"
            "<b>bold</b></p><noscript>no js</noscript><ul><li>one</li><li>two</li></ul></body></html>"
        )
        return web.Response(text=markup, content_type="text/html")

    async def redirect(request: web.Request) -> web.Response:
        target = request.query["to"].replace("PORT", str(port))
        raise web.HTTPFound(target)

    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def big(request: web.Request) -> web.Response:
        return web.Response(text="z" * 50_000, content_type="text/plain")

    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404, text="nope")

    app = web.Application()
    app.router.add_get("/page", page)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/loop", loop)
    app.router.add_get("/big", big)
    app.router.add_get("/missing", missing)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield base
    finally:
        await runner.cleanup()


async def test_web_fetch_refuses_loopback_by_default(server: RunningServer, ctx: ToolContext, site: str) -> None:
    ok, text = await run(server, ctx, "web_fetch", {"url": site + "/page"})
    assert not ok and "loopback" in text


@pytest.mark.config(web_fetch_allow_hosts="127.0.0.1")
async def test_web_fetch_extracts_text_from_an_allowed_host(server: RunningServer, ctx: ToolContext, site: str) -> None:
    ok, text = await run(server, ctx, "web_fetch", {"url": site + "/page"})
    assert ok, text
    assert "Title: Hello page" in text and "Welcome" in text and "First & best" in text and "one\ntwo" in text
    assert "secret" not in text and "color:red" not in text and "no js" not in text and "<" not in text
    ok, text = await run(server, ctx, "web_fetch", {"url": site + "/redirect?to=/page"})
    assert ok and "Welcome" in text and text.startswith(f"URL: {site}/page")
    ok, text = await run(server, ctx, "web_fetch", {"url": site + "/missing"})
    assert not ok and "HTTP 404" in text


@pytest.mark.config(web_fetch_allow_hosts=("127.0.0.1",))
@pytest.mark.parametrize(
    "target",
    [
        "http://localhost:PORT/page", "http://[::ffff:127.0.0.1]:PORT/page", "http://2130706433:PORT/page",
        "http://0x7f.1:PORT/page", "http://127.1:PORT/page", "http://10.0.0.1/", "http://169.254.169.254/latest",
        "http://[::1]:PORT/page", "file:///etc/passwd",
    ],
)
async def test_web_fetch_checks_every_redirect_hop(server: RunningServer, ctx: ToolContext, site: str, target: str) -> None:
    from urllib.parse import quote

    ok, text = await run(server, ctx, "web_fetch", {"url": f"{site}/redirect?to={quote(target, safe='')}"})
    assert not ok and "refused" in text and "Welcome" not in text


@pytest.mark.config(web_fetch_allow_hosts="127.0.0.1", web_fetch_max_bytes=1000)
async def test_web_fetch_caps_responses_and_redirect_chains(server: RunningServer, ctx: ToolContext, site: str) -> None:
    ok, text = await run(server, ctx, "web_fetch", {"url": site + "/big"})
    assert ok and "truncated" in text and text.count("z") == 1000
    ok, text = await run(server, ctx, "web_fetch", {"url": site + "/loop"})
    assert not ok and "Too many redirects" in text
    ok, text = await run(server, ctx, "web_fetch", {"url": "ftp://127.0.0.1/"})
    assert not ok and "http and https" in text


# ---- routes ----------------------------------------------------------------------------------


async def tool_id(api: Any, name: str) -> str:
    r = await api.get("/api/v1/tools", token="alice")
    return next(t["id"] for t in r.data if t["name"] == name)


async def test_viewers_list_the_seeded_system_tools(api: Any, people: dict) -> None:
    r = await api.get("/api/v1/tools", token="carol")
    assert r.status == 200, r.body
    assert {t["name"] for t in r.data if t["source"] == "system"} == SYSTEM_TOOLS
    tool = next(t for t in r.data if t["name"] == "write_file")
    assert tool["source"] == "system" and tool["enabled"] is True and tool["disclosureTier"] == "core"
    assert tool["parameters"]["required"] == ["path", "content"] and tool["config"] == {}
    assert isinstance(tool["id"], str) and tool["createTime"].endswith("Z")
    r = await api.get(f"/api/v1/tools/{tool['id']}", token="carol")
    assert r.status == 200 and r.data["name"] == "write_file"
    assert (await api.get("/api/v1/tools")).status == 401
    assert (await api.get("/api/v1/tools", token="dave")).status == 403
    assert (await api.get("/api/v1/tools", token="dave", workspace=people["dave"]["workspace"])).status == 200
    r = await api.get("/api/v1/tools/123", token="carol")
    assert r.status == 404 and r.msg == "Tool not found"
    r = await api.get("/api/v1/tools/abc", token="carol")
    assert r.status == 400 and r.msg == "Invalid value for parameter 'id': expected Long"


async def test_enabled_and_available_follow_the_enabled_flag(server: RunningServer, api: Any, people: dict) -> None:
    registry_of(server).register(fake_tool("mcp_search", "mcp"))
    tid = await tool_id(api, "web_fetch")
    r = await api.put(f"/api/v1/tools/{tid}/toggle", {"enabled": False}, token="alice")
    assert r.status == 200 and r.data["enabled"] is False
    ours = ("system", "mcp")  # other areas register tools of their own sources
    enabled = {t["name"] for t in (await api.get("/api/v1/tools/enabled", token="bob")).data if t["source"] in ours}
    assert enabled == (SYSTEM_TOOLS - {"web_fetch"}) | {"mcp_search"}
    r = await api.get("/api/v1/tools/available", token="bob")
    assert {t["name"] for t in r.data if t["source"] in ours} == enabled - {"shell_exec"}  # a host tool not enabled here
    assert next(t for t in r.data if t["name"] == "mcp_search")["source"] == "mcp"
    registry_of(server).unregister("mcp_search")
    available = {t["name"] for t in (await api.get("/api/v1/tools/available", token="bob")).data}
    assert "mcp_search" not in available
    assert "web_fetch" not in [s.name for s in registry_of(server).specs_for([], False)]


async def test_only_a_global_admin_changes_tools(api: Any, people: dict) -> None:
    tid = await tool_id(api, "read_file")
    for who in ("bob", "carol"):
        assert (await api.put(f"/api/v1/tools/{tid}", {"description": "x"}, token=who)).status == 403
        assert (await api.put(f"/api/v1/tools/{tid}/toggle", {"enabled": False}, token=who)).status == 403
        assert (await api.put(f"/api/v1/tools/{tid}/disclosure-tier", {"tier": "extension"}, token=who)).status == 403
        assert (await api.delete(f"/api/v1/tools/{tid}", token=who)).status == 403
    r = await api.get(f"/api/v1/tools/{tid}", token="alice")
    assert r.data["description"] != "x" and r.data["enabled"] is True and r.data["disclosureTier"] == "core"


async def test_admin_updates_description_config_and_tier(server: RunningServer, api: Any, people: dict) -> None:
    tid = await tool_id(api, "read_file")
    r = await api.put(f"/api/v1/tools/{tid}", {"description": "Read a note", "config": {"k": 1}}, token="alice")
    assert r.status == 200, r.body
    assert r.data["description"] == "Read a note" and r.data["config"] == {"k": 1} and r.data["enabled"] is True
    spec = next(s for s in registry_of(server).specs_for(["read_file"], False))
    assert spec.description == "Read a note"
    r = await api.put(f"/api/v1/tools/{tid}/disclosure-tier", {"tier": "extension"}, token="alice")
    assert r.status == 200 and r.data["disclosureTier"] == "extension"
    r = await api.put(f"/api/v1/tools/{tid}", {"enabled": False}, token="alice")
    assert r.data["enabled"] is False and r.data["description"] == "Read a note"
    r = await api.get("/api/v1/audit/events", token="alice", params={"resourceType": "TOOL"})
    assert r.status == 200
    assert sum(1 for e in r.data["records"] if e["resourceType"] == "TOOL" and e["resourceId"] == tid) == 3


@pytest.mark.parametrize(
    "path, body, message",
    [
        ("", {"config": "nope"}, "config"),
        ("", {"enabled": "maybe"}, "enabled"),
        ("/toggle", {"enabled": "maybe"}, "enabled"),
        ("/disclosure-tier", {"tier": "hidden"}, "tier"),
        ("/disclosure-tier", {}, "tier"),
    ],
)
async def test_bad_tool_updates_are_400(api: Any, people: dict, path: str, body: dict, message: str) -> None:
    tid = await tool_id(api, "list_files")
    r = await api.put(f"/api/v1/tools/{tid}{path}", body, token="alice")
    assert r.status == 400 and r.msg.startswith(message), r.body
    r = await api.get(f"/api/v1/tools/{tid}", token="alice")
    assert r.data["enabled"] is True and r.data["disclosureTier"] == "core" and r.data["config"] == {}


async def test_system_tools_cannot_be_deleted_but_others_can(server: RunningServer, api: Any, people: dict) -> None:
    tid = await tool_id(api, "get_current_time")
    r = await api.delete(f"/api/v1/tools/{tid}", token="alice")
    assert r.status == 409 and r.msg == "System tools cannot be deleted"  # the tool's kind, not the request
    assert (await api.get(f"/api/v1/tools/{tid}", token="alice")).status == 200
    registry_of(server).register(fake_tool("mcp_search", "mcp"))
    mid = await tool_id(api, "mcp_search")
    r = await api.delete(f"/api/v1/tools/{mid}", token="alice")
    assert r.status == 200, r.body
    assert (await api.get(f"/api/v1/tools/{mid}", token="alice")).status == 404
    assert registry_of(server).get("mcp_search") is None
    assert (await api.delete(f"/api/v1/tools/{mid}", token="alice")).status == 404
