"""Teams (a lead agent plus member agents) and their runs."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow


class Team(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    name = peewee.CharField()
    description = peewee.TextField(default="")
    lead_agent_id = peewee.BigIntegerField()
    member_agent_ids = JSONField(default=list)  # agent ids as strings, in order
    creator_user_id = peewee.BigIntegerField()
    deleted = BooleanField(default=False)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


class TeamRun(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    team_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField()  # who started it
    conversation_id = peewee.CharField(null=True, index=True)  # the lead conversation (public id), if any
    goal = peewee.TextField()
    # planning, running, awaiting_review, finalizing, completed, partial, failed, cancelled
    status = peewee.CharField(default="planning")
    tasks = JSONField(default=list)  # [{index, agentId, agentName, task, status, result, error, startedAt, finishedAt}]
    result = peewee.TextField(null=True)
    error = peewee.TextField(null=True)
    cancel_reason = peewee.TextField(null=True)
    cancelled_by = peewee.BigIntegerField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)
    finished_at = DateTimeField(null=True)


MIGRATIONS: list[Migration] = [("teams_0001_tables", create_tables(Team, TeamRun))]
