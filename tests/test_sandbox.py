"""The sandbox of programs run for agents, from the attacker's side: a member's shell_exec in a workspace
where a global admin enabled it runs as another uid, sees nothing of the data directory or the server's
environment, has no network, hits its limits; no bwrap means no run; only a global admin enables host tools."""
from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Any

import pytest

from tests.helpers.chat import ChatEnv, make_agent
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.helpers.server import RunningServer

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/bwrap"), reason="bubblewrap (/usr/bin/bwrap) is not installed")


async def enable(api: ApiClient, workspace: str | int, *kinds: str, token: str = "alice") -> Any:
    return await api.put(f"/api/v1/workspaces/{workspace}", {"hostTools": list(kinds)}, token=token)


async def bob_shell(env: ChatEnv) -> str:
    """bob (a member) makes his own agent with shell_exec in workspace 1, where alice enabled shell; guard off."""
    assert (await enable(env.api, 1, "shell")).status == 200
    agent = await make_agent(env.api, token="bob", name="Bob's")
    r = await env.api.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["shell_exec"]}, token="bob")
    assert r.status == 200, r.body
    r = await env.api.put("/api/v1/security/guard/config", {"enabled": False}, token="alice")
    assert r.status == 200, r.body
    return agent


async def run_shell(env: ChatEnv, agent: str, command: str, conversation: str) -> dict[str, Any]:
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("shell_exec", {"command": command})]), Script(text="ok"))
    events = await env.api.sse("POST", "/api/v1/chat/stream",
                               {"agentId": agent, "conversationId": conversation, "message": "run it"}, token="bob")
    return next(e for e in events if e.event == "tool_call_completed").data


@pytest.mark.config(shell_exec_enabled=True)
async def test_a_members_shell_runs_as_another_uid_and_cannot_reach_the_data_directory(
        env: ChatEnv, server: RunningServer) -> None:
    agent = await bob_shell(env)
    data = os.path.realpath(server.config.data_dir)
    secret = pathlib.Path(data, "jwt_secret").read_text().strip()
    done = await run_shell(env, agent, f"id -u; ls {data}; cat {data}/jwt_secret; ls ..; ls /; pwd", "s1")
    text = done["result"]
    lines = text.splitlines()
    assert lines[1].strip() != str(os.getuid()) and lines[1].strip() == "65534"
    assert secret not in text and "platform.db" not in text
    assert "No such file or directory" in text  # the data directory is not there at all
    assert "/workspace" in text and "agents" not in text


