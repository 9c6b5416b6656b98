"""ACP endpoints: commands that start a coding agent speaking the Agent Client Protocol on stdio."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow
from platform_server.sealed import SealedJSONField, seal_column


class AcpEndpoint(BaseModel):
    name = peewee.CharField(unique=True)  # slug
    display_name = peewee.CharField(default="")
    description = peewee.TextField(default="")
    command = peewee.TextField()
    args = JSONField(default=list)
    env = SealedJSONField(default=dict)  # values are write-only
    cwd = peewee.TextField(default="")  # relative to <data_dir>/acp
    enabled = BooleanField(default=True)
    builtin = BooleanField(default=False)
    last_test = JSONField(default=dict)  # {success, message, protocolVersion, time}
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "acp_endpoint"


MIGRATIONS: list[Migration] = [
    ("acp_0001_endpoints", create_tables(AcpEndpoint)),
    ("acp_0002_seal_env", seal_column("acp_endpoint", "env")),
]
