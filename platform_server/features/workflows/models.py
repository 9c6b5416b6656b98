"""Workflows: the editable row with its inline draft, immutable published revisions, runs and their steps."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow


class Workflow(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    name = peewee.CharField()
    description = peewee.TextField(default="")
    enabled = BooleanField(default=True)
    draft = JSONField(default=lambda: {"nodes": [], "edges": []})
    latest_revision_id = peewee.BigIntegerField(null=True)
    creator_user_id = peewee.BigIntegerField()
    deleted = BooleanField(default=False)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


class WorkflowRevision(BaseModel):
    workflow_id = peewee.BigIntegerField(index=True)
    workspace_id = peewee.BigIntegerField()
    version = peewee.IntegerField()
    graph = JSONField()
    created_by = peewee.BigIntegerField()
    create_time = DateTimeField(default=utcnow)


class WorkflowRun(BaseModel):
    workflow_id = peewee.BigIntegerField(index=True)
    revision_id = peewee.BigIntegerField()
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField()  # who started it: agent steps run as this user
    status = peewee.CharField(default="running")  # running, paused, succeeded, failed, cancelled
    input = JSONField(null=True)
    output = JSONField(null=True)
    error = peewee.TextField(null=True)
    context = JSONField(default=dict)  # {"nodes": {nodeId: {"output": ...}}}
    pause_token = peewee.CharField(null=True)
    paused_step_id = peewee.BigIntegerField(null=True)
    pause_deadline = DateTimeField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)
    finished_at = DateTimeField(null=True)


class WorkflowStep(BaseModel):
    run_id = peewee.BigIntegerField(index=True)
    seq = peewee.IntegerField()
    node_id = peewee.CharField()
    node_type = peewee.CharField()
    status = peewee.CharField(default="running")  # running, paused, succeeded, failed, cancelled
    input = JSONField(null=True)
    output = JSONField(null=True)
    error = peewee.TextField(null=True)
    outcome = peewee.CharField(null=True)  # the branch taken: true/false, approved/rejected/timeout/cancelled
    conversation_id = peewee.CharField(null=True)  # agent steps: the conversation the turn ran in
    started_at = DateTimeField(default=utcnow)
    finished_at = DateTimeField(null=True)


MIGRATIONS: list[Migration] = [
    ("workflows_0001_tables", create_tables(Workflow, WorkflowRevision, WorkflowRun, WorkflowStep)),
]
