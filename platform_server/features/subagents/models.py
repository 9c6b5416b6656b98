"""Sub-agent runs (delegations from one agent's turn to another agent) and spawn pauses."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, Migration, create_tables, utcnow


class SubagentRun(BaseModel):
    subagent_id = peewee.CharField(unique=True)
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField(index=True)
    conversation_id = peewee.CharField(index=True)  # the parent (public) conversation id
    parent_agent_id = peewee.BigIntegerField()
    agent_id = peewee.BigIntegerField()
    agent_name = peewee.CharField(default="")
    task = peewee.TextField()
    depth = peewee.IntegerField(default=1)
    status = peewee.CharField(default="running")  # running, completed, failed, interrupted
    result = peewee.TextField(default="")
    create_time = DateTimeField(default=utcnow)
    finished_at = DateTimeField(null=True)


class SpawnPause(BaseModel):
    user_id = peewee.BigIntegerField()
    conversation_id = peewee.CharField()
    paused = BooleanField(default=True)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("user_id", "conversation_id"), True),)


MIGRATIONS: list[Migration] = [("subagents_0001_tables", create_tables(SubagentRun, SpawnPause))]
