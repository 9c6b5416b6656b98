"""Dreaming: consolidation of facts and daily notes into MEMORY.md, with a report and a DREAMS.md diary.

A dream runs as a task owned by the process (a client that disconnects does not stop it); one dream
at a time per scope. Progress goes to the subscribers of `dream/events` for that user and agent.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from typing import TYPE_CHECKING, Any

from platform_server import leases
from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.memory import facts, llm, store
from platform_server.features.memory.models import DreamReport, Fact
from platform_server.features.memory.store import Scope
from platform_server.features.models.errors import LlmFailure
from platform_server.leases import LOST_ERROR, RunKind
from platform_server.ports import events
from platform_server.ports.events import Subscription, TopicBus
from platform_server.serialize import Fields, flag, ident, items, when
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    from platform_server.config import Config
    from platform_server.features.models.runtime import LlmRouter

log = logging.getLogger(__name__)

MAX_ENTRIES = 200
ACTIONS = ("add", "update", "remove")


class DreamBus:
    """Dream progress fan-out to `dream/events` subscribers of one user and agent."""

    def __init__(self) -> None:
        self.topics: TopicBus[tuple[int, int]] = events.current().topics("memory")

    @property
    def subscribers(self) -> list[Subscription]:
        return self.topics.subscribers()

    def subscribe(self, user_id: int, agent_id: int) -> Subscription:
        return self.topics.subscribe((user_id, agent_id))

    def publish(self, scope: Scope, event: str, data: dict[str, Any]) -> None:
        self.topics.publish((scope.user_id, scope.agent_id), event, data)


def entry_vo(e: dict[str, Any]) -> dict[str, Any]:
    return {
        "key": e["key"],
        "action": e["action"],
        "before": e.get("before"),
        "after": e.get("after"),
        "confirmed": bool(e.get("confirmTime")),
        "confirmTime": e.get("confirmTime"),
        "userEdited": bool(e.get("editTime")),
        "editTime": e.get("editTime"),
    }


def counts(entries: list[dict[str, Any]]) -> dict[str, int]:
    return {a: sum(1 for e in entries if e["action"] == a) for a in ACTIONS}


report_vo = Fields(
    id=ident("id"),
    agentId=ident("agent_id"),
    endUserId=lambda r: r.end_user_id or None,
    mode="mode",
    trigger="trigger",
    topic="topic",
    status="status",
    summary="summary",
    entries=lambda r: [entry_vo(e) for e in r.entries or []],
    counts=lambda r: counts(list(r.entries or [])),
    skipped=items("skipped"),
    error="error",
    model="model",
    seen=flag("seen"),
    createTime=when("create_time"),
    finishTime=when("finish_time"),
)


def _matches(fact: Fact, words: list[str]) -> bool:
    text = f"{fact.key} {fact.statement}".lower().replace("_", " ")
    return any(w in text for w in words)


def topic_words(topic: str) -> list[str]:
    words = [w for w in topic.lower().replace("_", " ").split() if len(w) >= 3]
    return words or [topic.lower().strip()]


def last_completed(scope: Scope) -> DreamReport | None:
    return (
        DreamReport.select()
        .where(scope.where(DreamReport) & (DreamReport.status == "completed"))
        .order_by(DreamReport.create_time.desc(), DreamReport.id.desc())
        .first()
    )


def _running_reports() -> list[str]:
    return [str(r.id) for r in DreamReport.select(DreamReport.id).where(DreamReport.status == "running")]


def fail_lost(ids: list[str]) -> int:
    """Dreams whose process stopped (a lapsed lease, or a restart): failed, saying so (a dream writes its entries in
    one transaction at its end, so nothing half-written stays)."""
    if not ids:
        return 0
    done = DreamReport.update(status="failed", error=LOST_ERROR, finish_time=utcnow()).where(
        DreamReport.id.in_([int(i) for i in ids]) & (DreamReport.status == "running")
    )
    return int(done.execute())


def fail_left_running() -> int:
    """At the leader's start: dreams a stopped process left running."""
    return fail_lost(_running_reports())


RUNS = RunKind("dream:", _running_reports, fail_lost)  # leased while they run here (platform_server/leases.py)


