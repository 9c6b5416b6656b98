"""Triggers: a cron schedule, or an event type with an equality filter, that starts an agent run."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any, cast

import peewee

from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.cron import patterns, schedule
from platform_server.features.cron.events import check_filter, mismatch, render
from platform_server.features.cron.models import CronRun, Trigger, TriggerEvent
from platform_server.features.cron.runner import EVENT_DEDUPE, CronScheduler, spec_of
from platform_server.features.cron.schemas import EventEnvelope, TriggerCreate, TriggerUpdate
from platform_server.features.cron.service import (
    can_manage,
    can_stop,
    check_conversation,
    check_text,
    names,
    update_conversation,
    usernames,
)
from platform_server.serialize import GIVEN, Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest, Conflict, NotFound

MAX_PAYLOAD_BYTES = 256 * 1024
_EVENT_TYPE = re.compile(r"^[A-Za-z0-9_.:/\-]{1,100}$")


# ---- CRUD -------------------------------------------------------------------------------

TRIGGER_FIELDS = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    name="name",
    agentId=ident("agent_id"),
    agentName=GIVEN,
    type="type",
    cronExpression="cron_expression",
    timezone="timezone",
    eventType="event_type",
    filter="filter",
    message="message",
    enabled=flag("enabled"),
    conversationMode="conversation_mode",
    conversationId="conversation_id",
    patternVersion="pattern_version",
    ownerUserId=ident("owner_user_id"),
    ownerUsername=GIVEN,
    nextFireTime=when("next_fire_at"),
    lastFireTime=when("last_fire_at"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


def to_dict(t: Trigger, agents: dict[int, str] | None = None, users: dict[int, str] | None = None) -> dict[str, Any]:

    agents = names(Agent, [t.agent_id]) if agents is None else agents
    users = usernames([t.owner_user_id]) if users is None else users
    row = TRIGGER_FIELDS(t, agentName=agents.get(t.agent_id), ownerUsername=users.get(t.owner_user_id))
    if t.target_type == "workflow":
        row["agentId"] = None
    return {**row, **patterns.console_fields(t)}


def _get(caller: Caller, trigger_id: int) -> Trigger:
    t = Trigger.get_or_none((Trigger.id == trigger_id) & (Trigger.workspace_id == caller.workspace_id))
    if t is None:
        raise NotFound("Trigger not found")
    return t


def _apply_kind(t: Trigger, given: set[str], req: TriggerCreate | TriggerUpdate, default_tz: str, update: bool = False) -> None:
    """Set the cron or event fields; the other kind's fields are refused when sent and cleared. In an update the stored
    state decides what the body cannot say: a type left as stored, a field required and not stored (409s)."""
    mismatch = Conflict if update and req.type is None else BadRequest
    missing = Conflict if update else BadRequest
    if t.type == "cron":
        if req.eventType is not None or req.filter is not None:
            raise mismatch("eventType: only for triggers of type 'event'")
        if req.cronExpression is not None:
            t.cron_expression = schedule.normalize(req.cronExpression)
        if not t.cron_expression:
            raise missing("cronExpression: required for triggers of type 'cron'")
        tz = schedule.given_zone(req.timezone) if req.timezone is not None else (t.timezone or default_tz)
        schedule.zone(tz)
        t.timezone = tz.strip()
        t.event_type, t.filter = None, None
    else:
        if req.cronExpression is not None or req.timezone is not None:
            raise mismatch("cronExpression: only for triggers of type 'cron'")
        if req.eventType is not None:
            if not _EVENT_TYPE.fullmatch(req.eventType):  # as the document's pattern reads (`$` is the end)
                raise BadRequest("eventType: 1-100 characters of letters, digits and _ . : / -")
            t.event_type = req.eventType
        if not t.event_type:
            raise missing("eventType: required for triggers of type 'event'")
        if "filter" in given:
            t.filter = check_filter(req.filter)
        t.cron_expression, t.timezone = None, None


def _schedule(t: Trigger) -> None:
    """Register with the scheduler (a next fire time) or unregister (none)."""
    active = t.enabled and t.type == "cron" and t.cron_expression
    t.next_fire_at = schedule.next_fire(cast(str, t.cron_expression), cast(str, t.timezone), utcnow()) if active else None


def list_triggers(caller: Caller) -> list[dict[str, Any]]:

    rows = list(Trigger.select().where(Trigger.workspace_id == caller.workspace_id).order_by(Trigger.id))
    agents = names(Agent, (r.agent_id for r in rows))
    users = usernames(r.owner_user_id for r in rows)
    return [to_dict(r, agents, users) for r in rows]


def get(caller: Caller, trigger_id: int) -> dict[str, Any]:
    return to_dict(_get(caller, trigger_id))


def create(caller: Caller, req: TriggerCreate, default_tz: str) -> dict[str, Any]:
    """Create a trigger owned by the caller; an enabled cron trigger is scheduled at once."""
    t = Trigger(workspace_id=caller.workspace_id, owner_user_id=caller.user_id, type=req.type or "event", pattern_version=1)
    t.name = check_text(req.name, "name").strip()
    patterns.apply_target(caller, t, req.targetType, req.targetId, req.agentId)
    if req.patternType is not None:
        patterns.apply_pattern(t, req.patternType, req.patternJson, default_tz)
    elif req.type is None:
        raise BadRequest("type: Field required")
    else:
        _apply_kind(t, req.model_fields_set, req, default_tz)
    message = req.message or req.payloadTemplate or None  # the console sends an empty template by default
    if message is None and t.target_type == "workflow":
        message = f"Trigger {t.name}"  # a workflow run takes the event itself as its input
    if message is None:
        raise BadRequest("message: Field required")
    t.message = check_text(message, "message")
    t.enabled = req.enabled
    t.conversation_mode = req.conversationMode
    t.conversation_id = check_conversation(req.conversationMode, req.conversationId, caller.user_id)
    _schedule(t)
    audit.save(caller, "CREATE", "TRIGGER", t, f"{t.type} trigger {t.name}")
    return to_dict(t)


def update(caller: Caller, trigger_id: int, req: TriggerUpdate, default_tz: str) -> dict[str, Any]:
    """Sparse update; `patternVersion` goes up by one when the cron expression changes."""
    t = _get(caller, trigger_id)
    can_manage(caller, t.owner_user_id)
    given = req.model_fields_set
    before = t.cron_expression
    if req.name is not None:
        t.name = check_text(req.name, "name").strip()
    if req.agentId is not None or req.targetType is not None or req.targetId is not None:
        patterns.apply_target(caller, t, req.targetType, req.targetId, req.agentId)
    shown = patterns.console_fields(t)
    if req.patternType is not None:  # the console's form: its pattern decides, the API's kind fields are ignored (as on create)
        if (req.patternType, req.patternJson) != (shown["patternType"], shown["patternJson"]):
            if req.patternType not in patterns.PATTERN_TYPES:  # an event type the console shows: it can only echo it
                raise Conflict(f"patternType: the stored pattern {shown['patternType']!r} can only be sent back unchanged")
            patterns.apply_pattern(t, req.patternType, req.patternJson, default_tz)  # the console changed the pattern
    else:
        if req.type is not None:
            t.type = req.type
        _apply_kind(t, given, req, default_tz, update=True)
    message = req.message if req.message is not None else req.payloadTemplate
    if message:
        t.message = check_text(message, "message")
    if req.enabled is not None:
        t.enabled = req.enabled
    update_conversation(t, given, req.conversationMode, req.conversationId)
    if t.cron_expression != before:
        t.pattern_version += 1
    _schedule(t)
    t.update_time = utcnow()
    audit.save(caller, "UPDATE", "TRIGGER", t, f"{t.type} trigger {t.name} (pattern v{t.pattern_version})")
    return to_dict(t)


def delete(caller: Caller, trigger_id: int) -> None:
    """Delete the trigger (unregistering its schedule) and its run history."""
    t = _get(caller, trigger_id)
    can_stop(caller, t.owner_user_id)
    with database.atomic():
        CronRun.delete().where((CronRun.job_type == "trigger") & (CronRun.job_id == t.id)).execute()
        t.delete_instance()
        audit.record(caller, "DELETE", "TRIGGER", t.id, f"{t.type} trigger {t.name}")


# ---- events -------------------------------------------------------------------------------


def _remembered(caller: Caller, event_id: str, now: dt.datetime) -> TriggerEvent | None:
    return TriggerEvent.get_or_none(
        (TriggerEvent.workspace_id == caller.workspace_id) & (TriggerEvent.event_key == event_id) & (TriggerEvent.received_at >= now - EVENT_DEDUPE)
    )


def ingest(caller: Caller, scheduler: CronScheduler, envelope: EventEnvelope) -> list[dict[str, Any]]:
    """Match one event against the workspace's event triggers; fire the matching ones.

    Answers `[{triggerId, triggerName, fired, reason, runId}]` for every event trigger of that type.
    An event whose `id` was ingested within 24 hours fires nothing: its entries come back with
    `fired:false`, `reason:"duplicate"` and the runs it started then.
    """
    if not _EVENT_TYPE.match(envelope.type):
        raise BadRequest("type: 1-100 characters of letters, digits and _ . : / -")
    if len(json.dumps(envelope.payload, ensure_ascii=False)) > MAX_PAYLOAD_BYTES:
        raise BadRequest(f"payload: larger than {MAX_PAYLOAD_BYTES} bytes")
    now = utcnow()
    if envelope.id is not None:
        seen = _remembered(caller, envelope.id, now)
        if seen is not None:
            return [{**entry, "fired": False, "reason": "duplicate"} for entry in seen.summary]
    summary: list[dict[str, Any]] = []
    triggers = (
        Trigger.select()
        .where((Trigger.workspace_id == caller.workspace_id) & (Trigger.type == "event") & (Trigger.event_type == envelope.type))
        .order_by(Trigger.id)
    )
    for t in triggers:
        entry: dict[str, Any] = {"triggerId": str(t.id), "triggerName": t.name, "fired": False, "runId": None}
        reason = "disabled" if not t.enabled else mismatch(t.filter, envelope.payload)
        if reason is None and scheduler.is_active("trigger", t.id):
            reason = "already running"
        if reason is None:
            try:
                run = scheduler.begin(spec_of(t, render(t.message, envelope), envelope.payload), "event", event_id=envelope.id)
                entry.update(fired=True, reason="matched", runId=str(run.id))
            except ApiError as exc:
                reason = exc.msg
        if reason is not None:
            entry["reason"] = reason
        summary.append(entry)
    if envelope.id is not None:
        with database.atomic():
            try:
                TriggerEvent.delete().where((TriggerEvent.workspace_id == caller.workspace_id) & (TriggerEvent.event_key == envelope.id)).execute()
                TriggerEvent.create(workspace_id=caller.workspace_id, event_key=envelope.id, type=envelope.type, summary=summary, received_at=now)
            except peewee.IntegrityError:
                pass
    return summary
