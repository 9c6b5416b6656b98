"""Users and personal access tokens."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, Migration, create_tables, utcnow
from platform_server.features.auth.cache import create_epoch


class User(BaseModel):
    username = peewee.CharField(unique=True)
    password_hash = peewee.CharField()
    nickname = peewee.CharField(default="")
    email = peewee.CharField(null=True)
    role = peewee.CharField(default="user")  # "admin" = global admin
    enabled = BooleanField(default=True)
    deleted = BooleanField(default=False)
    password_changed_at = DateTimeField(default=utcnow)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


class AccessToken(BaseModel):
    user = peewee.ForeignKeyField(User, backref="tokens", on_delete="CASCADE")
    name = peewee.CharField()
    token_hash = peewee.CharField(unique=True)
    token_prefix = peewee.CharField()
    create_time = DateTimeField(default=utcnow)
    expires_at = DateTimeField(null=True)
    last_used_at = DateTimeField(null=True)
    deleted_at = DateTimeField(null=True)


def _auth_epoch(db: peewee.Database) -> None:

    create_epoch(db)


MIGRATIONS: list[Migration] = [
    ("auth_0001_users_tokens", create_tables(User, AccessToken)),
    ("auth_0002_epoch_triggers", _auth_epoch),  # invalidates features/auth/cache.py on any auth write
]
