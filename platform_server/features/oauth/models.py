"""OAuth credentials obtained by the platform itself (vendor_b); vendor_a's live in a file on disk."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, DateTimeField, Migration, create_tables, utcnow
from platform_server.sealed import SealedTextField, seal_column


class OAuthCredential(peewee.Model):
    vendor = peewee.CharField(primary_key=True)
    access_token = SealedTextField()
    refresh_token = SealedTextField(null=True)
    expires_at = DateTimeField(null=True)
    scope = peewee.TextField(null=True)
    token_type = peewee.CharField(default="Bearer")
    update_time = DateTimeField(default=utcnow)

    class Meta:
        database = BaseModel._meta.database
        table_name = "oauth_credential"


MIGRATIONS: list[Migration] = [
    ("oauth_0001_tables", create_tables(OAuthCredential)),
    ("oauth_0002_seal_access_tokens", seal_column("oauth_credential", "access_token")),
    ("oauth_0003_seal_refresh_tokens", seal_column("oauth_credential", "refresh_token")),
]
