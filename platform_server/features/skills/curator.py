"""The skills curator: managed skills, control state, the scan that proposes archive/merge/keep, reports."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from platform_server.config import Config
from platform_server.db import database, iso, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.skills import frontmatter as fm
from platform_server.features.skills import secrets, service
from platform_server.features.skills.curator_models import CuratorRun, CuratorState, ManagedSkill
from platform_server.features.skills.models import Skill
from platform_server.serialize import Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, NotFound

MAX_BULK = 500
SKILL_ID_PATTERN = "^[0-9]{1,18}$"  # a path id's own pattern (web.openapi._path_params)
SKILL_ID = re.compile(SKILL_ID_PATTERN)
_WORD = re.compile(r"[a-z0-9][a-z0-9_+#]*|[\u3040-\u30ff\u3400-\u9fff]")
_STOP = frozenset(
    "a an and are as at be by for from how i in into is it its of on or that the this to use used using when which with you your skill skills".split()
)


@dataclass(frozen=True)
class Settings:
    unused_days: int
    similarity: float
    interval: dt.timedelta

    @classmethod
    def of(cls, config: Config) -> "Settings":
        return cls(
            max(1, config.skills_curator_unused_days),
            min(1.0, max(0.0, config.skills_curator_similarity)),
            dt.timedelta(hours=max(0.001, config.skills_curator_interval_hours)),
        )


# ---- control state --------------------------------------------------------------------------


def state_of(workspace_id: int) -> CuratorState | None:
    return CuratorState.get_or_none(CuratorState.workspace_id == workspace_id)


def ensure_state(workspace_id: int) -> CuratorState:
    """The workspace's control row, created (inactive, not paused) on the first curator write."""
    state = state_of(workspace_id)
    return state if state is not None else CuratorState.create(workspace_id=workspace_id)


def next_run(state: CuratorState | None, settings: Settings) -> dt.datetime | None:
    """When the next scheduled scan is due (None while paused or before the first curator write)."""
    if state is None or state.paused:
        return None
    return (state.last_scheduled_at or state.create_time) + settings.interval


def _live_counts(workspace_id: int) -> dict[str, int]:
    rows = list(Skill.select(Skill.id, Skill.archived, Skill.pinned).where(Skill.workspace_id == workspace_id))
    managed = managed_ids(workspace_id)
    return {
        "managed": sum(1 for s in rows if s.id in managed and not s.archived),
        "managedArchived": sum(1 for s in rows if s.id in managed and s.archived),
        "managedPinned": sum(1 for s in rows if s.id in managed and s.pinned and not s.archived),
        "unmanaged": sum(1 for s in rows if s.id not in managed and not s.archived),
        "reports": CuratorRun.select().where(CuratorRun.workspace_id == workspace_id).count(),
        # the original console's tiles: every skill of the workspace by lifecycle
        "active": sum(1 for s in rows if not s.archived),
        "archived": sum(1 for s in rows if s.archived),
        "pinned": sum(1 for s in rows if s.pinned and not s.archived),
    }


def status(workspace_id: int, settings: Settings) -> dict[str, Any]:
    """Active, paused, consolidation, last and next run, counts."""
    state = state_of(workspace_id)
    last = CuratorRun.get_or_none(CuratorRun.id == state.last_run_id) if state and state.last_run_id else None
    data: dict[str, Any] = {
        "workspaceId": str(workspace_id),
        "active": bool(state and state.active),
        "paused": bool(state and state.paused),
        "consolidate": bool(state and state.consolidate),
        "mode": "archive" if state and state.active else "preview",
        "intervalHours": settings.interval.total_seconds() / 3600,
        "unusedDays": settings.unused_days,
        "similarity": settings.similarity,
        "lastRunAt": iso(state.last_run_at) if state else None,
        "lastRunId": str(state.last_run_id) if state and state.last_run_id else None,
        "lastScheduledAt": iso(state.last_scheduled_at) if state else None,
        "nextRunAt": iso(next_run(state, settings)),
        "lastSummary": last.summary if last else None,
        "counts": _live_counts(workspace_id),
    }
    # the same facts grouped the way the original console reads them
    data["config"] = {
        "enabled": data["active"],
        "cron": f"every {data['intervalHours']:g} h",
        "staleAfterDays": settings.unused_days,
        "archiveAfterDays": settings.unused_days,
        "scope": "managed",
    }
    data["control"] = {
        "activated": data["active"],
        "paused": data["paused"],
        "consolidate": data["consolidate"],
        "lastRunAt": data["lastRunAt"],
        "lastDryRunAt": data["lastRunAt"],
        "lastObservedAt": data["lastScheduledAt"],
        "nextScheduledRun": data["nextRunAt"],
    }
    last_id = data["lastRunId"]
    data["lastReport"] = {"id": last_id, "url": f"/api/v1/skills/curator/reports/{last_id}"} if last_id else None
    return data


