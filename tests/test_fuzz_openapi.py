"""Schemathesis over /v3/api-docs with an admin token: no server error, no response outside its schema.

Bounded: a fixed seed and a few examples per operation (FUZZ_EXAMPLES, FUZZ_SEED override them).
Excluded operations and why (tests never send traffic off this machine, nor run fuzzed commands):
- routes that call a provider's base URL (test-connection, discover, model and embedding tests,
  reprobe) or a speech provider (stt, tts): the catalog's providers point at public hosts;
- MCP servers and ACP endpoints (connect to fuzzed URLs or spawn fuzzed commands), datasource
  tests, channel preflight, health checks and pairing (contact the configured URLs), skill installs from
  a URL or the hub, skill synthesis, workflow draft and agent generation (they run the default model, the
  embedded one on a fresh install: tens of seconds per call);
- browser-health launches a headless browser (up to 20 s) and exercises nothing fuzzable.
Chat streams stay in: without an existing agent they end at once with an `error` frame.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.server import RunningServer

ROOT = Path(__file__).resolve().parent.parent
EXCLUDE = (r"/test-connection$|/discover(/apply)?$|/models/test$|/embedding/\{modelId\}/test$|/reprobe$"
           r"|^/api/v1/(mcp|acp|stt|tts)/|/datasources/\{id\}/test$|^/api/v1/channels/(preflight|health)$"
           r"|^/api/v1/channels/\{id\}/health$|^/api/v1/skills/install/(start|hub/search)$"
           r"|^/api/v1/skills/synthesize-from-conversation$|^/api/v1/workflows/draft/generate$|^/api/v1/agents/generate$"
           r"|/system/browser-health$|^/api/v1/settings/proxy/test$|^/api/v1/agents/\{id\}/execute$"
           r"|^/api/v1/channels/qrcode/|^/api/v1/channels/webhook/im_[a-h]/(register|qrcode)")
ST = Path(sys.executable).with_name("st")


@pytest.mark.skipif(not ST.exists(), reason="schemathesis is not installed (pip install -e '.[test]')")
@pytest.mark.timeout(600)
async def test_fuzzing_the_openapi_document_finds_no_server_error_and_no_schema_violation(
    server: RunningServer, api: ApiClient, people: dict, tmp_path: Any
) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SCHEMATHESIS_HOOKS="tests.helpers.fuzz_checks")
    argv = [
        str(ST), "run", f"{server.url}/v3/api-docs",
        "-H", f"Authorization: Bearer {api.tokens['alice']}",
        "--checks", "no_server_error_but_business_codes,response_schema_conformance",
        "--phases", "examples,coverage,fuzzing",
        "--max-examples", os.environ.get("FUZZ_EXAMPLES", "5"),
        "--seed", os.environ.get("FUZZ_SEED", "20261122"),
        "--exclude-path-regex", EXCLUDE,
        "--request-timeout", "20",
        "--workers", "1",  # hypothesis parses lambdas with ast, which is not thread-safe here
        "--no-shrink",
        "--warnings", "off",
        "--report", "junit", "--report-dir", str(tmp_path),
    ]
    proc = await asyncio.create_subprocess_exec(*argv, cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await proc.communicate()
    text = out.decode("utf-8", "replace")
    if proc.returncode != 0:
        keep = ROOT / "test-artifacts"
        keep.mkdir(exist_ok=True)
        (keep / "schemathesis.txt").write_text(text)
        shutil.copytree(tmp_path, keep / "schemathesis-report", dirs_exist_ok=True)
    assert proc.returncode == 0, text[-6000:]
