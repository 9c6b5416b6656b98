"""Workspaces and their members."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, JSONField, Migration, utcnow


class Workspace(BaseModel):
    name = peewee.CharField()
    description = peewee.TextField(default="")
    creator_user_id = peewee.BigIntegerField(null=True)
    # The host tools a global admin enabled here (shell, acp, sql, mcp_stdio, network); see service.HOST_TOOLS
    host_tools = JSONField(default=list)
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


def _add_host_tools(db: peewee.Database) -> None:
    # a database created by workspaces_0001 from today's model already has the column
    if "host_tools" not in {c.name for c in db.get_columns("workspace")}:
        db.execute_sql("ALTER TABLE workspace ADD COLUMN host_tools TEXT NOT NULL DEFAULT '[]'")


MIGRATIONS: list[Migration] = [("workspaces_0001_tables", _seed_default_workspace), ("workspaces_0002_host_tools", _add_host_tools)]
