"""Chat uploads: who uploaded which file into which conversation."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, Migration, create_tables, utcnow


class Upload(BaseModel):
    stored_name = peewee.CharField(unique=True)
    user_id = peewee.BigIntegerField(index=True)
    conversation_id = peewee.CharField()
    name = peewee.CharField()
    size = peewee.IntegerField()
    content_type = peewee.CharField()
    create_time = DateTimeField(default=utcnow)


MIGRATIONS: list[Migration] = [("chat_0001_uploads", create_tables(Upload))]
