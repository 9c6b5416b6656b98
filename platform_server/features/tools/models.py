"""The Tool table: every tool an agent can bind (system built-ins, MCP, skills, ...)."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow

SOURCES = ("system", "mcp", "skill", "plugin", "custom")
TIERS = ("core", "extension")


class Tool(BaseModel):
    name = peewee.CharField(unique=True)
    description = peewee.TextField(default="")
    source = peewee.CharField(default="system", index=True)  # system | mcp | skill | ...
    enabled = BooleanField(default=True)
    disclosure_tier = peewee.CharField(default="core")  # core | extension
    parameters = JSONField(default=dict)  # JSON schema of the arguments object
    config = JSONField(default=dict)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


MIGRATIONS: list[Migration] = [("tools_0001_tool", create_tables(Tool))]
