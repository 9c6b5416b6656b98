"""Restore points of a workspace's skill library: capture every skill row with content and files, restore in one transaction."""

from __future__ import annotations

import base64
import json
from typing import Any

from platform_server.db import database, iso, parse_iso, utcnow
from platform_server.features.agents.models import Agent, AgentSkill
from platform_server.features.audit import service as audit
from platform_server.features.skills.curator_models import ManagedSkill, SkillSnapshot
from platform_server.features.skills.models import Skill, SkillFile
from platform_server.serialize import Fields, ident, items, when
from platform_server.web.context import Caller
from platform_server.web.errors import NotFound

FORMAT = 1
MAX_REASON = 500
FILES_CAP = 1024 * 1024  # bundle bytes of one skill captured; a larger bundle is left as it is by a restore
# Library state a restore puts back; usage counters (useCount, lastUsedAt) are facts and stay as they are.
_STATE_FIELDS = ("name", "display_name", "description", "skill_type", "content", "requires", "enabled", "archived", "pinned", "version", "source")


def _dt(value: Any) -> Any:
    return None if value is None else parse_iso(value)


def _skill_state(skill: Skill, files: dict[str, bytes], managed: bool, bound: list[int]) -> dict[str, Any]:
    captured = sum(len(d) for d in files.values()) <= FILES_CAP
    return {
        "id": str(skill.id),
        **{f: getattr(skill, f) for f in _STATE_FIELDS},
        "enabled": bool(skill.enabled),
        "archived": int(skill.archived),
        "pinned": int(skill.pinned),
        "creator_user_id": skill.creator_user_id,
        "archived_at": iso(skill.archived_at),
        "last_used_at": iso(skill.last_used_at),
        "use_count": skill.use_count,
        "create_time": iso(skill.create_time),
        "files": {path: base64.b64encode(data).decode("ascii") for path, data in sorted(files.items())} if captured else None,
        "managed": managed,
        "bound_agent_ids": [str(a) for a in bound],
    }


def library_state(workspace_id: int) -> list[dict[str, Any]]:
    """Every skill of the workspace (archived ones too) as snapshot items."""
    skills = list(Skill.select().where(Skill.workspace_id == workspace_id).order_by(Skill.name))
    ids = [s.id for s in skills]
    files: dict[int, dict[str, bytes]] = {i: {} for i in ids}
    bound: dict[int, list[int]] = {i: [] for i in ids}
    managed: set[int] = set()
    if ids:
        for f in SkillFile.select().where(SkillFile.skill.in_(ids)):
            files[f.skill_id][f.path] = bytes(f.data)
        for b in AgentSkill.select(AgentSkill.agent, AgentSkill.skill_id).where(AgentSkill.skill_id.in_(ids)):
            bound[b.skill_id].append(b.agent_id)
        managed = {m.skill_id for m in ManagedSkill.select(ManagedSkill.skill).where(ManagedSkill.skill.in_(ids))}
    return [_skill_state(s, files[s.id], s.id in managed, sorted(bound[s.id])) for s in skills]


# Snapshot metadata (the captured library itself never leaves the server).
to_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    trigger="trigger",
    reason="reason",
    creatorUserId=ident("creator_user_id"),
    skillCount="skill_count",
    sizeBytes="size_bytes",
    filesOmitted=items("files_omitted"),
    createTime=when("create_time"),
)


def capture(workspace_id: int, trigger: str, reason: str, actor: Caller | None, keep: int) -> SkillSnapshot:
    """Write a restore point (call inside a transaction); old ones beyond `keep` are pruned; audited."""
    items = library_state(workspace_id)
    data = {"format": FORMAT, "skills": items}
    snap = SkillSnapshot.create(
        workspace_id=workspace_id,
        trigger=trigger,
        reason=reason[:MAX_REASON],
        files_omitted=[i["name"] for i in items if i["files"] is None],
        creator_user_id=actor.user_id if actor else None,
        skill_count=len(items),
        size_bytes=len(json.dumps(data, separators=(",", ":"))),
        data=data,
    )
    audit.record(
        actor, "CREATE", "SKILL_SNAPSHOT", snap.id, f"skill library restore point ({trigger}): {len(items)} skills", workspace_id=workspace_id
    )
    stale = (
        SkillSnapshot.select(SkillSnapshot.id)
        .where(SkillSnapshot.workspace_id == workspace_id)
        .order_by(SkillSnapshot.create_time.desc(), SkillSnapshot.id.desc())
        .offset(max(1, keep))
    )
    SkillSnapshot.delete().where(SkillSnapshot.id.in_([s.id for s in stale])).execute()
    return snap


def create(caller: Caller, reason: str | None, keep: int) -> dict[str, Any]:
    with database.atomic():
        snap = capture(caller.workspace_id, "manual", (reason or "").strip(), caller, keep)
    return to_dict(snap)


def recent(caller: Caller, limit: int) -> list[dict[str, Any]]:
    fields = [f for f in SkillSnapshot._meta.sorted_fields if f.name != "data"]  # the library itself stays unread
    q = (
        SkillSnapshot.select(*fields)
        .where(SkillSnapshot.workspace_id == caller.workspace_id)
        .order_by(SkillSnapshot.create_time.desc(), SkillSnapshot.id.desc())
        .limit(limit)
    )
    return [to_dict(s) for s in q]


def get(caller: Caller, snapshot_id: int) -> SkillSnapshot:
    snap = SkillSnapshot.get_or_none((SkillSnapshot.id == snapshot_id) & (SkillSnapshot.workspace_id == caller.workspace_id))
    if snap is None:
        raise NotFound("Snapshot not found")
    return snap


