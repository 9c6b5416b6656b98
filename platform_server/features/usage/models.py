"""One row per model call (chat or embedding), whoever made it: the source of every usage figure."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, Migration, create_tables, utcnow


class UsageRecord(BaseModel):
    workspace_id = peewee.BigIntegerField(null=True)  # None: a call made for no workspace (admin probes)
    source = peewee.CharField()  # chat, wiki, memory, dreaming, workflow, team, curator, skill_synthesis, goal, ...
    kind = peewee.CharField(default="chat")  # chat | embedding
    provider = peewee.CharField(null=True)
    model = peewee.CharField(null=True)
    user_id = peewee.BigIntegerField(null=True)
    agent_id = peewee.BigIntegerField(null=True)
    conversation_id = peewee.CharField(null=True)
    prompt_tokens = peewee.IntegerField(default=0)
    completion_tokens = peewee.IntegerField(default=0)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "usage_record"
        indexes = ((("workspace_id", "create_time"), False),)


MIGRATIONS: list[Migration] = [("usage_0001_records", create_tables(UsageRecord))]
