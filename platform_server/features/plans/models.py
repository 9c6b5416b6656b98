"""Plan-execute plans and their steps."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, Migration, create_tables, utcnow


class Plan(BaseModel):
    agent_id = peewee.BigIntegerField(index=True)
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField()
    conversation_id = peewee.CharField()
    goal = peewee.TextField()
    status = peewee.CharField(default="running")  # running, completed, failed, stopped
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


class PlanStep(BaseModel):
    plan = peewee.ForeignKeyField(Plan, backref="steps", on_delete="CASCADE")
    step_index = peewee.IntegerField()
    description = peewee.TextField()
    status = peewee.CharField(default="pending")  # pending, running, completed, failed, stopped
    result = peewee.TextField(default="")
    started_at = DateTimeField(null=True)
    finished_at = DateTimeField(null=True)


MIGRATIONS: list[Migration] = [("plans_0001_tables", create_tables(Plan, PlanStep))]
