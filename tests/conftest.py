"""Fixtures: a real server per test (fresh data dir, free port) and the named personas."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import pytest

from platform_server.app import collect_routes
from platform_server.web import inputs
from platform_server.web.openapi import build_document
from tests.helpers import postgres
from tests.helpers.chat import ChatEnv, chat_env
from tests.helpers.client import ApiClient
from tests.helpers.fake_openai import ScriptedOpenAI
from tests.helpers.openapi_inputs import undocumented, unlisted_statuses
from tests.helpers.server import RunningServer, create_personas, place_migrated_sqlite, start_server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "config(**settings): settings for the test's server")
    inputs.RECORDING = True  # the handlers note what they read; pytest_sessionfinish holds the document to it


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a handler read an input (query parameter, body) its OpenAPI operation does not state,
    or answered a status its operation does not list."""
    if not inputs.seen() and not inputs.statuses():
        return
    routes = collect_routes()
    document = build_document(routes)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for title, problems in (
        ("inputs read but not in the OpenAPI document (web/openapi_inputs.py or the handler's query_params):",
         undocumented(document, routes)),
        ("statuses answered but not in the OpenAPI document (web/openapi_statuses.py):", unlisted_statuses(document, routes)),
    ):
        if problems:
            for line in [title, *problems]:
                if reporter is not None:
                    reporter.write_line(line, red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
async def server(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[RunningServer]:
    marker = request.node.get_closest_marker("config")
    overrides = dict(marker.kwargs) if marker else {}
    if not postgres.selected() and "database_url" not in overrides:
        place_migrated_sqlite(str(tmp_path / "data"))
    running = await start_server(str(tmp_path / "data"), **overrides)
    try:
        yield running
    finally:
        await running.stop()
        if postgres.selected():
            await asyncio.to_thread(postgres.cluster().forget, running.config.data_dir)


@pytest.fixture
def api(server: RunningServer) -> ApiClient:
    return server.client


@pytest.fixture
async def people(api: ApiClient) -> dict[str, dict[str, Any]]:
    """alice (global admin), bob (member), carol (viewer), dave (another workspace); tokens under their names."""
    return await create_personas(api)


@pytest.fixture
async def llm(request: pytest.FixtureRequest) -> AsyncIterator[ScriptedOpenAI]:
    """A scripted OpenAI-compatible model server (echoes when nothing is scripted); a test module or
    test names the models it lists with `@pytest.mark.llm_models("a", "b")`."""
    marker = request.node.get_closest_marker("llm_models")
    server = ScriptedOpenAI(models=list(marker.args) if marker else None)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def env(api: ApiClient, people: dict[str, dict[str, Any]], llm: ScriptedOpenAI) -> ChatEnv:
    """People, the scripted model as the default, and one agent (alice's)."""
    return await chat_env(api, people, llm)


def _record_answers(folder: str) -> None:
    """RECORD_ANSWERS=<folder>: every 200 answer's data, by handler and method, one JSON line each (a tool for
    writing and checking the answer models; nothing in the suite reads it)."""
    import json
    import os

    from platform_server.web import base

    out = open(os.path.join(folder, f"answers-{os.getpid()}.jsonl"), "a", encoding="utf-8")  # noqa: SIM115
    plain_ok = base.ApiHandler.ok

    def ok(self: base.ApiHandler, data: object = None, msg: str = "success") -> None:
        try:
            value = json.loads(data.text) if isinstance(data, base.JsonText) else json.loads(base.dumps(data))
            handler = type(self)
            out.write(json.dumps({"h": f"{handler.__module__}.{handler.__qualname__}", "m": self.request.method, "d": value}) + "\n")
        except Exception:  # noqa: BLE001 - recording must never change an answer
            pass
        plain_ok(self, data, msg)

    base.ApiHandler.ok = ok  # type: ignore[method-assign]


if __import__("os").environ.get("RECORD_ANSWERS"):
    _record_answers(__import__("os").environ["RECORD_ANSWERS"])