def set_flag(caller: Caller, attr: str, value: bool, detail: str) -> None:
    """Set active / paused / consolidate of the caller's workspace; audited."""
    with database.atomic():
        state = ensure_state(caller.workspace_id)
        setattr(state, attr, value)
        state.update_time = utcnow()
        state.save()
        audit.record(caller, "UPDATE", "SKILL_CURATOR", caller.workspace_id, detail)


# ---- managed skills -------------------------------------------------------------------------


def managed_ids(workspace_id: int) -> set[int]:
    return {m.skill_id for m in ManagedSkill.select(ManagedSkill.skill).where(ManagedSkill.workspace_id == workspace_id)}


def skill_list(caller: Caller, managed: bool, include_archived: bool) -> list[dict[str, Any]]:
    """Managed (or unmanaged) skills of the workspace; archived ones only with include_archived."""
    adopted = {m.skill_id: m for m in ManagedSkill.select().where(ManagedSkill.workspace_id == caller.workspace_id)}
    q = Skill.select().where(Skill.workspace_id == caller.workspace_id)
    if not include_archived:
        q = q.where(Skill.archived == 0)
    out = []
    for skill in q.order_by(Skill.pinned.desc(), Skill.name):
        row = adopted.get(skill.id)
        if (row is not None) != managed:
            continue
        item = service.to_dict(skill)
        item["managed"] = managed
        item["adoptedAt"] = iso(row.create_time) if row else None
        out.append(item)
    return out


def parse_ids(body: Any) -> list[int]:
    """A bulk body: a JSON array of 1..500 skill ids, each a string of 1-18 ASCII digits (SKILL_ID_PATTERN, as the
    document says: an id that names no skill is a 404, not a malformed one)."""
    if not isinstance(body, list):
        raise BadRequest("Request body must be a JSON array of skill ids")
    if not body:
        raise BadRequest("body: at least one skill id is required")
    if len(body) > MAX_BULK:
        raise BadRequest(f"body: at most {MAX_BULK} skill ids")
    ids: list[int] = []
    for i, raw in enumerate(body):
        if not isinstance(raw, str) or not SKILL_ID.fullmatch(raw):
            raise BadRequest(f"body[{i}]: must be a skill id (a string of 1-18 digits)")
        ids.append(int(raw))
    return list(dict.fromkeys(ids))


def _skills_of(caller: Caller, ids: list[int]) -> list[Skill]:
    found = {s.id: s for s in Skill.select().where(Skill.id.in_(ids) & (Skill.workspace_id == caller.workspace_id))}
    missing = [str(i) for i in ids if i not in found]
    if missing:
        raise NotFound(f"Skill not found: {', '.join(missing[:10])}")
    return [found[i] for i in ids]


def adopt(caller: Caller, ids: list[int]) -> dict[str, Any]:
    """Hand skills over to curation (all or nothing; unknown ids are a 404); audited per skill."""
    with database.atomic():
        skills = _skills_of(caller, ids)
        ensure_state(caller.workspace_id)
        have = managed_ids(caller.workspace_id)
        adopted, already = [], []
        for skill in skills:
            if skill.id in have:
                already.append(str(skill.id))
                continue
            ManagedSkill.create(skill=skill.id, workspace_id=caller.workspace_id, adopted_by=caller.user_id)
            audit.record(caller, "UPDATE", "SKILL", skill.id, f"skill {skill.name}: handed over to the curator")
            adopted.append(str(skill.id))
    return {"adopted": adopted, "alreadyManaged": already, "managedCount": len(have) + len(adopted)}


def release(caller: Caller, ids: list[int]) -> dict[str, Any]:
    """Return skills to user ownership (all or nothing); audited per skill."""
    with database.atomic():
        skills = _skills_of(caller, ids)
        have = managed_ids(caller.workspace_id)
        released, not_managed = [], []
        for skill in skills:
            if skill.id not in have:
                not_managed.append(str(skill.id))
                continue
            ManagedSkill.delete().where(ManagedSkill.skill == skill.id).execute()
            audit.record(caller, "UPDATE", "SKILL", skill.id, f"skill {skill.name}: returned to user ownership")
            released.append(str(skill.id))
    return {"released": released, "notManaged": not_managed, "managedCount": len(have) - len(released)}


# ---- the scan -------------------------------------------------------------------------------


