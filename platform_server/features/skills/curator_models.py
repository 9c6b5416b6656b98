"""Tables of the skills curator (managed skills, control state, reports, restore points) and of routines."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, utcnow
from platform_server.features.skills.models import Skill


class ManagedSkill(BaseModel):
    """A skill handed over to autonomous curation (`adopt`); deleted with the skill."""

    skill = peewee.ForeignKeyField(Skill, backref="curation", on_delete="CASCADE", unique=True)
    workspace_id = peewee.BigIntegerField(index=True)
    adopted_by = peewee.BigIntegerField(null=True)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_managed"


class CuratorState(BaseModel):
    """The curator control of one workspace (a row appears with the first curator write)."""

    workspace_id = peewee.BigIntegerField(unique=True)
    active = BooleanField(default=False)  # scheduled scans really archive (else preview only)
    paused = BooleanField(default=False)  # scheduled scans stopped
    consolidate = BooleanField(default=False)  # duplicates are merged through the LLM
    last_run_at = DateTimeField(null=True)
    last_run_id = peewee.BigIntegerField(null=True)
    last_scheduled_at = DateTimeField(null=True)  # the next scheduled scan counts from here
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_curator_state"


class CuratorRun(BaseModel):
    """One curator pass and its report (proposed actions with reasons and outcomes)."""

    workspace_id = peewee.BigIntegerField(index=True)
    trigger = peewee.CharField()  # dry-run | scheduled
    applied = BooleanField(default=False)  # changes were really made (active scheduled scan)
    consolidate = BooleanField(default=False)
    triggered_by = peewee.BigIntegerField(null=True)
    snapshot_id = peewee.BigIntegerField(null=True)
    summary = JSONField(default=dict)
    actions = JSONField(default=list)
    settings = JSONField(default=dict)
    started_at = DateTimeField(default=utcnow)
    finished_at = DateTimeField(null=True)

    class Meta:
        table_name = "skill_curator_run"


class SkillSnapshot(BaseModel):
    """A restore point: every skill row of the workspace with its content and bundle files, as JSON."""

    workspace_id = peewee.BigIntegerField(index=True)
    trigger = peewee.CharField(default="manual")  # manual | curator | restore
    reason = peewee.CharField(default="")
    creator_user_id = peewee.BigIntegerField(null=True)
    skill_count = peewee.IntegerField(default=0)
    size_bytes = peewee.IntegerField(default=0)
    files_omitted = JSONField(default=list)  # skills whose bundle was too large to capture
    data = JSONField(default=dict)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_snapshot"


class RoutineCandidate(BaseModel):
    """A recurring request of one user in one workspace, mined from their messages."""

    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField(index=True)
    pattern = peewee.TextField(default="")
    tokens = JSONField(default=list)  # the normalized token set new requests are matched against
    examples = JSONField(default=list)
    occurrences = peewee.IntegerField(default=0)
    distinct_days = peewee.IntegerField(default=0)
    first_seen = DateTimeField(null=True)
    last_seen = DateTimeField(null=True)
    status = peewee.CharField(default="open")  # open | dismissed | promoted
    skill_id = peewee.BigIntegerField(null=True)  # the skill it was promoted to
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_routine"


CURATOR_TABLES = (ManagedSkill, CuratorState, CuratorRun, SkillSnapshot, RoutineCandidate)  # see models.MIGRATIONS
