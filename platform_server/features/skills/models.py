"""Skills (SQLite is the source of truth; the cache folder mirrors it), their files, secrets and templates."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow

SKILL_TYPES = ("builtin", "custom", "installed", "synthesized", "template")


class Skill(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    name = peewee.CharField()  # slug, unique per workspace; also the cache folder name
    display_name = peewee.CharField(default="")
    description = peewee.TextField(default="")
    skill_type = peewee.CharField(default="custom", index=True)
    content = peewee.TextField(default="")  # the SKILL.md text
    requires = JSONField(default=dict)  # {env: [...], bins: [...], secrets: [...]} from the front matter
    enabled = BooleanField(default=True)
    archived = peewee.IntegerField(default=0)
    pinned = peewee.IntegerField(default=0)
    version = peewee.CharField(default="1.0.0")
    source = peewee.CharField(default="")  # hub URL, upload:<file>, conversation:<id>, template:<id>, builtin
    creator_user_id = peewee.BigIntegerField(null=True)
    archived_at = DateTimeField(null=True)
    last_used_at = DateTimeField(null=True)
    use_count = peewee.IntegerField(default=0)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill"
        indexes = ((("workspace_id", "name"), True),)


class SkillFile(BaseModel):
    """One bundle file of a skill (besides SKILL.md), by path relative to the skill folder."""

    skill = peewee.ForeignKeyField(Skill, backref="files", on_delete="CASCADE")
    path = peewee.CharField()
    data = peewee.BlobField()
    size = peewee.IntegerField(default=0)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_file"
        indexes = ((("skill", "path"), True),)


class SkillSecret(BaseModel):
    """A per-skill secret; `value` is AES-GCM ciphertext and never leaves the server."""

    skill = peewee.ForeignKeyField(Skill, backref="secrets", on_delete="CASCADE")
    key = peewee.CharField()
    value = peewee.TextField()
    preview = peewee.CharField(default="")
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_secret"
        indexes = ((("skill", "key"), True),)


class SkillTemplate(BaseModel):
    name = peewee.CharField()
    display_name = peewee.CharField(default="")
    description = peewee.TextField(default="")
    category = peewee.CharField(default="general")
    content = peewee.TextField(default="")
    builtin = BooleanField(default=True)
    sort_order = peewee.IntegerField(default=100)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_template"


class BuiltinSeed(BaseModel):
    """A workspace whose built-in skills were seeded once (deleted built-ins then stay deleted)."""

    workspace_id = peewee.BigIntegerField(unique=True)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_builtin_seed"


MIGRATIONS: list[Migration] = [
    ("skills_0001_tables", create_tables(Skill, SkillFile, SkillSecret, SkillTemplate, BuiltinSeed)),
]


def _curator_tables(db: peewee.Database) -> None:
    """The curator's and routines' tables (their module references Skill, so it is imported here)."""
    from platform_server.features.skills.curator_models import CURATOR_TABLES

    db.create_tables(CURATOR_TABLES, safe=True)


MIGRATIONS.append(("skills_0101_curator_tables", _curator_tables))


def _short_previews(db: peewee.Database) -> None:
    """Secret previews keep at most the last 4 characters (`sk-…abcd` becomes `…abcd`)."""
    find = "strpos" if isinstance(db, peewee.PostgresqlDatabase) else "instr"  # same arguments, same answer
    db.execute_sql(f"UPDATE skill_secret SET preview = '…' || substr(preview, {find}(preview, '…') + 1) WHERE {find}(preview, '…') > 1")


MIGRATIONS.append(("skills_0201_short_secret_previews", _short_previews))


class InstallTaskRow(BaseModel):
    """An install from a URL or the hub (issue 31): stored, so any process answers its status and cancel, and the
    leader fails it when the process running it dies (`skill-install:<task id>` lease) instead of forgetting it."""

    task_id = peewee.CharField(unique=True)
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField()
    source = peewee.TextField(default="")
    status = peewee.CharField(default="pending", index=True)  # pending | downloading | installing | completed | failed | cancelled
    message = peewee.TextField(default="Queued")
    skill_id = peewee.BigIntegerField(null=True)
    skill_name = peewee.CharField(null=True)
    replaced = BooleanField(default=False)
    committed = BooleanField(default=False)  # the skill is written: too late to cancel
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "skill_install_task"


MIGRATIONS.append(("skills_0301_install_tasks", create_tables(InstallTaskRow)))
