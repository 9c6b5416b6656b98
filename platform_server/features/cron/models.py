"""Cron jobs, triggers, the runs they start, and ingested trigger events (for de-duplication)."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow


class CronJob(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    owner_user_id = peewee.BigIntegerField(index=True)  # a scheduled run acts as this user
    name = peewee.CharField()
    agent_id = peewee.BigIntegerField(index=True)
    cron_expression = peewee.CharField()
    timezone = peewee.CharField()
    message = peewee.TextField()
    enabled = BooleanField(default=True)
    conversation_mode = peewee.CharField(default="new")  # new | fixed
    conversation_id = peewee.CharField(null=True)  # fixed mode only
    next_fire_at = DateTimeField(null=True, index=True)  # naive UTC; null while disabled
    last_fire_at = DateTimeField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "cron_job"


class Trigger(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    owner_user_id = peewee.BigIntegerField(index=True)
    name = peewee.CharField()
    agent_id = peewee.BigIntegerField(index=True)
    type = peewee.CharField()  # cron | event
    cron_expression = peewee.CharField(null=True)
    timezone = peewee.CharField(null=True)
    event_type = peewee.CharField(null=True, index=True)
    filter = JSONField(null=True)  # {"path.to.field": expected, ...}
    message = peewee.TextField()  # template with {{event.path}} placeholders
    enabled = BooleanField(default=True)
    conversation_mode = peewee.CharField(default="new")
    conversation_id = peewee.CharField(null=True)
    pattern_version = peewee.IntegerField(default=1)
    next_fire_at = DateTimeField(null=True, index=True)
    last_fire_at = DateTimeField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)
    # what a fire starts: a message to agent_id ("agent"), or a run of workflow target_id ("workflow";
    # agent_id is 0 then); the console's pattern as it sent it (type and JSON text)
    target_type = peewee.CharField(default="agent")
    target_id = peewee.BigIntegerField(null=True)
    pattern_type = peewee.CharField(null=True)
    pattern_json = peewee.TextField(null=True)

    class Meta:
        table_name = "event_trigger"


class CronRun(BaseModel):
    """One run of a cron job or a trigger (job_type tells which; job_id is its id)."""

    workspace_id = peewee.BigIntegerField(index=True)
    job_type = peewee.CharField()  # cron_job | trigger
    job_id = peewee.BigIntegerField(index=True)
    job_name = peewee.CharField(default="")
    agent_id = peewee.BigIntegerField()
    owner_user_id = peewee.BigIntegerField()
    cause = peewee.CharField()  # schedule | manual | event
    status = peewee.CharField(default="running")  # running | succeeded | failed | awaiting_approval
    scheduled_at = DateTimeField(null=True)  # the fire time a scheduled run was due at
    started_at = DateTimeField(default=utcnow, index=True)
    finished_at = DateTimeField(null=True)
    conversation_id = peewee.CharField(null=True, index=True)
    assistant_message_id = peewee.BigIntegerField(null=True)
    error = peewee.TextField(null=True)
    prompt_tokens = peewee.IntegerField(default=0)
    completion_tokens = peewee.IntegerField(default=0)
    event_id = peewee.CharField(null=True)

    class Meta:
        table_name = "cron_run"
        indexes = ((("workspace_id", "started_at"), False),)


class TriggerEvent(BaseModel):
    """An ingested event envelope with an id, kept for a while so a re-delivery is answered, not re-run."""

    workspace_id = peewee.BigIntegerField()
    event_key = peewee.CharField()
    type = peewee.CharField()
    summary = JSONField(default=list)
    received_at = DateTimeField(default=utcnow, index=True)

    class Meta:
        table_name = "trigger_event"
        indexes = ((("workspace_id", "event_key"), True),)


def _trigger_targets(db: peewee.Database) -> None:
    """Workflow targets and the console's pattern on triggers (a fresh database has them from cron_0001)."""
    have = {c.name for c in db.get_columns("event_trigger")}
    for column, ddl in (
        ("target_type", "VARCHAR(255) NOT NULL DEFAULT 'agent'"),
        ("target_id", "INTEGER"),
        ("pattern_type", "VARCHAR(255)"),
        ("pattern_json", "TEXT"),
    ):
        if column not in have:
            db.execute_sql(f"ALTER TABLE event_trigger ADD COLUMN {column} {ddl}")


MIGRATIONS: list[Migration] = [
    ("cron_0001_tables", create_tables(CronJob, Trigger, CronRun, TriggerEvent)),
    ("cron_0002_trigger_targets", _trigger_targets),
]
