"""Agent templates: seeded presets an agent can be created from."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow


class AgentTemplate(BaseModel):
    name = peewee.CharField()
    description = peewee.TextField(default="")
    category = peewee.CharField(default="general")
    icon = peewee.CharField(default="")
    agent_type = peewee.CharField(default="react")
    system_prompt = peewee.TextField(default="")
    max_iterations = peewee.IntegerField(default=10)
    default_thinking_level = peewee.CharField(null=True)
    tags = peewee.CharField(default="")
    tool_names = JSONField(default=list)  # bound on apply
    prompt_files = JSONField(default=list)  # set on apply
    files = JSONField(default=dict)  # workspace-relative name -> text, written on apply
    builtin = BooleanField(default=True)
    sort_order = peewee.IntegerField(default=100)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "agent_template"


MIGRATIONS: list[Migration] = [("templates_0001_tables", create_tables(AgentTemplate))]