def tokens(skill: Skill) -> frozenset[str]:
    """The word set of a skill's description and instructions (front matter and stop words left out)."""
    try:
        body = fm.parse(skill.content).body if skill.content else ""
    except BadRequest:
        body = skill.content
    text = f"{skill.display_name} {skill.description} {body}".lower()
    return frozenset(w for w in _WORD.findall(text) if w not in _STOP)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two token sets (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _groups(skills: list[Skill], threshold: float) -> list[tuple[list[Skill], dict[int, float]]]:
    """Clusters of near-duplicates (connected pairs at or above the threshold), with each member's best score."""
    toks = {s.id: tokens(s) for s in skills}
    parent = {s.id: s.id for s in skills}
    best: dict[int, float] = {}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(skills):
        for b in skills[i + 1 :]:
            score = similarity(toks[a.id], toks[b.id])
            if score >= threshold:
                parent[root(a.id)] = root(b.id)
                best[a.id] = max(best.get(a.id, 0.0), score)
                best[b.id] = max(best.get(b.id, 0.0), score)
    clusters: dict[int, list[Skill]] = {}
    for s in skills:
        clusters.setdefault(root(s.id), []).append(s)
    return [(members, best) for members in clusters.values() if len(members) > 1]


def _keeper(members: list[Skill], bound: dict[int, list[dict[str, str]]]) -> Skill:
    """The duplicate that stays: pinned, then in use by agents, then most used, then most recent use, then oldest."""
    epoch = dt.datetime(1970, 1, 1)
    return min(
        members, key=lambda s: (-int(s.pinned), -int(bool(bound[s.id])), -s.use_count, -(s.last_used_at or epoch).timestamp(), s.create_time, s.id)
    )


# A skill or agent as `{id, name}`.
_ref = Fields(
    id=ident("id"),
    name="name",
)


def plan(workspace_id: int, now: dt.datetime, settings: Settings, consolidate: bool) -> list[dict[str, Any]]:
    """One proposed action per live managed skill: archive, merge or keep, with reasons; changes nothing."""
    managed = managed_ids(workspace_id)
    skills = [s for s in Skill.select().where((Skill.workspace_id == workspace_id) & (Skill.archived == 0)).order_by(Skill.name) if s.id in managed]
    keys = secrets.keys_by_skill([s.id for s in skills])
    bound = {s.id: [_ref(a) for a in service.bound_enabled_agents(s)] for s in skills}
    duplicate_of: dict[int, tuple[Skill, float]] = {}
    keepers: dict[int, list[Skill]] = {}
    for members, scores in _groups(skills, settings.similarity):
        keeper = _keeper(members, bound)
        keepers[keeper.id] = [m for m in members if m.id != keeper.id]
        for m in members:
            if m.id != keeper.id:
                duplicate_of[m.id] = (keeper, round(scores.get(m.id, 0.0), 3))

    def idle_days(s: Skill) -> int:
        last = s.last_used_at or s.create_time
        return (now - last).days if last else 0

    # A keeper that is itself archived as unused has nothing to merge into: its duplicates are archived too.
    by_id = {s.id: s for s in skills}
    departing = {k for k in keepers if not by_id[k].pinned and not bound[k] and idle_days(by_id[k]) >= settings.unused_days}
    actions = []
    for s in skills:
        flags: list[str] = []
        reasons: list[str] = []
        item: dict[str, Any] = {"skillId": str(s.id), "skillName": s.name, "pinned": int(s.pinned)}
        idle = idle_days(s)
        if idle >= settings.unused_days:
            flags.append("unused")
            reasons.append(
                f"unused for {idle} days (threshold {settings.unused_days})"
                if s.last_used_at
                else f"never used in the {idle} days since it was created (threshold {settings.unused_days})"
            )
        missing = [f"{r['kind']} {r['name']}" for r in service.requirement_statuses(s, keys[s.id]) if r["status"] != "ok"]
        if missing:
            flags.append("broken_requirements")
            reasons.append("missing requirements: " + ", ".join(missing))
        if s.id in duplicate_of:
            keeper, score = duplicate_of[s.id]
            flags.append("duplicate")
            item["duplicateOf"] = _ref(keeper)
            item["similarity"] = score
            reasons.append(f"near-duplicate of {keeper.name} (similarity {score:.2f})")
        if s.id in keepers:
            item["duplicates"] = [_ref(m) for m in keepers[s.id]]
            reasons.append("kept as the best of its near-duplicates: " + ", ".join(m.name for m in keepers[s.id]))
        if s.pinned:
            action = "keep"
            if flags:
                reasons.append("pinned: a pinned skill is never auto-archived")
        elif s.id in duplicate_of:
            merge = consolidate and int(item["duplicateOf"]["id"]) not in departing
            action = "merge" if merge else "archive"
            if merge:
                item["mergeInto"] = item["duplicateOf"]
        elif "unused" in flags:
            action = "archive"
        else:
            action = "keep"
            if not reasons:
                reasons.append("in use" if s.last_used_at else "recently added")
        item.update(action=action, flags=flags, reasons=reasons, outcome="kept" if action == "keep" else "proposed")
        if action != "keep" and bound[s.id]:
            item["outcome"] = "skipped"
            item["boundAgents"] = bound[s.id]
            item["note"] = (
                f"bound to {len(bound[s.id])} enabled agent(s) ({', '.join(a['name'] for a in bound[s.id])}): "
                "the curator never archives a skill in use; archive it yourself with force=true"
            )
        actions.append(item)
    return actions


def summarize(actions: list[dict[str, Any]]) -> dict[str, int]:
    def count(key: str, value: str) -> int:
        return sum(1 for a in actions if a.get(key) == value)

    return {
        "scanned": len(actions),
        "archive": count("action", "archive"),
        "merge": count("action", "merge"),
        "keep": count("action", "keep"),
        "proposed": count("outcome", "proposed"),
        "applied": count("outcome", "applied"),
        "skipped": count("outcome", "skipped"),
        "failed": count("outcome", "failed"),
        "unused": sum(1 for a in actions if "unused" in a["flags"]),
        "duplicates": sum(1 for a in actions if "duplicate" in a["flags"]),
        "brokenRequirements": sum(1 for a in actions if "broken_requirements" in a["flags"]),
    }


# ---- reports --------------------------------------------------------------------------------


RUN_FIELDS = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    trigger="trigger",
    dryRun=lambda run: not run.applied,
    applied=flag("applied"),
    consolidate=flag("consolidate"),
    triggeredBy=ident("triggered_by"),
    snapshotId=ident("snapshot_id"),
    settings="settings",
    summary="summary",
    startedAt=when("started_at"),
    finishedAt=when("finished_at"),
)