class Dreamer:
    """The process's dream runner: running dreams per scope, the event bus, the consolidation itself."""

    def __init__(self, router: LlmRouter, config: Config) -> None:
        self.router = router
        self.config = config
        self.bus = DreamBus()
        self.running: dict[Scope, int] = {}  # scope -> running report id
        self.tasks: set[asyncio.Task] = set()

    def running_for(self, user_id: int, agent_id: int) -> list[dict[str, Any]]:
        return [
            {"reportId": str(rid), "agentId": str(s.agent_id), "endUserId": s.end_user_id or None}
            for s, rid in self.running.items()
            if s.user_id == user_id and s.agent_id == agent_id
        ]

    async def dream(self, scope: Scope, agent: Any, actor: Caller | None, mode: str, trigger: str, topic: str | None = None) -> dict[str, Any]:
        """Run one consolidation to its end in a task of its own; returns the report."""
        if scope in self.running:
            raise Conflict("A dream is already running for this memory")  # state, not the request: a 409
        targets = llm.targets_for(agent)  # 2001 before anything is written when no model is configured
        selected: set[str] | None = None
        if topic is not None:
            words = topic_words(topic)
            selected = {f.key for f in facts.active(scope) if _matches(f, words)}
            if not selected:
                raise NotFound("topic: no remembered facts match this topic")
        report = DreamReport(
            workspace_id=scope.workspace_id,
            user_id=scope.user_id,
            agent_id=scope.agent_id,
            end_user_id=scope.end_user_id,
            mode=mode,
            trigger=trigger,
            topic=topic,
        )
        audit.save(actor, "CREATE", "DREAM_REPORT", report, f"{mode} dream of agent {scope.agent_id}", workspace_id=scope.workspace_id)
        self.running[scope] = report.id
        leases.hold(RUNS, report.id)
        task = asyncio.ensure_future(self._run(scope, report, actor, targets, selected))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        failure = await asyncio.shield(task)
        if failure is not None:
            raise failure
        return report_vo(DreamReport.get_by_id(report.id))

    async def _run(self, scope: Scope, report: DreamReport, actor: Caller | None, targets: list[Any], selected: set[str] | None) -> ApiError | None:
        base = {"reportId": str(report.id), "agentId": str(scope.agent_id), "endUserId": scope.end_user_id or None}
        self.bus.publish(scope, "dream_started", {**base, "mode": report.mode, "trigger": report.trigger, "topic": report.topic})
        try:
            self.bus.publish(scope, "dream_progress", {**base, "stage": "gathering"})
            prompt, protected = self._material(scope, selected)
            self.bus.publish(scope, "dream_progress", {**base, "stage": "consolidating"})
            value, model = await llm.ask_json(self.router, targets, llm.DREAM_SYSTEM, prompt, 4000, scope=scope, source="dreaming")
            if not isinstance(value, dict):
                raise LlmFailure("The memory model did not answer a JSON object")
            self.bus.publish(scope, "dream_progress", {**base, "stage": "writing"})
            entries, skipped = self._apply(scope, actor, report, value, protected, selected, model)
            self._diary(scope, report, entries, skipped)
        except Exception as exc:  # noqa: BLE001 - a failed dream is recorded and reported, never lost
            message = exc.msg if isinstance(exc, ApiError) else "Internal error during the dream"
            if not isinstance(exc, ApiError):
                log.exception("dream %s failed", report.id)
            DreamReport.update(status="failed", error=message, finish_time=utcnow()).where(DreamReport.id == report.id).execute()
            self.bus.publish(scope, "error", {**base, "message": message})
            return exc if isinstance(exc, ApiError) else ApiError(message, 500)
        else:
            self.bus.publish(scope, "dream_completed", {**base, "status": "completed", "counts": counts(entries)})
            return None
        finally:
            self.running.pop(scope, None)
            leases.release(RUNS, report.id)

    def _material(self, scope: Scope, selected: set[str] | None) -> tuple[str, set[str]]:
        ranked = store.ranked(facts.active(scope))
        if selected is not None:
            ranked = [(f, d) for f, d in ranked if f.key in selected]
        protected = {f.key for f, _ in ranked if f.user_edited}
        last = last_completed(scope)
        since = store.local_now(self.config, last.create_time.replace(tzinfo=dt.timezone.utc)).date() if last else None
        notes = store.daily_notes(self.config, scope, since)
        memory = [{"key": f.key, "statement": f.statement, "score": d["score"], "userEdited": bool(f.user_edited)} for f, d in ranked[:300]]
        payload: dict[str, Any] = {"memory": memory, "dailyNotes": notes, "protectedKeys": sorted(protected)}
        if selected is not None:
            payload["focus"] = "Only change the listed entries or add entries about the focus topic."
        return json.dumps(payload, ensure_ascii=False), protected

    def _apply(
        self,
        scope: Scope,
        actor: Caller | None,
        report: DreamReport,
        value: dict[str, Any],
        protected: set[str],
        selected: set[str] | None,
        model: str,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        raw = value.get("entries")
        raw = raw if isinstance(raw, list) else []
        entries: list[dict[str, Any]] = []
        skipped: list[dict[str, Any]] = []
        with database.atomic():
            for item in raw[:MAX_ENTRIES]:
                if not isinstance(item, dict):
                    continue
                key = store.clean_key(item.get("key"))
                action = str(item.get("action") or "").lower()
                after = item.get("after")
                after = " ".join(after.split())[: facts.STATEMENT_MAX] if isinstance(after, str) else None
                if key is None or action not in ACTIONS:
                    continue
                if key in protected or any(f.user_edited for f in facts.active(scope) if f.key == key):
                    skipped.append({"key": key, "action": action, "reason": "user-edited"})
                    continue
                if selected is not None and action != "add" and key not in selected:
                    skipped.append({"key": key, "action": action, "reason": "outside the focus topic"})
                    continue
                entry = self._apply_one(scope, actor, key, action, after)
                if entry is not None:
                    entries.append(entry)
            summary = value["summary"] if isinstance(value.get("summary"), str) else ""
            DreamReport.update(
                status="completed",
                entries=entries,
                skipped=skipped,
                model=model,
                finish_time=utcnow(),
                summary=(summary.strip() or f"{len(entries)} memory changes")[:2000],
            ).where(DreamReport.id == report.id).execute()
            audit.record(actor, "UPDATE", "DREAM_REPORT", report.id, f"completed: {len(entries)} changes", workspace_id=scope.workspace_id)
        store.write_projection(self.config, scope)
        return entries, skipped

    def _apply_one(self, scope: Scope, actor: Caller | None, key: str, action: str, after: str | None) -> dict[str, Any] | None:
        current = sorted((f for f in facts.active(scope) if f.key == key), key=lambda f: f.id)
        before = " / ".join(f.statement for f in current) or None
        if action == "remove":
            if not current:
                return None
            for f in current:
                facts.forget_row(f)
            audit.record(actor, "DELETE", "MEMORY_FACT", current[-1].id, f"dream removed {key}", workspace_id=scope.workspace_id)
            return {"key": key, "action": "remove", "before": before, "after": None}
        if not after:
            return None
        if not current:
            fact, _, _ = facts.remember(scope, actor, key, after, 0.8, "dream", None)
            return {"key": key, "action": "add", "before": None, "after": fact.statement}
        keep = current[-1]
        if len(current) == 1 and keep.statement == after:
            return None
        for f in current[:-1]:
            facts.forget_row(f)
        keep.statement, keep.source, keep.update_time = after, "dream", utcnow()
        keep.save()
        audit.record(actor, "UPDATE", "MEMORY_FACT", keep.id, f"dream updated {key}", workspace_id=scope.workspace_id)
        return {"key": key, "action": "update", "before": before, "after": after}

    def _diary(self, scope: Scope, report: DreamReport, entries: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> None:
        report = DreamReport.get_by_id(report.id)
        now = store.local_now(self.config)
        head = f"{report.mode} dream" + (f' on "{report.topic}"' if report.topic else "")
        lines = [f"\n## {now.strftime('%Y-%m-%d %H:%M %Z')} - {head} (report {report.id})", "", report.summary, ""]
        for e in entries:
            if e["action"] == "remove":
                lines.append(f"- removed **{e['key']}**: {e['before']}")
            elif e["action"] == "add":
                lines.append(f"- added **{e['key']}**: {e['after']}")
            else:
                lines.append(f"- updated **{e['key']}**: {e['before']} -> {e['after']}")
        if not entries:
            lines.append("- no changes")
        lines += [f"- kept **{s['key']}** ({s['reason']})" for s in skipped]
        store.append(self.config, scope, store.DIARY, "\n".join(lines) + "\n")

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)


# ---- reports, entries, the morning card -------------------------------------------


def get_report(scope: Scope, report_id: int) -> DreamReport:
    r = DreamReport.get_or_none((DreamReport.id == report_id) & scope.where(DreamReport))
    if r is None:
        raise NotFound("Dream report not found")
    return r


def _entry(report: DreamReport, key: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    entries = [dict(e) for e in (report.entries or [])]
    found = next((e for e in entries if e["key"] == key), None)
    if found is None:
        raise NotFound("Report entry not found")
    return entries, found


def confirm_entry(scope: Scope, caller: Caller, report_id: int, key: str) -> dict[str, Any]:
    """Acknowledge an entry (nothing changes in memory; the confirmation time is recorded)."""
    with database.atomic():
        report = get_report(scope, report_id)
        entries, entry = _entry(report, key)
        entry["confirmTime"] = entry.get("confirmTime") or iso(utcnow())
        DreamReport.update(entries=entries).where(DreamReport.id == report.id).execute()
        audit.record(caller, "UPDATE", "DREAM_REPORT", report.id, f"confirmed {key}", workspace_id=scope.workspace_id)
    return entry_vo(entry)


def edit_entry(config: Any, scope: Scope, caller: Caller, report_id: int, key: str, after: str) -> dict[str, Any]:
    """Replace an entry's statement; the fact becomes user-edited, so later dreams keep it."""
    statement = " ".join(after.split())[: facts.STATEMENT_MAX]
    if not statement:
        raise BadRequest("after: must not be blank")
    with database.atomic():
        report = get_report(scope, report_id)
        entries, entry = _entry(report, key)
        current = sorted((f for f in facts.active(scope) if f.key == key), key=lambda f: f.id)
        if current:
            keep = current[-1]
            for f in current[:-1]:
                facts.forget_row(f)
            keep.statement, keep.source, keep.user_edited, keep.update_time = statement, "user", True, utcnow()
            keep.save()
        else:
            keep = Fact.create(
                workspace_id=scope.workspace_id,
                user_id=scope.user_id,
                agent_id=scope.agent_id,
                end_user_id=scope.end_user_id,
                key=key,
                statement=statement,
                confidence=1.0,
                source="user",
                user_edited=True,
            )
        entry["after"], entry["editTime"] = statement, iso(utcnow())
        DreamReport.update(entries=entries).where(DreamReport.id == report.id).execute()
        audit.record(caller, "UPDATE", "MEMORY_FACT", keep.id, f"user edited {key}", workspace_id=scope.workspace_id)
    store.write_projection(config, scope)
    return entry_vo(entry) | {"factId": str(keep.id), "memoryFile": scope.path(store.PROJECTION)}


def morning_card(scope: Scope) -> dict[str, Any] | None:
    """The last completed dream of this memory in short, with its `seen` flag (null before any dream)."""
    r = last_completed(scope)
    if r is None:
        return None
    entries = list(r.entries or [])
    return {
        "reportId": str(r.id),
        "agentId": str(r.agent_id),
        "endUserId": r.end_user_id or None,
        "mode": r.mode,
        "topic": r.topic,
        "summary": r.summary,
        "counts": counts(entries),
        "highlights": [entry_vo(e) for e in entries[:5]],
        "createTime": iso(r.create_time),
        "finishTime": iso(r.finish_time),
        "seen": bool(r.seen),
    }


def mark_seen(scope: Scope, caller: Caller) -> dict[str, Any]:
    with database.atomic():
        r = last_completed(scope)
        if r is None:
            raise NotFound("No dream report yet")
        DreamReport.update(seen=True).where(DreamReport.id == r.id).execute()
        audit.record(caller, "UPDATE", "DREAM_REPORT", r.id, "morning card seen", workspace_id=scope.workspace_id)
    card = morning_card(scope)
    assert card is not None
    return card


def reports_query(scope: Scope) -> Any:
    return DreamReport.select().where(scope.where(DreamReport)).order_by(DreamReport.create_time.desc(), DreamReport.id.desc())
