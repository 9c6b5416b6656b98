"""Workflow triggers as the original console manages them: a pattern (`cron`, `channel_message`,
`workflow_completion`, `webhook`) given as JSON text, and a target (a workflow, or an agent).

The pattern maps onto this server's two trigger kinds: `cron` is a cron trigger (the console writes
six fields with seconds; schedules here are per minute, so the seconds must be 0), the others are
event triggers whose event type is the pattern type and whose filter is the pattern's equality
fields. A fire of a workflow trigger starts a run of the workflow's published revision with the
event as its input.
"""

from __future__ import annotations

import json
import re
from typing import Any

from platform_server.features.cron import schedule
from platform_server.features.cron.events import check_filter
from platform_server.features.cron.models import Trigger
from platform_server.features.cron.schemas import CRON_KEYS, EVENT_PATTERNS, PATTERN_JSON
from platform_server.features.cron.service import check_agent
from platform_server.features.workflows.models import Workflow
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, NotFound, parse_long

PATTERN_TYPES = ("cron", *EVENT_PATTERNS)
_PATTERN_JSON = {kind: re.compile(pattern) for kind, pattern in PATTERN_JSON.items()}


def apply_pattern(t: Trigger, pattern_type: str, pattern_json: str | None, default_tz: str) -> None:
    """Set the trigger's kind, schedule or event type and filter from a console pattern, or 400."""
    if pattern_type not in PATTERN_TYPES:
        raise BadRequest(f"patternType: must be one of {', '.join(PATTERN_TYPES)}")
    if pattern_type == "cron" and not pattern_json:
        raise BadRequest("patternJson: cron is required")
    text = pattern_json or "{}"
    if not _PATTERN_JSON[pattern_type].fullmatch(text):  # the document's pattern for this type (schemas.PATTERN_JSON)
        if pattern_type == "cron":
            # schedules here fire per minute: the console's seconds field must be 0
            raise BadRequest('patternJson: must be {"cron": "<5 fields, or seconds 0 and 5 fields>", "timezone"?: "<zone>"}')
        keys = ", ".join((*EVENT_PATTERNS[pattern_type], *CRON_KEYS))
        raise BadRequest(f"patternJson: must be an object of {keys} (each a string or null; filters match exact values)")
    pattern = json.loads(text)
    if pattern_type == "cron":
        fields = str(pattern["cron"]).split()
        fields = fields[1:] if len(fields) == 6 else fields  # the console's seconds: 0 (the pattern says so)
        given = pattern.get("timezone")
        tz = schedule.given_zone(given) if given is not None else str(t.timezone or default_tz)
        schedule.zone(tz)
        t.type, t.cron_expression, t.timezone = "cron", schedule.normalize(" ".join(fields)), tz
        t.event_type, t.filter = None, None
    else:
        # the console's pattern form starts as a cron pattern and keeps its keys when the type is switched
        pattern = {k: v for k, v in pattern.items() if k not in CRON_KEYS}
        names = EVENT_PATTERNS[pattern_type]  # the pattern admits only these fields
        wanted = {names[k]: v for k, v in pattern.items() if v not in (None, "")}
        t.type, t.event_type, t.filter = "event", pattern_type, check_filter(wanted) if wanted else None
        t.cron_expression, t.timezone = None, None
    t.pattern_type, t.pattern_json = pattern_type, json.dumps(pattern, ensure_ascii=False)


def apply_target(caller: Caller, t: Trigger, target_type: str | None, target_id: str | int | None, agent_id: str | int | None) -> None:
    """A workflow of the caller's workspace, or an agent (the default), or 400."""
    if (target_type or t.target_type or "agent") == "workflow":
        if target_id in (None, "", 0, "0"):
            raise BadRequest("targetId: choose a workflow")
        wf = parse_long("targetId", str(target_id))
        exists = Workflow.select().where((Workflow.id == wf) & (Workflow.workspace_id == caller.workspace_id) & (Workflow.deleted == False))  # noqa: E712
        if not exists.exists():  # a well-formed id naming nothing here: 404, as an agent id
            raise NotFound("targetId: no such workflow in this workspace")
        t.target_type, t.target_id, t.agent_id = "workflow", wf, 0
        return
    raw = agent_id if agent_id is not None else target_id
    if raw is None:
        if t.agent_id:
            return
        raise BadRequest("agentId: Field required")
    t.target_type, t.target_id, t.agent_id = "agent", None, check_agent(caller, raw)


def console_fields(t: Trigger) -> dict[str, Any]:
    """The console's names for a trigger: patternType, patternJson, targetType, targetId, payloadTemplate."""
    if t.pattern_type:
        pattern_type, pattern_json = t.pattern_type, t.pattern_json
    elif t.type == "cron":
        pattern_type, pattern_json = "cron", json.dumps({"cron": t.cron_expression, "timezone": t.timezone})
    else:
        pattern_type, pattern_json = str(t.event_type), json.dumps(t.filter or {})
    target = t.target_id if t.target_type == "workflow" else t.agent_id
    return {
        "patternType": pattern_type,
        "patternJson": pattern_json,
        "targetType": t.target_type or "agent",
        "targetId": str(target) if target else None,
        "payloadTemplate": t.message,
    }
