"""Plugin state: enabled flag and configuration, by plugin name."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, Migration, create_tables, utcnow
from platform_server.sealed import SealedJSONField, seal_column


class PluginState(peewee.Model):
    name = peewee.CharField(primary_key=True)
    enabled = BooleanField(default=False)
    config = SealedJSONField(default=dict)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        database = BaseModel._meta.database
        table_name = "plugin_state"


MIGRATIONS: list[Migration] = [
    ("plugins_0001_state", create_tables(PluginState)),
    ("plugins_0002_seal_config", seal_column("plugin_state", "config")),
]
