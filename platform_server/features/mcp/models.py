"""MCP server configurations (global, like tools) and named tools that expose one MCP tool each."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow
from platform_server.sealed import SealedJSONField, seal_column


class McpServer(BaseModel):
    name = peewee.CharField(unique=True)  # slug; part of its tools' names, so it never changes
    description = peewee.TextField(default="")
    transport = peewee.CharField()  # streamable_http | sse | stdio
    url = peewee.TextField(default="")
    headers = SealedJSONField(default=dict)  # secret values: write-only
    command = peewee.TextField(default="")
    args = JSONField(default=list)
    env = SealedJSONField(default=dict)  # secret values: write-only
    enabled = BooleanField(default=True)
    disclosure_tier = peewee.CharField(default="core")
    tools = JSONField(default=list)  # last discovery: [{name, toolName, description, inputSchema}]
    server_info = JSONField(default=dict)  # {name, version, protocolVersion} of the last connection
    last_error = peewee.TextField(default="")
    last_connected_time = DateTimeField(null=True)
    creator_user_id = peewee.BigIntegerField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "mcp_server"


class McpToolAlias(BaseModel):
    """A tool created with `POST /api/v1/tools`: its own name and description, run by one server tool."""

    server = peewee.ForeignKeyField(McpServer, backref="aliases", on_delete="CASCADE")
    name = peewee.CharField(unique=True)  # registry / Tool name
    mcp_tool = peewee.CharField()  # the tool's name on the MCP server
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "mcp_tool_alias"


MIGRATIONS: list[Migration] = [
    ("mcp_0001_servers", create_tables(McpServer, McpToolAlias)),
    ("mcp_0002_seal_headers", seal_column("mcp_server", "headers")),
    ("mcp_0003_seal_env", seal_column("mcp_server", "env")),
]
