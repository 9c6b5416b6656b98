"""Schemathesis over /v3/api-docs with an admin token, every phase (stateful included) and its checks.

The checks run with four replaced by this API's own versions (tests/helpers/fuzz_checks.py):
the stock server-error check by one that allows the spec's business codes (HTTP 500 with 1001-4001), the
valid-input one by one that also takes the 400s the spec itself fixes for valid input (DOCUMENTED_REFUSALS), and on
SSE operations, which answer every error as a 200 `error` frame (decisions.md), negative_data_rejection and
ignored_auth by the same checks read from that frame. Each request gets a fresh Idempotency-Key, and a reset of
the fuzzing admin's own password goes to bob's (it would end the token every later request carries).
Bounded: a fixed seed and a few examples per operation (FUZZ_EXAMPLES, FUZZ_SEED override them).
Every check runs, at 0 failures: a request the document allows but whose rule OpenAPI 3.0 cannot state (a rule on
an object's keys, the order of a pipeline's steps, a date a cron pattern names) may be refused only as a 422 that
the operation documents (fuzz_checks.UNPROCESSABLE). Another seed: FUZZ_SEED=<n>; only the operations whose path
matches a regex: FUZZ_ONLY=<regex>.
Excluded operations and why (tests never send traffic off this machine, nor run fuzzed commands):
- routes that call a provider's base URL (test-connection, discover, model and embedding tests,
  reprobe) or a speech provider (stt, tts): the catalog's providers point at public hosts;
- MCP servers and ACP endpoints (connect to fuzzed URLs or spawn fuzzed commands), datasource
  tests, channel preflight, health checks and pairing (contact the configured URLs), skill installs from
  a URL or the hub, skill synthesis, workflow draft and agent generation, an agent's synchronous chat (`POST /chat`
  too: its body requires an agent id now, which the stateful phase fills with a real one) and Plan-Execute run
  (they run the default model, the embedded one on a fresh install: tens of seconds per call, past the 20 s
  request timeout);
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
           r"|/system/browser-health$|^/api/v1/settings/proxy/test$|^/api/v1/agents/\{id\}/(execute|chat)$|^/api/v1/chat$"
           r"|^/api/v1/channels/qrcode/|^/api/v1/channels/webhook/im_[a-h]/(register|qrcode)")
ST = Path(sys.executable).with_name("st")


def sse_operations(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, path) of the operations answering only text/event-stream: their errors are 200 `error` frames."""
    return [
        (method.upper(), path)
        for path, ops in document["paths"].items()
        for method, op in ops.items()
        if set(op["responses"].get("200", {}).get("content", {})) == {"text/event-stream"}
    ]


def fuzz_config(document: dict[str, Any]) -> str:
    """schemathesis.toml: every check but the stock server-error and valid-input ones (fuzz_checks has this API's
    versions: the spec's business codes, the 400s the spec fixes for valid input, the documented 422s); on SSE
    operations the checks that read the HTTP status give way to their frame-reading versions (fuzz_checks)."""
    off = ["not_a_server_error", "positive_data_acceptance"]
    # A live stream (dream events, a team board) is read for its first few events only
    blocks = ["max-stream-events = 5\n\n[checks]\nenabled = true\n" + "".join(f"{name}.enabled = false\n" for name in off)]
    for method, path in sse_operations(document):
        blocks.append(  # one operation by its exact name (include-* keys of one block would be alternatives)
            f"[[operations]]\ninclude-name = '{method} {path}'\nchecks.negative_data_rejection.enabled = false\n"
            "checks.ignored_auth.enabled = false\nchecks.missing_required_header.enabled = false\n"
            # 3.0 cannot say that a frame's `data` is JSON text (3.1's contentMediaType/contentSchema), so
            # schemathesis would compare the raw string with the event's object schema; the test client
            # parses and checks every frame the suite reads against that schema (tests/helpers/sse_frames.py)
            "checks.response_schema_conformance.enabled = false\n"
        )
    return "\n".join(blocks)


