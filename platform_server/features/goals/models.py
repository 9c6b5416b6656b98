"""Persistent goals of a conversation and their event timeline."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow


class Goal(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField(index=True)  # the conversation's owner
    conversation_key = peewee.CharField(index=True)  # conversations.key_for(user, conversationId)
    conversation_id = peewee.CharField()
    agent_id = peewee.BigIntegerField()
    title = peewee.CharField()
    criteria = JSONField(default=list)  # list[str]
    status = peewee.CharField(default="active")  # active | paused | completed | abandoned | exhausted
    max_attempts = peewee.IntegerField(null=True)  # evaluations before `exhausted`; None: goal_max_attempts
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


class GoalEvaluation(BaseModel):
    """One judgement of the goal after a turn of its conversation (the model's JSON verdict)."""

    goal = peewee.ForeignKeyField(Goal, backref="evaluations", on_delete="CASCADE")
    message_id = peewee.BigIntegerField()  # the assistant message that ended the judged turn
    progress = peewee.IntegerField(default=0)  # 0-100
    completed = BooleanField(default=False)
    blocked = BooleanField(default=False)
    reason = peewee.TextField(default="")
    model = peewee.CharField(null=True)
    create_time = DateTimeField(default=utcnow)


def _add_evaluation(db: peewee.Database) -> None:
    # a database created by goals_0001 from today's model already has the column
    if "max_attempts" not in {c.name for c in db.get_columns("goal")}:
        db.execute_sql("ALTER TABLE goal ADD COLUMN max_attempts INTEGER")
    db.create_tables([GoalEvaluation], safe=True)


MIGRATIONS: list[Migration] = [
    ("goals_0001_tables", create_tables(Goal, GoalEvent)),
    ("goals_0002_evaluations", _add_evaluation),
]
