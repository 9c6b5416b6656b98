"""Plugin state: enabled flag and configuration, by plugin name."""
from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow


class PluginState(peewee.Model):
    name = peewee.CharField(primary_key=True)
    enabled = BooleanField(default=False)
    config = JSONField(default=dict)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        database = BaseModel._meta.database
        table_name = "plugin_state"


MIGRATIONS: list[Migration] = [("plugins_0001_state", create_tables(PluginState))]
