"""Shipped content: built-in skills seeded into each workspace, and the skill templates."""

from __future__ import annotations

from typing import Any

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.skills import service
from platform_server.features.skills.builtins import BUILTIN_SKILLS, TEMPLATES
from platform_server.features.skills.models import BuiltinSeed, Skill, SkillTemplate
from platform_server.serialize import Fields, flag, ident
from platform_server.web.context import Caller
from platform_server.web.errors import NotFound


def seed_templates() -> None:
    """Insert the built-in templates, refreshing their content (idempotent)."""
    with database.atomic():
        for row in TEMPLATES:
            values = {k: v for k, v in row.items() if k != "id"}
            SkillTemplate.insert(id=row["id"], builtin=True, **values).on_conflict(
                conflict_target=[SkillTemplate.id],
                update={getattr(SkillTemplate, k): v for k, v in values.items()},
            ).execute()


def _builtin_values() -> list[dict[str, Any]]:
    return [service.prepare_new(text, None) for text in BUILTIN_SKILLS]


def seeded(workspace_id: int) -> bool:
    return BuiltinSeed.select().where(BuiltinSeed.workspace_id == workspace_id).exists()


def seed_builtins(workspace_id: int, refresh: bool = False) -> list[str]:
    """Insert built-in skills missing from the workspace, once per workspace (or again with refresh).

    With refresh the shipped content also replaces the content of existing built-in skills (their
    enabled, pinned and archived states stay). Returns the names inserted or refreshed.
    """
    touched: list[str] = []
    with database.atomic():
        if seeded(workspace_id) and not refresh:
            return touched
        for values in _builtin_values():
            row = Skill.get_or_none((Skill.workspace_id == workspace_id) & (Skill.name == values["name"]))
            if row is None:
                row = Skill.create(workspace_id=workspace_id, skill_type="builtin", source="builtin", enabled=True, **values)
                audit.record(None, "CREATE", "SKILL", row.id, f"built-in skill {row.name}", workspace_id)
                touched.append(row.name)
            elif refresh and row.skill_type == "builtin" and row.content != values["content"]:
                Skill.update(update_time=utcnow(), **values).where(Skill.id == row.id).execute()
                audit.record(None, "UPDATE", "SKILL", row.id, f"built-in skill {row.name} re-synced", workspace_id)
                touched.append(row.name)
        BuiltinSeed.insert(workspace_id=workspace_id).on_conflict_ignore().execute()
    return touched


TEMPLATE_FIELDS = Fields(
    id=ident("id"),
    name="name",
    displayName=lambda t: t.display_name or t.name,
    description="description",
    category="category",
    builtin=flag("builtin"),
)


def template_dict(t: SkillTemplate, full: bool = False) -> dict[str, Any]:
    data = TEMPLATE_FIELDS(t)
    if full:
        data["content"] = t.content
    return data


def list_templates() -> list[dict[str, Any]]:
    return [template_dict(t) for t in SkillTemplate.select().order_by(SkillTemplate.sort_order, SkillTemplate.id)]


def get_template(template_id: int) -> SkillTemplate:
    t = SkillTemplate.get_or_none(SkillTemplate.id == template_id)
    if t is None:
        raise NotFound("Skill template not found")
    return t


def instantiate(caller: Caller, template_id: int, name: str | None) -> Skill:
    """A new `template` skill from a template; without a name the template's (suffixed when taken)."""
    t = get_template(template_id)
    final = name or service.free_name(caller, t.name)
    values = service.prepare_new(t.content, final)
    return service.create_skill(caller, values, "template", f"template:{t.id}", True)
