"""Workspaces and their members."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, Migration, utcnow


class Workspace(BaseModel):
    name = peewee.CharField()
    description = peewee.TextField(default="")
    creator_user_id = peewee.BigIntegerField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


class WorkspaceMember(BaseModel):
    workspace = peewee.ForeignKeyField(Workspace, backref="members", on_delete="CASCADE")
    user_id = peewee.BigIntegerField(index=True)
    role = peewee.CharField()
    create_time = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace", "user_id"), True),)


def _seed_default_workspace(db: peewee.Database) -> None:
    db.create_tables([Workspace, WorkspaceMember], safe=True)
    if not Workspace.select().where(Workspace.id == 1).exists():
        Workspace.create(id=1, name="Default", description="The default workspace")


MIGRATIONS: list[Migration] = [("workspaces_0001_tables", _seed_default_workspace)]
