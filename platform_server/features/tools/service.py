"""Tool rows: seeding, listing and the admin's changes (tools are global, not per workspace)."""

from __future__ import annotations

from typing import Any

import peewee

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.tools.models import Tool
from platform_server.features.workspaces import service as workspaces
from platform_server.serialize import Fields, flag, ident, obj, when
from platform_server.web.context import Caller
from platform_server.web.errors import Conflict, NotFound


def ensure_row(name: str, description: str, source: str, parameters: dict[str, Any]) -> Tool:
    """The Tool row for a registered tool, created (enabled, tier `core`) when missing.

    An existing row keeps the admin's description, enabled flag, tier and config; its
    source and parameters follow the code.
    """
    row = Tool.get_or_none(Tool.name == name)
    if row is None:
        try:
            with database.atomic():
                return Tool.create(name=name, description=description, source=source, parameters=parameters)
        except peewee.IntegrityError:
            row = Tool.get(Tool.name == name)
    if row.source != source or row.parameters != parameters:
        row.source = source
        row.parameters = parameters
        row.update_time = utcnow()
        row.save()
    return row


to_dict = Fields(
    id=ident("id"),
    name="name",
    description="description",
    source="source",
    enabled=flag("enabled"),
    disclosureTier="disclosure_tier",
    parameters=obj("parameters"),
    config=obj("config"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)
_brief = to_dict.only("id", "name", "description", "source", "disclosureTier", "parameters")


def list_all() -> list[dict[str, Any]]:
    """Every tool, system tools first, then by name."""
    rows = Tool.select().order_by(Tool.source != "system", Tool.name)
    return [to_dict(r) for r in rows]


def list_enabled() -> list[dict[str, Any]]:
    rows = Tool.select().where(Tool.enabled == True).order_by(Tool.source != "system", Tool.name)  # noqa: E712
    return [to_dict(r) for r in rows]


def list_available(registered: set[str]) -> list[dict[str, Any]]:
    """Atomic tools an agent can bind: enabled rows whose tool is currently registered (runnable)."""
    rows = Tool.select().where(Tool.enabled == True).order_by(Tool.source != "system", Tool.name)  # noqa: E712
    return [_brief(r) for r in rows if r.name in registered]


def with_host(rows: list[dict[str, Any]], kinds: dict[str, str], workspace_id: int, shell_allowed: bool) -> list[dict[str, Any]]:
    """Each row with `hostTool` (its host-tool kind, or null) and `workspaceEnabled` (false: a host tool a
    global admin has not enabled in this workspace, or shell_exec while the server's shell_exec_enabled is off)."""
    enabled = workspaces.host_tools(workspace_id)
    for row in rows:
        kind = kinds.get(row["name"])
        row["hostTool"] = kind
        row["workspaceEnabled"] = kind is None or (kind in enabled and (kind != "shell" or shell_allowed))
    return rows


def _get(tool_id: int) -> Tool:
    row = Tool.get_or_none(Tool.id == tool_id)
    if row is None:
        raise NotFound("Tool not found")
    return row


def get(tool_id: int) -> dict[str, Any]:
    return to_dict(_get(tool_id))


def update(caller: Caller, tool_id: int, description: str | None, enabled: bool | None, config: dict[str, Any] | None) -> dict[str, Any]:
    """Change description, enabled and config (fields left out stay)."""
    row = _get(tool_id)
    changed: list[str] = []
    with database.atomic():
        if description is not None:
            row.description = description
            changed.append("description")
        if enabled is not None:
            row.enabled = enabled
            changed.append(f"enabled={enabled}")
        if config is not None:
            row.config = config
            changed.append("config")
        row.update_time = utcnow()
        row.save()
        audit.record(caller, "UPDATE", "TOOL", row.id, f"tool {row.name}: {', '.join(changed) or 'no change'}")
    return to_dict(row)


def toggle(caller: Caller, tool_id: int, enabled: bool | None) -> dict[str, Any]:
    """Enable or disable; no value flips it (as every toggle: the body is optional)."""
    row = _get(tool_id)
    enabled = (not row.enabled) if enabled is None else enabled
    row.enabled = enabled
    row.update_time = utcnow()
    audit.save(caller, "UPDATE", "TOOL", row, f"tool {row.name} {'enabled' if enabled else 'disabled'}")
    return to_dict(row)


def set_tier(caller: Caller, tool_id: int, tier: str) -> dict[str, Any]:
    row = _get(tool_id)
    row.disclosure_tier = tier
    row.update_time = utcnow()
    audit.save(caller, "UPDATE", "TOOL", row, f"tool {row.name} disclosure tier {tier}")
    return to_dict(row)


def delete(caller: Caller, tool_id: int) -> str:
    """Delete a non-system tool row; returns its name (system tools answer 400)."""
    row = _get(tool_id)
    if row.source == "system":
        raise Conflict("System tools cannot be deleted")
    audit.save(caller, "DELETE", "TOOL", row, f"tool {row.name} ({row.source})")
    return row.name