@pytest.mark.config(shell_exec_enabled=True)
async def test_the_sandbox_environment_holds_nothing_of_the_servers(env: ChatEnv, server: RunningServer,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLATFORM_SERVER_ONLY", "server-env-value-123")
    agent = await bob_shell(env)
    done = await run_shell(env, agent, "env | base64 -w0", "s2")
    import base64
    decoded = base64.b64decode(done["result"].split("\n", 1)[1].strip()).decode()
    names = sorted(line.split("=", 1)[0] for line in decoded.splitlines() if "=" in line)
    assert "server-env-value-123" not in decoded and "PLATFORM_SERVER_ONLY" not in decoded
    assert set(names) <= {"HOME", "LANG", "PATH", "PWD", "SHLVL", "_", "OLDPWD"}, names
    assert "HOME=/workspace\n" in decoded and os.path.realpath(server.config.data_dir) not in decoded  # no host path


@pytest.mark.config(shell_exec_enabled=True)
async def test_the_network_is_off_unless_a_global_admin_allows_it(env: ChatEnv) -> None:
    agent = await bob_shell(env)
    done = await run_shell(env, agent, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '", "n1")
    assert done["result"].split("\n", 1)[1].split() == ["lo"]  # only the sandbox's own loopback
    assert (await enable(env.api, 1, "shell", "network")).status == 200
    done = await run_shell(env, agent, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '", "n2")
    assert len(done["result"].split("\n", 1)[1].split()) > 1  # the host's interfaces


@pytest.mark.config(shell_exec_enabled=True, sandbox_max_processes=16, sandbox_cpu_s=1, sandbox_memory_mb=256)
async def test_each_limit_ends_the_command_with_a_clear_error(env: ChatEnv) -> None:
    agent = await bob_shell(env)
    done = await run_shell(env, agent, "for i in $(seq 1 40); do sleep 5 & done; wait", "l1")
    assert done["success"] is False and "process limit was reached (16 processes" in done["result"]
    done = await run_shell(env, agent, "while :; do :; done", "l2")
    assert done["success"] is False and "CPU time limit was reached (1 s" in done["result"]
    done = await run_shell(env, agent, "python3 -c 'x = bytearray(512 * 1024 * 1024)'", "l3")
    assert done["success"] is False and "memory limit was reached (256 MiB" in done["result"]
    done = await run_shell(env, agent, "head -c 300M /dev/zero > /tmp/fill", "l4")  # /tmp is memory too
    assert done["success"] is False and "No space left on device" in done["result"]


@pytest.mark.config(shell_exec_enabled=True, sandbox_bwrap_path="/nonexistent/bwrap")
async def test_without_the_sandbox_the_command_is_refused_and_does_not_run(env: ChatEnv, server: RunningServer) -> None:
    agent = await bob_shell(env)
    done = await run_shell(env, agent, "touch ran.txt", "u1")
    assert done["success"] is False and "sandbox is unavailable" in done["result"] and "not run" in done["result"]
    assert not pathlib.Path(server.config.data_dir, "agents", agent, "workspace", "ran.txt").exists()


@pytest.mark.config(shell_exec_enabled=True)
async def test_files_the_agent_wrote_are_usable_by_the_shell_and_its_output_by_the_agent(env: ChatEnv, server: RunningServer) -> None:
    agent = await bob_shell(env)
    folder = pathlib.Path(server.config.data_dir, "agents", agent, "workspace")
    (folder / "notes").mkdir(parents=True, exist_ok=True)
    (folder / "notes" / "in.txt").write_text("written by the server\n")
    os.chmod(folder / "notes" / "in.txt", 0o600)
    done = await run_shell(env, agent, "cat notes/in.txt && echo made > notes/out.txt", "f1")
    assert done["success"] is True and "written by the server" in done["result"], done
    assert (folder / "notes" / "out.txt").read_text() == "made\n"


# ---- who may enable host tools --------------------------------------------------------------


async def test_a_workspace_owner_who_is_not_a_global_admin_cannot_enable_or_bind_host_tools(
        api: ApiClient, people: dict, env: ChatEnv) -> None:
    ws = people["dave"]["workspace"]
    r = await enable(api, ws, "shell", token="dave")
    assert r.status == 403 and r.body["code"] == 403 and "global admin" in r.body["msg"]
    r = await api.put(f"/api/v1/workspaces/{ws}", {"name": "renamed", "hostTools": []}, token="dave")
    assert r.status == 200 and r.data["hostTools"] == []  # unchanged hostTools: the rest of the update is his
    r = await api.post("/api/v1/agents", {"name": "Dave's", "agentType": "react"}, token="dave", workspace=ws)
    agent = r.data["id"]
    for tool in ("shell_exec", "acp_delegate"):
        r = await api.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["read_file", tool]}, token="dave", workspace=ws)
        assert r.status == 403 and r.body["code"] == 403 and "not enabled in this workspace" in r.body["msg"], r.body
    assert (await api.get(f"/api/v1/agents/{agent}/tools", token="dave", workspace=ws)).data == []
    r = await enable(api, ws, "shell", token="alice")
    assert r.status == 200 and r.data["hostTools"] == ["shell"]
    r = await api.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["shell_exec"]}, token="dave", workspace=ws)
    assert r.status == 200, r.body
    r = await enable(api, ws, "bogus", token="alice")
    assert r.status == 400 and "hostTools" in r.body["msg"]