@pytest.mark.skipif(not ST.exists(), reason="schemathesis is not installed (pip install -e '.[test]')")
@pytest.mark.timeout(1500)  # about 12 min with the machine at load 14 (two cores shared by nine)
async def test_fuzzing_the_openapi_document_finds_no_server_error_and_no_schema_violation(
    server: RunningServer, api: ApiClient, people: dict, tmp_path: Any
) -> None:
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        SCHEMATHESIS_HOOKS="tests.helpers.fuzz_checks",
        FUZZ_SELF_ID=str(people["alice"]["id"]),
        FUZZ_STAND_IN_ID=str(people["bob"]["id"]),
    )
    config = tmp_path / "schemathesis.toml"
    config.write_text(fuzz_config((await api.get("/v3/api-docs")).body))
    argv = [
        str(ST), "--config-file", str(config), "run", f"{server.url}/v3/api-docs",
        "-H", f"Authorization: Bearer {api.tokens['alice']}",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", os.environ.get("FUZZ_EXAMPLES", "5"),
        "--seed", os.environ.get("FUZZ_SEED", "20261122"),
        "--exclude-path-regex", EXCLUDE,
        *(("--include-path-regex", os.environ["FUZZ_ONLY"]) if os.environ.get("FUZZ_ONLY") else ()),  # re-check a few
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
        # the report, not the fuzzed server's data dir (a skill's folders there made copytree fail and hide the report)
        shutil.copytree(tmp_path, keep / "schemathesis-report", dirs_exist_ok=True, ignore=shutil.ignore_patterns("data"))
    assert proc.returncode == 0, text[-6000:]


async def test_the_fuzz_config_gives_every_sse_operation_its_frame_checks(api: ApiClient, people: dict) -> None:
    import tomllib

    document = (await api.get("/v3/api-docs")).body
    config = tomllib.loads(fuzz_config(document))
    names = {op["include-name"] for op in config["operations"]}
    assert "POST /api/v1/chat/stream" in names and "GET /api/v1/memory/{agentId}/dream/events" in names
    assert names == {f"{m} {p}" for m, p in sse_operations(document)}
    assert "POST /api/v1/openai/v1/chat/completions" not in names  # JSON or a stream: its errors are real statuses
    assert config["checks"]["not_a_server_error"] == {"enabled": False}
    assert config["checks"]["positive_data_acceptance"] == {"enabled": False}  # fuzz_checks' version replaces it
    # every other check runs: the three that were off until their failures were fixed included
    for name in ("positive_data_acceptance_but_documented_refusals", "negative_data_rejection", "content_type_conformance"):
        assert name not in config["checks"], name


def test_each_fuzzed_request_gets_its_own_idempotency_key() -> None:
    from tests.helpers import fuzz_checks

    class Case:
        path = "/api/v1/agents"
        path_parameters: dict[str, str] = {}

        def __init__(self, key: str) -> None:
            self.headers = {"Idempotency-Key": key}

        def _sync_validated_hashes(self) -> None:
            pass

    keys = []
    for _ in range(3):
        case = Case("a")
        fuzz_checks.before_call(None, case)
        keys.append(case.headers["Idempotency-Key"])
    assert len(set(keys)) == 3 and all(fuzz_checks._valid_key(k) for k in keys)
    bad = Case("\x01")  # a key made invalid on purpose stays, so its 400 is still checked
    fuzz_checks.before_call(None, bad)
    assert bad.headers["Idempotency-Key"] == "\x01"


def test_the_fuzzer_draws_zips_that_both_zip_uploads_take(tmp_path: Any) -> None:
    """One media type has one generator: the ZIPs drawn for `application/zip` must be skill archives (one SKILL.md
    with its `name:`) and memory exports at once, or one of the two uploads only ever sees refusals."""
    from hypothesis import HealthCheck, given, settings
    from schemathesis.core.media_types import MEDIA_TYPE_STRATEGIES

    from platform_server.features.agents import memory
    from platform_server.features.skills import install
    from tests.helpers import fuzz_checks  # noqa: F401 - registers the generator

    @settings(max_examples=40, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(MEDIA_TYPE_STRATEGIES["application/zip"])
    def check(archive: bytes) -> None:
        assert install.read_zip(archive).content.startswith("---\nname: ")
        plan = memory.plan_import(tmp_path, archive, read_contents=True)
        assert all(e.action != "refused" or not memory.is_memory_path(e.path) for e in plan.entries)

    check()


def test_a_path_value_that_breaks_its_parameters_schema_is_not_counted_as_valid_input() -> None:
    """The stateful phase infers a link from the OpenAI models list (ids are model names) into `/models/{id}`
    (a Long): the 400 it gets is right, and the check must not count that request as a valid one refused."""
    from tests.helpers.fuzz_checks import breaks_its_path_parameters

    class Parameter:
        name = "id"
        definition = {"name": "id", "in": "path", "schema": {"type": "string", "pattern": "^-?[0-9]{1,18}$"}}

    class Case:
        class operation:  # noqa: N801 - schemathesis' attribute name
            path_parameters = [Parameter()]

        path_parameters: dict[str, Any] = {"id": "0-384612930"}

    assert breaks_its_path_parameters(Case())
    Case.path_parameters = {"id": "384612930"}
    assert not breaks_its_path_parameters(Case())
    Case.path_parameters = {"id": 384612930}  # an integer carried over is text in the path
    assert not breaks_its_path_parameters(Case())
    Case.path_parameters = {"id": None}  # seed 101's stateful phase: a null carried over is sent as `None`
    assert breaks_its_path_parameters(Case())
