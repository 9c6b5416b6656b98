"""Files produced by tools, downloadable once by an unguessable id."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, Migration, create_tables, utcnow


class GeneratedFile(BaseModel):
    # id: a random 63-bit integer (not a Snowflake): the id alone grants the one download
    user_id = peewee.BigIntegerField(index=True)
    workspace_id = peewee.BigIntegerField()
    conversation_id = peewee.CharField(null=True)
    name = peewee.CharField()
    content_type = peewee.CharField()
    size = peewee.IntegerField()
    create_time = DateTimeField(default=utcnow)
    expires_at = DateTimeField()
    downloaded_at = DateTimeField(null=True)


MIGRATIONS: list[Migration] = [("media_0001_generated_files", create_tables(GeneratedFile))]