def run_dict(run: CuratorRun, full: bool = True) -> dict[str, Any]:
    data = RUN_FIELDS(run)
    if full:
        data["actions"] = run.actions
    return data


def save_run(
    run_id: int,
    workspace_id: int,
    trigger: str,
    applied: bool,
    consolidate: bool,
    actor: Caller | None,
    snapshot_id: int | None,
    actions: list[dict[str, Any]],
    settings: Settings,
    started: dt.datetime,
    keep: int,
) -> CuratorRun:
    """Store a report, stamp the control state, prune old reports (call inside a transaction); audited."""
    run = CuratorRun.create(
        id=run_id,
        workspace_id=workspace_id,
        trigger=trigger,
        applied=applied,
        consolidate=consolidate,
        triggered_by=actor.user_id if actor else None,
        snapshot_id=snapshot_id,
        actions=actions,
        summary=summarize(actions),
        started_at=started,
        finished_at=utcnow(),
        settings={"unusedDays": settings.unused_days, "similarity": settings.similarity},
    )
    state = ensure_state(workspace_id)
    state.last_run_at = run.started_at
    state.last_run_id = run.id
    if trigger == "scheduled":
        state.last_scheduled_at = started
    state.save()
    s = run.summary
    audit.record(
        actor,
        "CREATE",
        "SKILL_CURATOR_RUN",
        run.id,
        f"curator {trigger}{' (applied)' if applied else ' (preview)'}: {s['scanned']} scanned, "
        f"{s['archive']} archive, {s['merge']} merge, {s['applied']} applied, {s['skipped']} skipped",
        workspace_id=workspace_id,
    )
    stale = (
        CuratorRun.select(CuratorRun.id)
        .where(CuratorRun.workspace_id == workspace_id)
        .order_by(CuratorRun.started_at.desc(), CuratorRun.id.desc())
        .offset(max(1, keep))
    )
    CuratorRun.delete().where(CuratorRun.id.in_([r.id for r in stale])).execute()
    return run


def reports(caller: Caller, limit: int) -> list[dict[str, Any]]:
    q = (
        CuratorRun.select()
        .where(CuratorRun.workspace_id == caller.workspace_id)
        .order_by(CuratorRun.started_at.desc(), CuratorRun.id.desc())
        .limit(limit)
    )
    return [run_dict(r, full=False) for r in q]


def report(caller: Caller, run_id: int) -> dict[str, Any]:
    run = CuratorRun.get_or_none((CuratorRun.id == run_id) & (CuratorRun.workspace_id == caller.workspace_id))
    if run is None:
        raise NotFound("Curator report not found")
    return run_dict(run)