def _free(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        suffix = f"-{n}"
        candidate = name[: 64 - len(suffix)] + suffix
    return candidate


def _files_of(skill_id: int) -> dict[str, str]:
    rows = SkillFile.select().where(SkillFile.skill == skill_id)
    return {r.path: base64.b64encode(bytes(r.data)).decode("ascii") for r in rows}


def _put_files(skill_id: int, files: dict[str, str]) -> None:
    SkillFile.delete().where(SkillFile.skill == skill_id).execute()
    for path, b64 in sorted(files.items()):
        data = base64.b64decode(b64)
        SkillFile.create(skill=skill_id, path=path, data=data, size=len(data))


def _set_managed(skill_id: int, workspace_id: int, managed: bool, actor: Caller) -> None:
    exists = ManagedSkill.select().where(ManagedSkill.skill == skill_id).exists()
    if managed and not exists:
        ManagedSkill.create(skill=skill_id, workspace_id=workspace_id, adopted_by=actor.user_id)
    elif not managed and exists:
        ManagedSkill.delete().where(ManagedSkill.skill == skill_id).execute()


def _values(item: dict[str, Any]) -> dict[str, Any]:
    values = {f: item[f] for f in _STATE_FIELDS}
    values["archived_at"] = _dt(item.get("archived_at")) if item["archived"] else None
    return values


def restore(caller: Caller, snapshot_id: int, keep: int) -> dict[str, Any]:
    """Put the library back as captured (one transaction, a restore point of the current state first).

    Skills of the snapshot get their captured fields, content, bundle files and curation flag back
    (deleted ones are recreated with their id and agent bindings); skills created after the restore
    point are archived, never deleted. Secrets, usage counters and bundles too large to capture are
    left as they are.
    """
    ws = caller.workspace_id
    with database.atomic():
        snap = get(caller, snapshot_id)
        items: list[dict[str, Any]] = (snap.data or {}).get("skills", [])
        before = capture(ws, "restore", f"Before restoring snapshot {snap.id}", caller, keep + 1)
        current = {s.id: s for s in Skill.select().where(Skill.workspace_id == ws)}
        wanted = {int(i["id"]) for i in items}
        # Ids that now live in another workspace cannot be recreated here.
        foreign = {s.id for s in Skill.select(Skill.id).where(Skill.id.in_(list(wanted)) & (Skill.workspace_id != ws))} if wanted else set()
        for sid in wanted & current.keys():  # free the names first, so restored names may swap freely
            Skill.update(name=f"~restore~{sid}").where(Skill.id == sid).execute()
        taken = {s.name for s in current.values() if s.id not in wanted}
        agents = {a.id for a in Agent.select(Agent.id).where(Agent.workspace_id == ws)}
        updated: list[str] = []
        recreated: list[str] = []
        renamed: list[dict[str, str]] = []
        unchanged = 0
        for item in items:
            sid = int(item["id"])
            if sid in foreign:
                continue
            name = _free(item["name"], taken)
            if name != item["name"]:
                renamed.append({"id": str(sid), "from": item["name"], "to": name})
            taken.add(name)
            values = {**_values(item), "name": name}
            row = current.get(sid)
            if row is None:
                Skill.create(
                    id=sid,
                    workspace_id=ws,
                    creator_user_id=item.get("creator_user_id"),
                    last_used_at=_dt(item.get("last_used_at")),
                    use_count=item.get("use_count", 0),
                    create_time=_dt(item.get("create_time")) or utcnow(),
                    update_time=utcnow(),
                    **values,
                )
                _put_files(sid, item.get("files") or {})
                for agent_id in item.get("bound_agent_ids", []):
                    if int(agent_id) in agents:
                        AgentSkill.create(agent=int(agent_id), skill_id=sid)
                _set_managed(sid, ws, bool(item.get("managed")), caller)
                audit.record(caller, "CREATE", "SKILL", sid, f"skill {name} recreated from snapshot {snap.id}")
                recreated.append(name)
                continue
            old = {f: getattr(row, f) for f in _STATE_FIELDS}
            old.update(enabled=bool(row.enabled), archived=int(row.archived), pinned=int(row.pinned))
            was_managed = ManagedSkill.select().where(ManagedSkill.skill == sid).exists()
            files_changed = item.get("files") is not None and _files_of(sid) != item["files"]
            changed = [f for f in _STATE_FIELDS if old[f] != values[f]]
            if files_changed:
                changed.append("files")
            if was_managed != bool(item.get("managed")):
                changed.append("managed")
            if not changed:
                Skill.update(name=name).where(Skill.id == sid).execute()
                unchanged += 1
                continue
            Skill.update(update_time=utcnow(), **values).where(Skill.id == sid).execute()
            if files_changed:
                _put_files(sid, item["files"])
            _set_managed(sid, ws, bool(item.get("managed")), caller)
            audit.record(caller, "UPDATE", "SKILL", sid, f"skill {name} restored from snapshot {snap.id}: {', '.join(changed)}")
            updated.append(name)
        archived: list[str] = []
        for row in current.values():
            if row.id not in wanted and not row.archived:
                Skill.update(archived=1, archived_at=utcnow(), update_time=utcnow()).where(Skill.id == row.id).execute()
                audit.record(caller, "UPDATE", "SKILL", row.id, f"skill {row.name}: archived (created after snapshot {snap.id})")
                archived.append(row.name)
        audit.record(
            caller,
            "UPDATE",
            "SKILL_SNAPSHOT",
            snap.id,
            f"skill library restored: {len(updated)} updated, {len(recreated)} recreated, {len(archived)} archived",
        )
    return {
        "snapshotId": str(snap.id),
        "preRestoreSnapshotId": str(before.id),
        "updated": updated,
        "recreated": recreated,
        "archived": archived,
        "renamed": renamed,
        "unchanged": unchanged,
    }
