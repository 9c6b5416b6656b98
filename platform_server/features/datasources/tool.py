"""The read-only query tool (`query_datasource`), declared in handlers.py `AGENT_TOOLS`."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from platform_server.features.datasources import service
from platform_server.features.tools.registry import ToolDefinition

if TYPE_CHECKING:
    from platform_server.platform import Platform

QUERY_TOOL = {
    "type": "object",
    "properties": {
        "datasource": {"type": "string", "description": "Name of a datasource of this workspace"},
        "query": {"type": "string", "description": "A read-only SQL statement (sqlite) or a path to GET (http)"},
    },
    "required": ["datasource", "query"],
}


def agent_tools(platform: Platform) -> list[ToolDefinition]:
    return [
        ToolDefinition(
            name="query_datasource",
            description="Query a workspace datasource read-only (SQL for SQLite, GET for HTTP).",
            parameters=QUERY_TOOL,
            run=partial(service.query_tool, platform.config),
            source="datasource",
            min_role="member",  # the query route's role
        )
    ]
