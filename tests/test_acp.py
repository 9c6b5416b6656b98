"""ACP endpoints: built-ins, custom endpoint CRUD, and the real `initialize` handshake with a test agent."""
from __future__ import annotations

import os
import pathlib
import sys
from typing import Any

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer

AGENT = str(pathlib.Path(__file__).resolve().parent / "helpers" / "acp_agent.py")
BUILTINS = {"claude-code", "gemini-cli", "codex"}


def agent_body(name: str = "test-agent", mode: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"name": name, "displayName": "Test agent", "command": sys.executable, "args": [AGENT, "--mode", mode], **extra}


async def create(api: ApiClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await api.post("/api/v1/acp/endpoints", body, token="alice")
    assert r.status == 200, r.body
    return r.data


async def test_built_in_endpoints_are_seeded_disabled_and_cannot_be_deleted_or_renamed(api: ApiClient, people: dict) -> None:
    r = await api.get("/api/v1/acp/endpoints", token="carol")
    assert r.status == 200
    builtins = [e for e in r.data if e["builtin"]]
    assert {e["name"] for e in builtins} == BUILTINS and not any(e["enabled"] for e in builtins)
    gemini = next(e for e in builtins if e["name"] == "gemini-cli")
    assert gemini["command"] == "gemini" and gemini["args"] == ["--experimental-acp"]
    r = await api.delete(f"/api/v1/acp/endpoints/{gemini['id']}", token="alice")
    assert r.status == 400 and "Built-in" in r.msg
    r = await api.put(f"/api/v1/acp/endpoints/{gemini['id']}", {"name": "other"}, token="alice")
    assert r.status == 400
    r = await api.put(f"/api/v1/acp/endpoints/{gemini['id']}", {"env": {"GEMINI_API_KEY": "k-123"}}, token="alice")
    assert r.status == 200 and r.data["env"] == {"GEMINI_API_KEY": "******"}
    r = await api.put(f"/api/v1/acp/endpoints/{gemini['id']}/toggle", {"enabled": True}, token="alice")
    assert r.status == 200 and r.data["enabled"] is True
    r = await api.get(f"/api/v1/acp/endpoints/{gemini['id']}", token="bob")
    assert r.data["enabled"] is True and "k-123" not in r.raw.decode()


async def test_the_test_route_spawns_the_agent_and_does_the_initialize_handshake(
        api: ApiClient, people: dict, server: RunningServer) -> None:
    data = await create(api, agent_body(cwd="projects/demo", env={"ACP_MARKER": "marker-secret"}))
    assert data["env"] == {"ACP_MARKER": "******"} and data["cwd"] == "projects/demo" and data["builtin"] is False
    r = await api.post(f"/api/v1/acp/endpoints/{data['id']}/test", token="alice")
    assert r.status == 200, r.body
    assert r.data["success"] is True and r.data["protocolVersion"] == 1 and r.data["latencyMs"] >= 0
    assert r.data["agentInfo"]["name"] == "test-acp-agent"
    assert "platform-server" in r.data["agentInfo"]["title"]  # the agent saw our clientInfo
    assert r.data["agentCapabilities"]["loadSession"] is False
    marker = pathlib.Path(server.config.data_dir, "acp", "1", "projects", "demo", "acp-agent-was-here")  # workspace 1's
    assert marker.read_text() == "marker-secret"  # ran in its confined folder with its env
    r = await api.get(f"/api/v1/acp/endpoints/{data['id']}", token="alice")
    assert r.data["lastTest"]["success"] is True and r.data["lastTest"]["protocolVersion"] == 1
    assert "marker-secret" not in r.raw.decode()


@pytest.mark.config(sandbox_bwrap_path="/nonexistent/bwrap")
async def test_without_the_sandbox_the_agent_is_not_started(api: ApiClient, people: dict, server: RunningServer) -> None:
    data = await create(api, agent_body(cwd="projects/nosbx", env={"ACP_MARKER": "ran"}))
    r = await api.post(f"/api/v1/acp/endpoints/{data['id']}/test", token="alice")
    assert r.status == 200 and r.data["success"] is False and "sandbox is unavailable" in r.data["message"]
    assert not pathlib.Path(server.config.data_dir, "acp", "1", "projects", "nosbx", "acp-agent-was-here").exists()


async def test_an_agent_that_logs_and_asks_the_client_first_still_completes_the_handshake(api: ApiClient, people: dict) -> None:
    data = await create(api, agent_body(mode="noise"))
    r = await api.post(f"/api/v1/acp/endpoints/{data['id']}/test", token="alice")
    assert r.data["success"] is True, r.data


@pytest.mark.config(acp_test_timeout_s=1.0)
async def test_failed_handshakes_say_why(api: ApiClient, people: dict) -> None:
    cases = {
        "hang": "No answer to initialize within 1 seconds",
        "error": "error -32602: unsupported client",
        "exit": "fatal: no credentials configured",
    }
    for mode, expected in cases.items():
        data = await create(api, agent_body(name=f"agent-{mode}", mode=mode))
        r = await api.post(f"/api/v1/acp/endpoints/{data['id']}/test", token="alice")
        assert r.status == 200 and r.data["success"] is False, r.data
        assert expected in r.data["message"] and r.data["protocolVersion"] is None, r.data
    data = await create(api, {"name": "missing", "command": "definitely-not-installed-acp-agent"})
    r = await api.post(f"/api/v1/acp/endpoints/{data['id']}/test", token="alice")
    assert r.data["success"] is False and "not found" in r.data["message"]
    builtin = next(e for e in (await api.get("/api/v1/acp/endpoints", token="alice")).data if e["name"] == "gemini-cli")
    env = {"PATH": "/nonexistent"}
    await api.put(f"/api/v1/acp/endpoints/{builtin['id']}", {"env": env}, token="alice")
    r = await api.post(f"/api/v1/acp/endpoints/{builtin['id']}/test", token="alice")
    assert r.data["success"] is False and r.data["latencyMs"] >= 0


@pytest.mark.config(acp_test_timeout_s=1.0)
async def test_no_agent_process_outlives_a_test(api: ApiClient, people: dict) -> None:
    before = _agent_pids()
    for mode in ("hang", "ok"):
        data = await create(api, agent_body(name=f"agent-{mode}", mode=mode))
        r = await api.post(f"/api/v1/acp/endpoints/{data['id']}/test", token="alice")
        assert r.data["success"] is (mode == "ok")
    assert _agent_pids() <= before


def _agent_pids() -> set[int]:
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = pathlib.Path("/proc", entry, "cmdline").read_bytes()
            except OSError:
                continue
            if b"acp_agent.py" in cmd:
                pids.add(int(entry))
    return pids


async def test_custom_endpoints_crud_and_validation(api: ApiClient, people: dict) -> None:
    data = await create(api, agent_body())
    eid = data["id"]
    bad = [
        {**agent_body(name="x1"), "cwd": "../outside"},
        {**agent_body(name="x2"), "cwd": "/etc"},
        {**agent_body(name="x3"), "cwd": "a/../../b"},
        {**agent_body(name="x4"), "env": {"BAD-NAME": "1"}},
        {**agent_body(name="x5"), "command": ""},
        agent_body(name="bad name"),
        agent_body(),  # the name is taken
    ]
    for body in bad:
        r = await api.post("/api/v1/acp/endpoints", body, token="alice")
        assert r.status == 400 and r.body["data"] is None, (body, r.body)
    r = await api.put(f"/api/v1/acp/endpoints/{eid}", {"name": "renamed", "description": "mine", "cwd": "a/./b/"}, token="alice")
    assert r.status == 200 and r.data["name"] == "renamed" and r.data["cwd"] == "a/b"
    r = await api.put(f"/api/v1/acp/endpoints/{eid}", {"name": "gemini-cli"}, token="alice")
    assert r.status == 400
    r = await api.put(f"/api/v1/acp/endpoints/{eid}/toggle", {"enabled": False}, token="alice")
    assert r.data["enabled"] is False
    flipped = await api.put(f"/api/v1/acp/endpoints/{eid}/toggle", {}, token="alice")  # no value: a flip, as every toggle
    assert flipped.status == 200 and flipped.data["enabled"] is True, flipped.body
    r = await api.delete(f"/api/v1/acp/endpoints/{eid}", token="alice")
    assert r.status == 200
    assert (await api.get(f"/api/v1/acp/endpoints/{eid}", token="alice")).status == 404
    assert (await api.get("/api/v1/acp/endpoints/nope", token="alice")).status == 400
    events = await api.get("/api/v1/audit/events?resourceType=ACP_ENDPOINT", token="alice")
    assert {e["action"] for e in events.data["records"]} >= {"CREATE", "UPDATE", "DELETE"}


async def test_a_symlink_cannot_lead_the_working_folder_outside(api: ApiClient, people: dict, server: RunningServer,
                                                                tmp_path: pathlib.Path) -> None:
    root = pathlib.Path(server.config.data_dir, "acp", "1")  # workspace 1's folder of endpoints
    root.mkdir(parents=True, exist_ok=True)
    (root / "escape").symlink_to(tmp_path)
    data = await create(api, agent_body(cwd="escape/sub"))
    r = await api.post(f"/api/v1/acp/endpoints/{data['id']}/test", token="alice")
    assert r.status == 400 and "outside" in r.msg
    assert not (tmp_path / "sub").exists()  # refused before any folder is made outside


async def test_only_a_global_admin_changes_or_tests_endpoints(api: ApiClient, people: dict) -> None:
    data = await create(api, agent_body())
    eid = data["id"]
    for token in ("bob", "carol", "dave"):
        kw: dict[str, Any] = {"token": token, "workspace": people["dave"]["workspace"] if token == "dave" else None}
        assert (await api.post("/api/v1/acp/endpoints", agent_body(name="z"), **kw)).status == 403
        assert (await api.put(f"/api/v1/acp/endpoints/{eid}", {"description": "x"}, **kw)).status == 403
        assert (await api.put(f"/api/v1/acp/endpoints/{eid}/toggle", {"enabled": False}, **kw)).status == 403
        assert (await api.post(f"/api/v1/acp/endpoints/{eid}/test", **kw)).status == 403
        assert (await api.delete(f"/api/v1/acp/endpoints/{eid}", **kw)).status == 403
    assert (await api.get("/api/v1/acp/endpoints", token="carol")).status == 200
    assert (await api.get("/api/v1/acp/endpoints")).status == 401
