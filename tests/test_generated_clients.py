"""Clients generated from the served document by tools nobody here wrote: openapi-python-client generates
without a warning and scripts/client_demo.py, using only the generated package, logs in, lists and creates
agents, chats (not streaming) and lists conversations; openapi-typescript's types compile under `tsc --noEmit`
(strict) with 0 errors, together with a file that uses them."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.server import PASSWORD, RunningServer

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = Path(sys.executable).with_name("openapi-python-client")
TS_TOOLS = ROOT / "tools" / "openapi-ts"
TSC = TS_TOOLS / "node_modules" / ".bin" / "tsc"
OPENAPI_TS = TS_TOOLS / "node_modules" / ".bin" / "openapi-typescript"


async def _run(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """A command, off this test's event loop (which serves the platform the command may call)."""
    proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode("utf-8", "replace")


@pytest.mark.skipif(not GENERATOR.exists(), reason="openapi-python-client is not installed (pip install -e '.[test]')")
@pytest.mark.timeout(300)
async def test_the_generated_python_client_runs_login_agents_chat_and_conversations(server: RunningServer, env: ChatEnv,
                                                                                    tmp_path: Any) -> None:
    # the generator formats its output with ruff, which it looks for on PATH
    path = os.pathsep.join([str(GENERATOR.parent), os.environ.get("PATH", "")])
    code, out = await _run(str(GENERATOR), "generate", "--url", f"{server.url}/v3/api-docs",
                           "--output-path", "agent_platform_client", "--meta", "none",
                           "--config", str(ROOT / "tools" / "openapi-python-client" / "config.yaml"), cwd=tmp_path,
                           env=dict(os.environ, PATH=path))
    assert code == 0, out
    assert "warning" not in out.lower() and "unable" not in out.lower(), out
    code, out = await _run(sys.executable, str(ROOT / "scripts" / "client_demo.py"), server.url, "alice", PASSWORD,
                           cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert code == 0, out
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert [step["step"] for step in lines[:-1]] == ["login", "agents_list", "agents_create", "agents_list", "chat",
                                                      "conversations_list"]
    summary = lines[-1]
    assert summary["agentsAfter"] == summary["agentsBefore"] + 1
    assert "Hello from the generated client" in json.dumps(summary["reply"])  # the scripted model echoes
    assert "generated-client" in json.dumps(summary["conversations"])


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: the TypeScript types cannot be generated")
@pytest.mark.skipif(not TSC.exists() or not OPENAPI_TS.exists(),
                    reason="tools/openapi-ts has no node_modules: run scripts/install (npm ci in tools/openapi-ts)")
@pytest.mark.timeout(300)
async def test_the_generated_typescript_types_compile_without_errors(server: RunningServer, tmp_path: Any) -> None:
    code, out = await _run(str(OPENAPI_TS), f"{server.url}/v3/api-docs", "-o", str(tmp_path / "api.d.ts"), cwd=TS_TOOLS)
    assert code == 0, out
    (tmp_path / "use.ts").write_text(
        'import type { paths, components } from "./api";\n'
        'type Login = paths["/api/v1/auth/login"]["post"]["requestBody"]["content"]["application/json"];\n'
        'type Kbs = paths["/api/v1/agents/{agentId}/kbs"]["put"]["requestBody"]["content"]["application/json"];\n'
        'type Password = paths["/api/v1/auth/users/{id}/password"]["put"]["parameters"]["query"];\n'
        'const login: Login = { username: "alice", password: "secret" };\n'
        'const kbs: Kbs = ["1", "2"];\n'
        'const change: Password = { oldPassword: "a", newPassword: "b" };\n'
        'export const all: [Login, Kbs, Password, components["schemas"]["Error"] | null] = [login, kbs, change, null];\n'
        # an SSE frame is typed by its event name: narrowing on `event` gives `data` its model
        'type Frame = paths["/api/v1/chat/stream"]["post"]["responses"][200]["content"]["text/event-stream"];\n'
        'export function text(frame: Frame): string {\n'
        '  if (frame.event === "content_delta") return frame.data.delta;\n'
        '  if (frame.event === "done") return frame.data.status + (frame.data.finishReason ?? "");\n'
        '  return "";\n'
        '}\n'
        'export const delta: Frame = { event: "content_delta", id: "7", data: { delta: "Hi" } };\n'
    )
    (tmp_path / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"strict": True, "noEmit": True, "target": "es2020", "module": "es2020",
                            "moduleResolution": "node"},
        "files": ["api.d.ts", "use.ts"],
    }))
    code, out = await _run(str(TSC), "--noEmit", "-p", str(tmp_path / "tsconfig.json"), cwd=tmp_path)
    assert code == 0, out
