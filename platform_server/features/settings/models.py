"""System settings (key -> JSON) and feature flags."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow


class Setting(peewee.Model):
    key = peewee.CharField(primary_key=True)
    value = JSONField(null=True)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        database = BaseModel._meta.database
        table_name = "setting"


class FeatureFlag(peewee.Model):
    key = peewee.CharField(primary_key=True)
    enabled = BooleanField(default=False)
    description = peewee.TextField(default="")
    update_time = DateTimeField(default=utcnow)

    class Meta:
        database = BaseModel._meta.database
        table_name = "feature_flag"


MIGRATIONS: list[Migration] = [("settings_0001_tables", create_tables(Setting, FeatureFlag))]
