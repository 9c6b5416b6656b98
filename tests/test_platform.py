"""The platform contract (platform_server/platform.py): long-lived objects by typed key, and what areas declare as data."""
from __future__ import annotations

import pytest

from platform_server.app import drain
from platform_server.features.chat import CHAT
from platform_server.features.models import LLM
from platform_server.features.tools import TOOLS
from platform_server.features.tools.registry import ToolRegistry
from platform_server.platform import RuntimeKey, RuntimeMissing


async def test_each_runtime_is_stored_under_the_key_its_area_declares_and_an_unknown_key_is_refused(server) -> None:
    platform = server.platform
    assert isinstance(platform.runtime(TOOLS), ToolRegistry)
    assert platform.runtime(LLM) is platform.services.llm  # the by-name view tests and scripts use
    assert platform.find_runtime(RuntimeKey("nowhere")) is None
    with pytest.raises(RuntimeMissing, match="'nowhere' has not started"):
        platform.runtime(RuntimeKey("nowhere"))


async def test_the_agent_tools_areas_declare_in_handlers_py_are_registered_at_start(api, people) -> None:
    r = await api.get("/api/v1/tools", token="alice")
    assert r.status == 200, r.body
    names = {t["name"] for t in r.data}
    # one of each declaring area: tools, acp, datasources, media, subagents, teams, wiki
    assert {"tool_search", "acp_delegate", "query_datasource", "image_generate", "team_run", "delegate_to_agent", "wiki_search",
            "wiki_read"} <= names


async def test_the_flags_areas_declare_are_seeded_with_their_defaults(api, people) -> None:
    r = await api.get("/api/v1/feature-flags", token="alice")
    flags = {f["key"]: f["enabled"] for f in r.data}
    assert flags == {"talk_mode": False, "wiki": True, "dreaming": True, "workflows": True, "channels": True,
                     "skills_curator": True, "team_runs": True, "wiki.hot_cache.enabled": True}


async def test_a_graceful_stop_drains_through_the_declared_hooks_and_reports_nothing_left_when_idle(server) -> None:
    assert server.platform.runtime(CHAT).turns.running() == []
    assert await drain(server.platform, 1.0) == 0