@pytest.mark.config(shell_exec_enabled=True)
async def test_the_tools_list_shows_a_host_tool_as_not_enabled_where_it_is_not(api: ApiClient, people: dict) -> None:
    def row(data: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
        return next((t for t in data if t["name"] == name), None)

    tools = (await api.get("/api/v1/tools", token="bob")).data
    assert row(tools, "shell_exec")["hostTool"] == "shell" and row(tools, "shell_exec")["workspaceEnabled"] is False
    assert row(tools, "read_file")["hostTool"] is None and row(tools, "read_file")["workspaceEnabled"] is True
    assert row((await api.get("/api/v1/tools/available", token="bob")).data, "shell_exec") is None
    assert (await enable(api, 1, "shell")).status == 200
    assert row((await api.get("/api/v1/tools", token="bob")).data, "shell_exec")["workspaceEnabled"] is True
    assert row((await api.get("/api/v1/tools/available", token="bob")).data, "shell_exec") is not None


async def test_a_host_tool_not_enabled_here_is_not_offered_and_a_call_of_it_asks_no_approval(env: ChatEnv) -> None:
    r = await env.api.post("/api/v1/templates/1002/apply", token="bob")  # the Coder template binds shell_exec
    assert r.status == 200, r.body
    agent = r.data["id"]
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("shell_exec", {"command": "id"})]), Script(text="ok"))
    events = await env.api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "t1", "message": "id?"},
                               token="bob")
    offered = [t["function"]["name"] for t in env.llm.requests[0].get("tools", [])]
    assert "shell_exec" not in offered and "read_file" in offered
    assert "tool_approval_requested" not in [e.event for e in events]
    done = next(e for e in events if e.event == "tool_call_completed").data
    assert done["success"] is False and "not enabled in this workspace" in done["result"]


# ---- settings ---------------------------------------------------------------------------------


@pytest.mark.config(shell_exec_enabled=True, sandbox_network=True)
async def test_sandbox_network_gives_every_sandbox_the_network(env: ChatEnv) -> None:
    agent = await bob_shell(env)  # the workspace has shell but not network
    done = await run_shell(env, agent, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '", "n3")
    assert len(done["result"].split("\n", 1)[1].split()) > 1


@pytest.mark.config(shell_exec_enabled=True, sandbox_uid=64321)
async def test_sandbox_uid_owns_what_the_program_writes(env: ChatEnv, server: RunningServer) -> None:
    if os.geteuid() != 0:
        pytest.skip("the server drops to sandbox_uid only when it runs as root")
    agent = await bob_shell(env)
    done = await run_shell(env, agent, "echo x > owned.txt", "o1")
    assert done["success"] is True
    assert pathlib.Path(server.config.data_dir, "agents", agent, "workspace", "owned.txt").stat().st_uid == 64321


async def test_sandbox_ro_paths_are_seen_read_only_and_never_the_data_directory(
        env: ChatEnv, server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> None:
    shared = tmp_path_factory.mktemp("shared-tools")
    (shared / "tool.txt").write_text("shared tool\n")
    os.chmod(shared, 0o755)
    os.chmod(shared / "tool.txt", 0o644)
    data = os.path.realpath(server.config.data_dir)
    # the setting as if configured (the chat service was handed the config it runs turns with at start)
    server.platform.config = dataclasses.replace(server.config, shell_exec_enabled=True, sandbox_ro_paths=(str(shared), data))
    server.platform.services.chat.config = server.platform.config
    agent = await bob_shell(env)
    done = await run_shell(env, agent, f"cat {shared}/tool.txt; echo y > {shared}/new.txt; ls {data}", "r1")
    assert "shared tool" in done["result"] and "Read-only file system" in done["result"]
    assert "No such file or directory" in done["result"] and "jwt_secret" not in done["result"]
    assert not (shared / "new.txt").exists()


@pytest.mark.config(shell_exec_enabled=True, sandbox_uid=0)
async def test_a_root_sandbox_uid_is_refused_rather_than_run_as_root(env: ChatEnv, server: RunningServer) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a server running as root switches to sandbox_uid")
    agent = await bob_shell(env)
    done = await run_shell(env, agent, "touch ran.txt", "z1")
    assert done["success"] is False and "sandbox_uid must be a uid other than root's" in done["result"]
    assert not pathlib.Path(server.config.data_dir, "agents", agent, "workspace", "ran.txt").exists()
