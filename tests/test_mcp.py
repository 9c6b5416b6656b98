"""MCP servers against real MCP servers (the SDK's server side over streamable HTTP, SSE and stdio)."""
from __future__ import annotations

import json
import pathlib
import socket
import subprocess
import sys
import time
from typing import Any, Iterator

import pytest

from platform_server.features.tools.registry import ToolContext, ToolRegistry
from tests.helpers.chat import chat_env
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually, eventually_sync
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.server import RunningServer, free_port

ROOT = pathlib.Path(__file__).resolve().parents[1]
SERVER_SCRIPT = str(ROOT / "tests" / "helpers" / "mcp_server.py")
SECRET = "sekrit-api-key-123"
TOOLS = {"add", "text.echo", "fail", "counter", "env_probe"}
ECHO = "mcp__docs__text_echo_"  # `text.echo` is not a valid function name: sanitized and hashed


class McpProcess:
    """The test MCP server as a subprocess on a fixed port (so it can be killed and restarted)."""

    def __init__(self, transport: str = "http", require: str | None = f"X-Api-Key={SECRET}") -> None:
        self.transport, self.require, self.port = transport, require, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'mcp' if self.transport == 'http' else 'sse'}"

    def start(self) -> "McpProcess":
        cmd = [sys.executable, SERVER_SCRIPT, self.transport, "--port", str(self.port)]
        if self.require:
            cmd += ["--require-header", self.require]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def listening() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError("MCP test server exited")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return True
            except OSError:
                return False

        eventually_sync(listening, interval=0.05, what="the MCP test server listening")
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def mcp_http() -> Iterator[McpProcess]:
    proc = McpProcess().start()
    yield proc
    proc.stop()


def registry_of(server: RunningServer) -> ToolRegistry:
    return server.platform.services.tools


