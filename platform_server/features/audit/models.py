"""Audit events: who changed which resource, where and when."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, Migration, create_tables, utcnow


class AuditEvent(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    actor_user_id = peewee.BigIntegerField(null=True)
    actor_username = peewee.CharField(null=True)
    action = peewee.CharField(index=True)
    resource_type = peewee.CharField(index=True)
    resource_id = peewee.CharField(null=True)
    detail = peewee.TextField(default="")
    create_time = DateTimeField(default=utcnow, index=True)


MIGRATIONS: list[Migration] = [("audit_0001_events", create_tables(AuditEvent))]
