"""Datasources agents can query read-only: SQLite files and HTTP JSON APIs."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, Migration, create_tables, utcnow
from platform_server.sealed import SealedJSONField, seal_column


class Datasource(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    name = peewee.CharField()
    type = peewee.CharField()  # sqlite | http
    description = peewee.TextField(default="")
    config = SealedJSONField(default=dict)  # sqlite: {path}; http: {baseUrl, headers}
    enabled = BooleanField(default=True)
    last_test_ok = BooleanField(null=True)
    last_test_time = DateTimeField(null=True)
    creator_user_id = peewee.BigIntegerField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("workspace_id", "name"), True),)


MIGRATIONS: list[Migration] = [
    ("datasources_0001_tables", create_tables(Datasource)),
    ("datasources_0002_seal_config", seal_column("datasource", "config")),
]