async def run_tool(server: RunningServer, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    ctx = ToolContext(user_id=1, workspace_id=1, agent_id=1, conversation_id="c1",
                      agent_dir=pathlib.Path(server.config.data_dir) / "agents" / "1", config=server.config)
    outcome = await registry_of(server).execute(name, json.dumps(args), ctx)
    return outcome.success, outcome.result


def http_body(url: str, name: str = "docs", **extra: Any) -> dict[str, Any]:
    return {"name": name, "transport": "streamable_http", "url": url, "headers": {"X-Api-Key": SECRET}, **extra}


def stdio_body(name: str = "local", **extra: Any) -> dict[str, Any]:
    return {"name": name, "transport": "stdio", "command": sys.executable, "args": [SERVER_SCRIPT, "stdio"],
            "env": {"PROBE_TOKEN": "stdio-secret-value"}, **extra}


async def create(api: ApiClient, body: dict[str, Any], token: str = "alice") -> dict[str, Any]:
    r = await api.post("/api/v1/mcp/servers", body, token=token)
    assert r.status == 200, r.body
    return r.data


async def tool_rows(api: ApiClient) -> dict[str, dict[str, Any]]:
    r = await api.get("/api/v1/tools", token="alice")
    return {t["name"]: t for t in r.data}


# ---- connecting and discovery --------------------------------------------------------------


async def test_a_streamable_http_server_connects_with_its_headers_and_its_tools_join_the_registry(
        api: ApiClient, people: dict, server: RunningServer, mcp_http: McpProcess) -> None:
    data = await create(api, http_body(mcp_http.url, description="Docs search"))
    assert data["status"] == "connected" and data["error"] is None
    assert data["toolCount"] == len(TOOLS) and data["serverInfo"] == {"name": "test-mcp", "version": "1.2.3"}
    assert data["headers"] == {"X-Api-Key": "******"} and data["protocolVersion"]
    r = await api.get(f"/api/v1/mcp/servers/{data['id']}/tools", token="carol")
    assert r.status == 200 and {t["name"] for t in r.data} == TOOLS
    by_name = {t["name"]: t for t in r.data}
    assert by_name["add"]["toolName"] == "mcp__docs__add" and by_name["add"]["registered"] is True
    assert by_name["add"]["inputSchema"]["required"] == ["a", "b"] and by_name["add"]["toolId"]
    assert by_name["text.echo"]["toolName"].startswith(ECHO)
    available = await api.get("/api/v1/tools/available", token="bob")
    names = {t["name"] for t in available.data}
    assert {"mcp__docs__add", "mcp__docs__fail", by_name["text.echo"]["toolName"]} <= names
    rows = await tool_rows(api)
    assert rows["mcp__docs__add"]["source"] == "mcp" and rows["mcp__docs__add"]["config"]["mcpTool"] == "add"
    assert await run_tool(server, "mcp__docs__add", {"a": 2, "b": 40}) == (True, "42")
    assert await run_tool(server, by_name["text.echo"]["toolName"], {"text": "hi"}) == (True, "echo: hi")
    ok, text = await run_tool(server, "mcp__docs__fail", {"message": "boom"})
    assert not ok and "boom" in text
    assert await run_tool(server, "mcp__docs__counter", {}) != await run_tool(server, "mcp__docs__counter", {})


async def test_every_tool_name_is_a_valid_function_name_for_the_llm_providers(
        api: ApiClient, people: dict, mcp_http: McpProcess) -> None:
    data = await create(api, http_body(mcp_http.url, name="a-very-long-server-name1"))
    r = await api.get(f"/api/v1/mcp/servers/{data['id']}/tools", token="alice")
    import re

    names = [t["toolName"] for t in r.data]
    assert len(set(names)) == len(TOOLS)
    assert all(re.match(r"^[A-Za-z0-9_-]{1,64}$", n) for n in names), names


async def test_the_test_route_connects_initializes_and_lists_tools(
        api: ApiClient, people: dict, mcp_http: McpProcess) -> None:
    data = await create(api, http_body(mcp_http.url, enabled=False))
    assert data["status"] == "disabled"
    r = await api.post(f"/api/v1/mcp/servers/{data['id']}/test", token="alice")
    assert r.status == 200, r.body
    assert r.data["success"] is True and isinstance(r.data["latencyMs"], int)
    assert {t["name"] for t in r.data["tools"]} == TOOLS and "5 tools" in r.data["message"]
    assert r.data["serverInfo"]["name"] == "test-mcp" and r.data["protocolVersion"]


async def test_a_wrong_header_is_an_error_state_and_registers_nothing(
        api: ApiClient, people: dict, server: RunningServer, mcp_http: McpProcess) -> None:
    body = http_body(mcp_http.url)
    body["headers"] = {"X-Api-Key": "wrong"}
    data = await create(api, body)
    assert data["status"] == "error" and "401" in data["error"]
    r = await api.post(f"/api/v1/mcp/servers/{data['id']}/test", token="alice")
    assert r.data["success"] is False and "401" in r.data["message"] and r.data["tools"] == []
    assert not [n for n in registry_of(server).names() if n.startswith("mcp__")]
    r = await api.put(f"/api/v1/mcp/servers/{data['id']}", {"headers": {"X-Api-Key": SECRET}}, token="alice")
    assert r.data["status"] == "connected" and r.data["toolCount"] == len(TOOLS)


@pytest.mark.config(mcp_connect_timeout_s=1.0)
async def test_a_server_that_is_down_fails_fast_and_one_that_hangs_times_out(api: ApiClient, people: dict) -> None:
    dead = await create(api, http_body(f"http://127.0.0.1:{free_port()}/mcp", name="dead"))
    assert dead["status"] == "error" and dead["error"]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections, never answers
    try:
        started = time.monotonic()
        r = await api.post(f"/api/v1/mcp/servers/{dead['id']}/test", token="alice")
        assert r.data["success"] is False
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
        r = await api.put(f"/api/v1/mcp/servers/{dead['id']}", {"url": url}, token="alice")
        assert r.status == 200 and r.data["status"] == "error" and "Timed out" in r.data["error"]
        r = await api.post(f"/api/v1/mcp/servers/{dead['id']}/test", token="alice")
        assert r.data["success"] is False and "Timed out" in r.data["message"]
        assert time.monotonic() - started < 10
    finally:
        listener.close()


async def test_startup_does_not_wait_for_servers_and_connects_them_in_the_background(
        api: ApiClient, people: dict, server: RunningServer, mcp_http: McpProcess) -> None:
    from platform_server.features.mcp.manager import McpManager

    await create(api, http_body(mcp_http.url))
    await create(api, http_body(f"http://127.0.0.1:{free_port()}/mcp", name="dead"))
    old: McpManager = server.platform.services.mcp
    await old.stop()
    assert "mcp__docs__add" not in registry_of(server).names()
    fresh = McpManager(server.config, registry_of(server))
    server.platform.services.mcp = fresh
    started = time.monotonic()
    await fresh.start()
    assert time.monotonic() - started < 0.5

    async def settled() -> bool:
        r = await api.get("/api/v1/mcp/servers", token="alice")
        states = {s["name"]: s["status"] for s in r.data}
        assert states == {"docs": "connected", "dead": "error"}, states
        return True

    await eventually(settled, interval=0.05)
    assert "mcp__docs__add" in registry_of(server).names()


# ---- other transports --------------------------------------------------------------------


async def test_a_stdio_server_keeps_one_process_gets_its_env_and_secrets_stay_masked(
        api: ApiClient, people: dict, server: RunningServer) -> None:
    data = await create(api, stdio_body())
    assert data["status"] == "connected", data
    assert data["env"] == {"PROBE_TOKEN": "******"} and data["command"] == sys.executable
    assert (await api.put("/api/v1/workspaces/1", {"hostTools": ["mcp_stdio"]}, token="alice")).status == 200
    assert await run_tool(server, "mcp__local__env_probe", {"name": "PROBE_TOKEN"}) == (True, "stdio-secret-value")
    assert await run_tool(server, "mcp__local__counter", {}) == (True, "1")
    assert await run_tool(server, "mcp__local__counter", {}) == (True, "2")
    r = await api.put(f"/api/v1/mcp/servers/{data['id']}", {"env": {"PROBE_TOKEN": "******", "OTHER": "x"}}, token="alice")
    assert r.status == 200 and r.data["env"] == {"PROBE_TOKEN": "******", "OTHER": "******"}
    assert await run_tool(server, "mcp__local__env_probe", {"name": "PROBE_TOKEN"}) == (True, "stdio-secret-value")
    assert await run_tool(server, "mcp__local__counter", {}) == (True, "1")  # the update restarted the process
    for path in ("/api/v1/mcp/servers", f"/api/v1/mcp/servers/{data['id']}"):
        r = await api.get(path, token="alice")
        assert "stdio-secret-value" not in r.raw.decode()
    r = await api.get("/api/v1/audit/events", token="alice")
    assert r.status == 200 and "MCP_SERVER" in r.raw.decode() and "stdio-secret-value" not in r.raw.decode()


async def test_a_stdio_server_that_crashes_reports_its_stderr(api: ApiClient, people: dict) -> None:
    body = stdio_body(name="broken")
    body["args"] = ["-c", "import sys; sys.stderr.write('missing API token\\n'); sys.exit(2)"]
    data = await create(api, body)
    assert data["status"] == "error" and "missing API token" in data["error"]
    r = await api.post(f"/api/v1/mcp/servers/{data['id']}/test", token="alice")
    assert r.data["success"] is False and "missing API token" in r.data["message"]


async def test_an_sse_server_works_too(api: ApiClient, people: dict, server: RunningServer) -> None:
    proc = McpProcess("sse", require=None).start()
    try:
        data = await create(api, {"name": "legacy", "transport": "sse", "url": proc.url})
        assert data["status"] == "connected" and data["toolCount"] == len(TOOLS), data
        assert await run_tool(server, "mcp__legacy__add", {"a": 1, "b": 1}) == (True, "2")
    finally:
        proc.stop()


async def test_a_lost_connection_fails_the_call_clearly_and_refresh_reconnects(
        api: ApiClient, people: dict, server: RunningServer) -> None:
    proc = McpProcess().start()
    try:
        data = await create(api, http_body(proc.url, name="flaky"))
        assert data["status"] == "connected"
        proc.stop()
        ok, text = await run_tool(server, "mcp__flaky__add", {"a": 1, "b": 2})
        assert not ok and "flaky" in text
        proc.start()
        r = await api.post("/api/v1/mcp/servers/refresh", token="alice")
        assert r.status == 200 and [s["status"] for s in r.data] == ["connected"]
        assert await run_tool(server, "mcp__flaky__add", {"a": 1, "b": 2}) == (True, "3")
    finally:
        proc.stop()


async def test_a_stdio_server_runs_sandboxed_and_its_tools_only_where_a_global_admin_enabled_them(
        api: ApiClient, people: dict, server: RunningServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVER_ONLY_VALUE", "not-for-mcp")
    await create(api, stdio_body())
    ok, text = await run_tool(server, "mcp__local__env_probe", {"name": "HOME"})
    assert not ok and "not enabled in this workspace" in text  # workspace 1 has no mcp_stdio
    assert (await api.put("/api/v1/workspaces/1", {"hostTools": ["mcp_stdio"]}, token="alice")).status == 200
    assert await run_tool(server, "mcp__local__env_probe", {"name": "HOME"}) == (True, "/workspace")
    for name in ("SERVER_ONLY_VALUE", "USER", "LOGNAME"):  # nothing of the server's environment
        assert await run_tool(server, "mcp__local__env_probe", {"name": name}) == (True, "<unset>")
    ws = people["dave"]["workspace"]
    r = await api.post("/api/v1/agents", {"name": "D", "agentType": "react"}, token="dave", workspace=ws)
    r = await api.put(f"/api/v1/agents/{r.data['id']}/tools", {"toolNames": ["mcp__local__add"]}, token="dave", workspace=ws)
    assert r.status == 403 and "not enabled in this workspace" in r.body["msg"]


@pytest.mark.config(sandbox_bwrap_path="/nonexistent/bwrap")
async def test_without_the_sandbox_a_stdio_server_is_not_started(api: ApiClient, people: dict) -> None:
    data = await create(api, stdio_body())
    assert data["status"] == "error" and "sandbox is unavailable" in data["error"]
    r = await api.post(f"/api/v1/mcp/servers/{data['id']}/test", token="alice")
    assert r.data["success"] is False and "sandbox is unavailable" in r.data["message"]


# ---- chat ------------------------------------------------------------------------------------


async def test_an_agent_bound_to_an_mcp_tool_calls_it_through_the_chat_runtime(
        api: ApiClient, people: dict, llm: ScriptedOpenAI, mcp_http: McpProcess) -> None:
    await create(api, http_body(mcp_http.url))
    env = await chat_env(api, people, llm)
    r = await api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["mcp__docs__add"]}, token="alice")
    assert r.status == 200, r.body
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("mcp__docs__add", {"a": 20, "b": 22}, id="call_1")]),
                Script(text="It is 42."))
    events = await env.stream("what is 20 + 22?")
    offered = llm.requests[0]["tools"]
    assert [t["function"]["name"] for t in offered] == ["mcp__docs__add"]
    assert offered[0]["function"]["parameters"]["required"] == ["a", "b"]
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed == {"toolCallId": "call_1", "toolName": "mcp__docs__add", "result": "42", "success": True}
    tool_msgs = [m for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"] == "42"
    assert events[-1].data["status"] == "completed"


# ---- enable, disable, delete, tier -------------------------------------------------------------


async def test_disabling_unregisters_the_tools_and_enabling_brings_them_back(
        api: ApiClient, people: dict, server: RunningServer, mcp_http: McpProcess) -> None:
    data = await create(api, http_body(mcp_http.url))
    r = await api.put(f"/api/v1/mcp/servers/{data['id']}/toggle", {"enabled": False}, token="alice")
    assert r.status == 200 and r.data["status"] == "disabled" and r.data["enabled"] is False
    assert not [n for n in registry_of(server).names() if n.startswith("mcp__docs__")]
    available = await api.get("/api/v1/tools/available", token="alice")
    assert not [t for t in available.data if t["name"].startswith("mcp__")]
    ok, text = await run_tool(server, "mcp__docs__add", {"a": 1, "b": 2})
    assert not ok and "Unknown tool" in text
    r = await api.put(f"/api/v1/mcp/servers/{data['id']}/toggle", {"enabled": True}, token="alice")
    assert r.data["status"] == "connected"
    assert await run_tool(server, "mcp__docs__add", {"a": 1, "b": 2}) == (True, "3")


async def test_the_disclosure_tier_of_a_server_applies_to_all_its_tools(
        api: ApiClient, people: dict, mcp_http: McpProcess) -> None:
    data = await create(api, http_body(mcp_http.url, disclosureTier="extension"))
    rows = await tool_rows(api)
    assert {rows[n]["disclosureTier"] for n in rows if n.startswith("mcp__docs__")} == {"extension"}
    r = await api.put(f"/api/v1/mcp/servers/{data['id']}/disclosure-tier", {"tier": "core"}, token="alice")
    assert r.status == 200 and r.data["disclosureTier"] == "core"
    rows = await tool_rows(api)
    assert {rows[n]["disclosureTier"] for n in rows if n.startswith("mcp__docs__")} == {"core"}
    r = await api.put(f"/api/v1/mcp/servers/{data['id']}/disclosure-tier", {"tier": "hidden"}, token="alice")
    assert r.status == 400


async def test_deleting_a_server_used_by_an_agent_needs_force_and_removes_its_tools(
        api: ApiClient, people: dict, server: RunningServer, mcp_http: McpProcess) -> None:
    data = await create(api, http_body(mcp_http.url))
    r = await api.post("/api/v1/agents", {"name": "Calc", "agentType": "react"}, token="bob")
    agent_id = r.data["id"]
    await api.put(f"/api/v1/agents/{agent_id}/tools", {"toolNames": ["mcp__docs__add"]}, token="bob")
    r = await api.delete(f"/api/v1/mcp/servers/{data['id']}", token="alice")
    assert r.status == 409 and r.body["boundAgents"] == [{"id": agent_id, "name": "Calc"}] and r.body["message"]
    assert "mcp__docs__add" in registry_of(server).names()
    r = await api.delete(f"/api/v1/mcp/servers/{data['id']}?force=true", token="alice")
    assert r.status == 200, r.body
    assert not [n for n in registry_of(server).names() if n.startswith("mcp__docs__")]
    assert not [n for n in await tool_rows(api) if n.startswith("mcp__docs__")]
    r = await api.get(f"/api/v1/mcp/servers/{data['id']}", token="alice")
    assert r.status == 404
    events = await api.get("/api/v1/audit/events?resourceType=MCP_SERVER", token="alice")
    assert events.status == 200
    assert "DELETE" in events.raw.decode() and "CREATE" in events.raw.decode()


# ---- POST /api/v1/tools -------------------------------------------------------------------------


async def test_post_tools_exposes_one_mcp_tool_under_its_own_name(
        api: ApiClient, people: dict, server: RunningServer, mcp_http: McpProcess) -> None:
    data = await create(api, http_body(mcp_http.url))
    body = {"serverId": data["id"], "toolName": "add", "name": "calculator_add", "description": "Adds two numbers"}
    r = await api.post("/api/v1/tools", body, token="alice")
    assert r.status == 200, r.body
    assert r.data["name"] == "calculator_add" and r.data["source"] == "mcp"
    assert r.data["description"] == "Adds two numbers" and r.data["parameters"]["required"] == ["a", "b"]
    assert await run_tool(server, "calculator_add", {"a": 5, "b": 6}) == (True, "11")
    assert (await api.post("/api/v1/tools", body, token="alice")).status == 400  # name taken
    assert (await api.post("/api/v1/tools", {**body, "name": "x", "toolName": "nope"}, token="alice")).status == 400
    assert (await api.post("/api/v1/tools", {**body, "name": "bad name!"}, token="alice")).status == 400
    assert (await api.post("/api/v1/tools", {**body, "name": "other"}, token="bob")).status == 403
    missing = await api.post("/api/v1/tools", {**body, "serverId": "123", "name": "other"}, token="alice")
    assert missing.status == 404
    # it follows its server: refresh keeps it, disable unregisters it, delete removes it
    await api.post("/api/v1/mcp/servers/refresh", token="alice")
    assert await run_tool(server, "calculator_add", {"a": 1, "b": 1}) == (True, "2")
    await api.put(f"/api/v1/mcp/servers/{data['id']}/toggle", {"enabled": False}, token="alice")
    assert "calculator_add" not in registry_of(server).names()
    await api.delete(f"/api/v1/mcp/servers/{data['id']}", token="alice")
    assert "calculator_add" not in await tool_rows(api)


# ---- validation and permissions -----------------------------------------------------------------


async def test_bad_configurations_are_rejected(api: ApiClient, people: dict, mcp_http: McpProcess) -> None:
    cases = [
        http_body("ftp://127.0.0.1/mcp"),
        http_body("file:///etc/passwd"),
        http_body("http://user:pw@127.0.0.1/mcp"),
        http_body(""),
        {**http_body(mcp_http.url), "headers": {"Bad Header": "x"}},
        {**http_body(mcp_http.url), "headers": {"X-A": "line\r\nbreak"}},
        {**http_body(mcp_http.url), "name": "bad name"},
        {**http_body(mcp_http.url), "transport": "websocket"},
        {"name": "nocmd", "transport": "stdio"},
        {**stdio_body(), "env": {"1BAD": "x"}},
    ]
    for body in cases:
        r = await api.post("/api/v1/mcp/servers", body, token="alice")
        assert r.status == 400 and r.body["data"] is None, (body, r.body)
    data = await create(api, http_body(mcp_http.url))
    assert (await api.post("/api/v1/mcp/servers", http_body(mcp_http.url), token="alice")).status == 400
    r = await api.put(f"/api/v1/mcp/servers/{data['id']}", {"name": "renamed"}, token="alice")
    assert r.status == 400 and "name" in r.msg
    r = await api.put(f"/api/v1/mcp/servers/{data['id']}", {"headers": {"X-New": "******"}}, token="alice")
    assert r.status == 400
    assert (await api.get("/api/v1/mcp/servers/abc", token="alice")).status == 400
    assert (await api.get("/api/v1/mcp/servers/123", token="alice")).status == 404


async def test_only_a_global_admin_changes_servers_and_nobody_else_starts_stdio_ones(
        api: ApiClient, people: dict, mcp_http: McpProcess) -> None:
    data = await create(api, http_body(mcp_http.url))
    sid = data["id"]
    for token in ("bob", "carol", "dave"):
        workspace = people["dave"]["workspace"] if token == "dave" else None
        kw: dict[str, Any] = {"token": token, "workspace": workspace}
        assert (await api.post("/api/v1/mcp/servers", stdio_body(), **kw)).status == 403
        assert (await api.post("/api/v1/mcp/servers", http_body(mcp_http.url, name="x"), **kw)).status == 403
        assert (await api.put(f"/api/v1/mcp/servers/{sid}", {"description": "x"}, **kw)).status == 403
        assert (await api.put(f"/api/v1/mcp/servers/{sid}/toggle", {"enabled": False}, **kw)).status == 403
        assert (await api.put(f"/api/v1/mcp/servers/{sid}/disclosure-tier", {"tier": "core"}, **kw)).status == 403
        assert (await api.post(f"/api/v1/mcp/servers/{sid}/test", **kw)).status == 403
        assert (await api.post("/api/v1/mcp/servers/refresh", **kw)).status == 403
        assert (await api.delete(f"/api/v1/mcp/servers/{sid}", **kw)).status == 403
    r = await api.get("/api/v1/mcp/servers", token="carol")
    assert r.status == 200 and r.data[0]["headers"] == {"X-Api-Key": "******"} and SECRET not in r.raw.decode()
    assert (await api.get(f"/api/v1/mcp/servers/{sid}/tools", token="carol")).status == 200
    assert (await api.get("/api/v1/mcp/servers")).status == 401
    r = await api.get("/api/v1/mcp/servers", token="alice")
    assert [s["status"] for s in r.data] == ["connected"]
