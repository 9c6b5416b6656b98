"""Persistent goals of a conversation and their event timeline."""
from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, JSONField, Migration, create_tables, utcnow


class Goal(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField(index=True)  # the conversation's owner
    conversation_key = peewee.CharField(index=True)  # conversations.key_for(user, conversationId)
    conversation_id = peewee.CharField()
    agent_id = peewee.BigIntegerField()
    title = peewee.CharField()
    criteria = JSONField(default=list)  # list[str]
    status = peewee.CharField(default="active")  # active | paused | completed | abandoned | exhausted
    closed_at = DateTimeField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


class GoalEvent(BaseModel):
    goal = peewee.ForeignKeyField(Goal, backref="events", on_delete="CASCADE")
    type = peewee.CharField()
    from_status = peewee.CharField(null=True)
    to_status = peewee.CharField(null=True)
    detail = JSONField(null=True)
    actor_user_id = peewee.BigIntegerField(null=True)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("goal", "id"), False),)


MIGRATIONS: list[Migration] = [("goals_0001_tables", create_tables(Goal, GoalEvent))]
