"""Guard rules: built-ins (read-only but toggleable) and custom rules; CRUD, export and import (upsert)."""

from __future__ import annotations

import re
from typing import Any, cast

from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.guard.models import GuardRule
from platform_server.features.guard.settings import DECISIONS, SEVERITIES
from platform_server.serialize import Fields, flag, ident, obj, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound

RULE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
TOOL_NAME = re.compile(r"^(\*|[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127})$")
RESERVED_IDS = frozenset({"builtin", "export", "import", "by-id", "file-guard"})
MAX_PATTERNS = 10
MAX_REGEX = 500
MAX_IMPORT = 500
FIELDS = ("ruleId", "name", "toolName", "argumentPatterns", "severity", "decision", "enabled", "description")


to_dict = Fields(
    id=ident("id"),
    ruleId="rule_id",
    name="name",
    toolName="tool_name",
    argumentPatterns=obj("argument_patterns"),
    severity="severity",
    decision="decision",
    enabled=flag("enabled"),
    description="description",
    builtin=flag("builtin"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)
_export_dict = to_dict.only(*FIELDS, "builtin")


# ---- validation ----------------------------------------------------------------------------------


def _text(where: str, value: Any, max_len: int, required: bool) -> str | None:
    if value is None:
        if required:
            raise BadRequest(f"{where}: must not be null")
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{where}: must be a string")
    text = value.strip()
    if required and not text:
        raise BadRequest(f"{where}: must not be blank")
    if len(text) > max_len:
        raise BadRequest(f"{where}: at most {max_len} characters")
    return text


def validate_patterns(where: str, patterns: Any) -> dict[str, str]:
    """`{argName: regex}`: at most 10, names plain, regexes at most 500 characters that compile."""
    if patterns is None:
        return {}
    if not isinstance(patterns, dict):
        raise BadRequest(f"{where}: must be an object of argument name -> regex")
    if len(patterns) > MAX_PATTERNS:
        raise BadRequest(f"{where}: at most {MAX_PATTERNS} argument patterns")
    out: dict[str, str] = {}
    # A name is the tool's own argument key (rule_matches looks it up as is): any string
    for name, regex in patterns.items():
        if not isinstance(regex, str) or not regex or len(regex) > MAX_REGEX:
            raise BadRequest(f"{where}.{name}: a regex of 1-{MAX_REGEX} characters")
        try:
            re.compile(regex)
        except re.error as exc:
            raise BadRequest(f"{where}.{name}: invalid regex ({exc})")
        out[str(name)] = regex
    return out


def validate_rule(data: dict[str, Any], where: str = "", partial: bool = False) -> dict[str, Any]:
    """Check a rule body; returns the model fields given (all of them unless partial)."""
    p = f"{where}." if where else ""
    fields: dict[str, Any] = {}
    if not isinstance(data, dict):
        raise BadRequest(f"{where or 'body'}: must be an object")
    unknown = set(data) - set(FIELDS) - {"builtin", "id", "createTime", "updateTime"}
    if unknown:
        raise BadRequest(f"{p}{sorted(unknown)[0]}: unknown field")
    if not partial or "name" in data:
        fields["name"] = _text(f"{p}name", data.get("name"), 100, True)
    if not partial or "toolName" in data:
        tool = _text(f"{p}toolName", data.get("toolName"), 128, True)
        if not TOOL_NAME.match(tool or ""):
            raise BadRequest(f"{p}toolName: a tool name (letters, digits, _ . : -) or *")
        fields["tool_name"] = tool
    if not partial or "argumentPatterns" in data:
        fields["argument_patterns"] = validate_patterns(f"{p}argumentPatterns", data.get("argumentPatterns"))
    if not partial or "severity" in data:
        if data.get("severity") not in SEVERITIES:
            raise BadRequest(f"{p}severity: must be one of {', '.join(SEVERITIES)}")
        fields["severity"] = data["severity"]
    if "decision" in data or not partial:
        decision = data.get("decision")
        if decision is not None and decision not in DECISIONS:
            raise BadRequest(f"{p}decision: must be one of allow, ask, deny (or null: the default for the severity)")
        fields["decision"] = decision
    if "enabled" in data or not partial:
        enabled = data.get("enabled", True)
        if enabled is None:
            enabled = True
        if not isinstance(enabled, bool):
            raise BadRequest(f"{p}enabled: must be a boolean")
        fields["enabled"] = enabled
    if "description" in data or not partial:
        fields["description"] = _text(f"{p}description", data.get("description"), 1000, False) or ""
    return fields


def _check_critical(where: str, severity: str, decision: str | None) -> None:
    if severity == "critical" and decision == "allow":
        raise BadRequest(f"{where}decision: a critical rule cannot allow (critical always asks)")


def validate_rule_id(where: str, value: Any) -> str:
    if not isinstance(value, str) or not RULE_ID.match(value):
        raise BadRequest(f"{where}: a slug of lowercase letters, digits, '.', '_' or '-' (1-64, starting alnum)")
    if value in RESERVED_IDS or value.startswith("builtin."):  # well-formed, but taken by a route or a built-in rule
        raise Conflict(f"{where}: '{value}' is reserved")
    return value


def _slug(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:56] or "rule"
    if not base[0].isalnum():
        base = "rule-" + base
    candidate, n = base, 2
    while candidate in taken or candidate in RESERVED_IDS:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _all_ids() -> set[str]:
    return {r.rule_id for r in GuardRule.select(GuardRule.rule_id)}


# ---- reads --------------------------------------------------------------------------------------


def list_rules(builtin: bool | None = None) -> list[dict[str, Any]]:
    """Every rule, built-ins first, then custom rules oldest first."""
    q = GuardRule.select()
    if builtin is not None:
        q = q.where(GuardRule.builtin == builtin)
    return [to_dict(r) for r in q.order_by(GuardRule.builtin.desc(), GuardRule.create_time, GuardRule.id)]


def export_rules() -> dict[str, Any]:
    return {
        "version": 1,
        "exportedAt": iso(utcnow()),
        "rules": [_export_dict(r) for r in GuardRule.select().order_by(GuardRule.builtin.desc(), GuardRule.create_time, GuardRule.id)],
    }


def _by_rule_id(rule_id: str) -> GuardRule:
    rule = GuardRule.get_or_none(GuardRule.rule_id == rule_id)
    if rule is None:
        raise NotFound("Rule not found")
    return rule


# ---- writes -------------------------------------------------------------------------------------


def create(caller: Caller, data: dict[str, Any]) -> dict[str, Any]:
    """Create a custom rule; `ruleId` is generated from the name when absent."""
    fields = validate_rule(data)
    _check_critical("", fields["severity"], fields["decision"])
    taken = _all_ids()
    if data.get("ruleId") is not None:
        rule_id = validate_rule_id("ruleId", data["ruleId"])
        if rule_id in taken:
            raise Conflict(f"ruleId: '{rule_id}' already exists")
    else:
        rule_id = _slug(fields["name"], taken)
    with database.atomic():
        rule = GuardRule.create(rule_id=rule_id, builtin=False, **fields)
        audit.record(caller, "CREATE", "GUARD_RULE", rule.rule_id, f"{rule.tool_name} {rule.severity} {rule.decision}")
    return to_dict(rule)


def update(caller: Caller, rule_id: str, data: dict[str, Any]) -> dict[str, Any]:
    """Sparse update of a custom rule (built-ins are read-only: only toggle)."""
    rule = _by_rule_id(rule_id)
    # the rule's state, not the body's shape, refuses these: 409 (a null ruleId, like every null field, keeps it)
    if rule.builtin:
        raise Conflict("Built-in rules are read-only (toggle them instead)")
    if data.get("ruleId") is not None and data["ruleId"] != rule.rule_id:
        raise Conflict("ruleId: cannot be changed")
    # a null field stays as it is; a null decision is a value (the severity's default)
    data = {k: v for k, v in data.items() if v is not None or k == "decision"}
    fields = validate_rule(data, partial=True)
    _check_critical("", fields.get("severity", rule.severity), fields.get("decision", rule.decision))
    with database.atomic():
        for key, value in fields.items():
            setattr(rule, key, value)
        rule.update_time = utcnow()
        rule.save()
        audit.record(caller, "UPDATE", "GUARD_RULE", rule.rule_id, f"fields {sorted(fields)}")
    return to_dict(rule)


def toggle(caller: Caller, rule_id: str, enabled: bool | None) -> dict[str, Any]:
    """Enable or disable a rule (built-ins too); no value flips it."""
    rule = _by_rule_id(rule_id)
    with database.atomic():
        rule.enabled = (not rule.enabled) if enabled is None else enabled
        rule.update_time = utcnow()
        rule.save()
        audit.record(caller, "UPDATE", "GUARD_RULE", rule.rule_id, f"enabled={bool(rule.enabled)}")
    return to_dict(rule)


def _delete(caller: Caller, rule: GuardRule) -> None:
    if rule.builtin:
        raise Conflict("Built-in rules cannot be deleted (disable them instead)")
    with database.atomic():
        rule.delete_instance()
        audit.record(caller, "DELETE", "GUARD_RULE", rule.rule_id, f"{rule.tool_name} rule {rule.name}")


def delete(caller: Caller, rule_id: str) -> None:
    _delete(caller, _by_rule_id(rule_id))


def delete_by_pk(caller: Caller, pk: int) -> None:
    rule = GuardRule.get_or_none(GuardRule.id == pk)
    if rule is None:
        raise NotFound("Rule not found")
    _delete(caller, rule)


def import_rules(caller: Caller, payload: Any, dry_run: bool = False) -> dict[str, Any]:
    """Upsert rules by ruleId from an export (or a bare list); all are validated before any is written.

    Built-in entries only carry `enabled` over; unknown built-in ids are refused. A dry run validates the
    same way and answers the plan (`rules`: each ruleId with `create` or `update`) without writing.
    """
    items = payload.get("rules") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise BadRequest("rules: must be a list of rules")
    if len(items) > MAX_IMPORT:
        raise BadRequest(f"rules: at most {MAX_IMPORT} rules per import")
    existing = {r.rule_id: r for r in GuardRule.select()}
    taken = set(existing)
    seen: set[str] = set()
    plan: list[tuple[str, GuardRule | None, dict[str, Any]]] = []
    for i, item in enumerate(items):
        where = f"rules[{i}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{where}: must be an object")
        raw_id = item.get("ruleId")
        current = existing.get(raw_id) if isinstance(raw_id, str) else None
        if current is None and isinstance(raw_id, str) and raw_id.startswith("builtin."):  # names a row that is not there
            raise NotFound(f"{where}.ruleId: no built-in rule '{raw_id[:128]}'")
        if current is not None and current.builtin:
            enabled = item.get("enabled", current.enabled)
            if not isinstance(enabled, bool):
                raise BadRequest(f"{where}.enabled: must be a boolean")
            fields: dict[str, Any] = {"enabled": enabled}
        else:
            fields = validate_rule(item, where)
            _check_critical(f"{where}.", fields["severity"], fields["decision"])
            if raw_id is None:
                raw_id = _slug(fields["name"], taken | seen)
            else:
                validate_rule_id(f"{where}.ruleId", raw_id)
        rule_id = cast(str, raw_id)  # an existing rule's id, a validated one or a new slug
        if rule_id in seen:  # an upsert by ruleId: listed twice, the later entry wins (as two imports in a row)
            plan = [entry for entry in plan if entry[0] != rule_id]
        seen.add(rule_id)
        plan.append((rule_id, current, fields))
    if dry_run:
        preview = [
            {
                "ruleId": rule_id,
                "action": "create" if current is None else "update",
                "builtin": bool(current is not None and current.builtin),
                "name": fields.get("name", current.name if current else None),
                "toolName": fields.get("tool_name", current.tool_name if current else None),
                "severity": fields.get("severity", current.severity if current else None),
                "decision": fields.get("decision", current.decision if current else None),
                "enabled": fields.get("enabled", current.enabled if current else True),
            }
            for rule_id, current, fields in plan
        ]
        creates = sum(1 for p in preview if p["action"] == "create")
        return {"dryRun": True, "created": creates, "updated": len(preview) - creates, "total": len(preview), "rules": preview}
    created = updated = 0
    with database.atomic():
        for rule_id, current, fields in plan:
            if current is None:
                GuardRule.create(rule_id=rule_id, builtin=False, **fields)
                created += 1
                audit.record(caller, "CREATE", "GUARD_RULE", rule_id, "imported")
            else:
                GuardRule.update(update_time=utcnow(), **fields).where(GuardRule.id == current.id).execute()
                updated += 1
                audit.record(caller, "UPDATE", "GUARD_RULE", rule_id, f"imported fields {sorted(fields)}")
    return {"created": created, "updated": updated, "total": created + updated}
