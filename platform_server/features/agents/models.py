"""Agents, their skill and tool bindings (workspace files live on disk under the data dir)."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow


class Agent(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    creator_user_id = peewee.BigIntegerField(null=True)
    name = peewee.CharField()
    description = peewee.TextField(default="")
    agent_type = peewee.CharField(default="react")  # react | plan_execute
    system_prompt = peewee.TextField(default="")
    model_provider = peewee.CharField(null=True)  # provider slug; null: resolved from modelName or the default
    model_name = peewee.CharField(default="")  # "" = the global default; may be "provider/model"
    max_iterations = peewee.IntegerField(default=10)
    enabled = BooleanField(default=True)
    icon = peewee.CharField(default="")
    tags = peewee.CharField(default="")  # comma-separated
    default_thinking_level = peewee.CharField(null=True)  # off | low | medium | high | max
    primary_kb_id = peewee.BigIntegerField(null=True)
    skills_disabled = BooleanField(default=False)
    tools_disabled = BooleanField(default=False)
    prompt_files = JSONField(default=list)  # ordered workspace-relative names appended to the system prompt
    provider_preferences = JSONField(default=list)  # ordered provider slugs to fail over to
    template_id = peewee.BigIntegerField(null=True)  # the template it was created from, if any
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "agent"


class AgentSkill(BaseModel):
    """A skill bound to an agent (skills are another area; no foreign key)."""

    agent = peewee.ForeignKeyField(Agent, backref="skill_bindings", on_delete="CASCADE")
    skill_id = peewee.BigIntegerField(index=True)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "agent_skill"
        indexes = ((("agent", "skill_id"), True),)


class AgentTool(BaseModel):
    """A tool (by registry name) bound to an agent, in the order it was given."""

    agent = peewee.ForeignKeyField(Agent, backref="tool_bindings", on_delete="CASCADE")
    tool_name = peewee.CharField()
    position = peewee.IntegerField(default=0)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "agent_tool"
        indexes = ((("agent", "tool_name"), True),)


MIGRATIONS: list[Migration] = [("agents_0001_tables", create_tables(Agent, AgentSkill, AgentTool))]
