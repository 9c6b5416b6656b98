"""Skills: CRUD scoped to the caller's workspace, lifecycle states, views, and the runtime hook."""

from __future__ import annotations

import os
import re
import shutil
from typing import Any, Iterable

import peewee

from platform_server.config import Config
from platform_server.db import database, utcnow
from platform_server.features.agents import files
from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent, AgentSkill
from platform_server.features.audit import service as audit
from platform_server.features.skills import frontmatter as fm
from platform_server.features.skills import lessons, secrets
from platform_server.features.skills.models import SKILL_TYPES, Skill, SkillFile
from platform_server.features.skills.storage import LESSONS_FILE, SKILL_FILE, Bundle
from platform_server.serialize import Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest, ConfirmationRequired, Conflict, NotFound
from platform_server.web.pagination import PageRequest, paginate

MAX_CONTENT = 256 * 1024  # characters of SKILL.md
MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_BUNDLE_BYTES = 20 * 1024 * 1024
MAX_BUNDLE_FILES = 500
PROMPT_SKILL_CAP = 8_000  # characters of one skill's instructions in the system prompt
PROMPT_TOTAL_CAP = 32_000  # characters of the whole skills section
PROMPT_HEADER = "## Skills\n\nYou have the following skills. When a request matches a skill's description, follow that skill's instructions."


# ---- serialization ------------------------------------------------------------------------


SKILL_FIELDS = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    name="name",
    displayName=lambda skill: skill.display_name or skill.name,
    description="description",
    skillType="skill_type",
    enabled=flag("enabled"),
    archived=lambda skill: int(skill.archived),
    pinned=lambda skill: int(skill.pinned),
    version="version",
    source="source",
    requires=lambda skill: {k: list((skill.requires or {}).get(k, [])) for k in fm.REQUIRE_KINDS},
    creatorUserId=ident("creator_user_id"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
    archivedAt=when("archived_at"),
    lastUsedAt=when("last_used_at"),
    useCount="use_count",
)


def to_dict(skill: Skill, full: bool = False) -> dict[str, Any]:
    """The skill JSON; `full` adds `content` and the bundle file list."""
    data = SKILL_FIELDS(skill)
    if full:
        data["content"] = skill.content
        rows = SkillFile.select(SkillFile.path, SkillFile.size).where(SkillFile.skill == skill.id).order_by(SkillFile.path)
        data["files"] = [{"path": r.path, "size": r.size} for r in rows]
    return data


def bundle_file(skill: Skill, rel: str) -> dict[str, Any]:
    """One bundle file of the skill as text."""
    path = check_bundle_path(rel)
    row = SkillFile.get_or_none((SkillFile.skill == skill.id) & (SkillFile.path == path))
    if row is None:
        raise NotFound("File not found")
    try:
        text = bytes(row.data).decode("utf-8")
    except UnicodeDecodeError:
        raise Conflict(f"'{path}' is not a text file")  # what the file holds, not the request: a 409
    return {"skillId": str(skill.id), "path": path, "size": row.size, "content": text}


def write_bundle_file(caller: Caller, skill_id: int, rel: str, text: str) -> Skill:
    """Create or replace one bundle file, keeping the rest of the bundle."""
    path = check_bundle_path(rel)
    files = dict(bundle_of(get_skill(caller, skill_id)).files)
    clash = _file_and_folder({*files, path})
    if clash is not None:  # the bundle's other files, not the request, are in the way: caught before anything is saved
        raise Conflict(f"path: '{clash}' would be both a file and a folder of the bundle")
    files[path] = text.encode("utf-8")
    skill, _ = update(caller, skill_id, {}, check_bundle(files))
    return skill


def bundle_of(skill: Skill) -> Bundle:
    rows = SkillFile.select().where(SkillFile.skill == skill.id)
    return Bundle(skill.workspace_id, skill.name, skill.content, {r.path: bytes(r.data) for r in rows})


# ---- lookups --------------------------------------------------------------------------------


def _in_workspace(caller: Caller) -> peewee.ModelSelect[Skill]:
    return Skill.select().where(Skill.workspace_id == caller.workspace_id)


def get_skill(caller: Caller, skill_id: int) -> Skill:
    """The skill in the caller's workspace; 404 when absent or in another workspace."""
    skill = _in_workspace(caller).where(Skill.id == skill_id).first()
    if skill is None:
        raise NotFound("Skill not found")
    return skill


def get_by_name(caller: Caller, name: str) -> Skill | None:
    return _in_workspace(caller).where(Skill.name == name).first()


def _ordered(q: peewee.ModelSelect[Any]) -> peewee.ModelSelect[Any]:
    return q.order_by(Skill.pinned.desc(), Skill.update_time.desc(), Skill.id.desc())


def check_type(skill_type: str) -> str:
    if skill_type not in SKILL_TYPES:
        raise BadRequest(f"skillType: must be one of {', '.join(SKILL_TYPES)}")
    return skill_type


def page(
    caller: Caller, req: PageRequest, skill_type: str | None, enabled: bool | None, archived: bool | None, keyword: str | None
) -> dict[str, Any]:
    """A page of the workspace's skills; archived ones only with `archived=true`."""
    q = _in_workspace(caller).where(Skill.archived == int(bool(archived)))
    if skill_type is not None:
        q = q.where(Skill.skill_type == check_type(skill_type))
    if enabled is not None:
        q = q.where(Skill.enabled == int(enabled))
    if keyword and keyword.strip():
        kw = keyword.strip()
        q = q.where(Skill.name.contains(kw) | Skill.display_name.contains(kw) | Skill.description.contains(kw))
    return paginate(_ordered(q), req, to_dict)


def list_enabled(caller: Caller) -> list[dict[str, Any]]:
    q = _in_workspace(caller).where((Skill.enabled == 1) & (Skill.archived == 0))
    return [to_dict(s) for s in _ordered(q)]


def list_by_type(caller: Caller, skill_type: str) -> list[dict[str, Any]]:
    q = _in_workspace(caller).where((Skill.skill_type == check_type(skill_type)) & (Skill.archived == 0))
    return [to_dict(s) for s in _ordered(q)]


def counts(caller: Caller) -> dict[str, Any]:
    """Non-archived skills per type, plus totals."""
    rows = list(_in_workspace(caller).select(Skill.skill_type, Skill.enabled, Skill.archived, Skill.pinned))
    live = [s for s in rows if not s.archived]
    by_type = {t: sum(1 for s in live if s.skill_type == t) for t in SKILL_TYPES}
    return {
        "total": len(live),
        "enabled": sum(1 for s in live if s.enabled),
        "archived": len(rows) - len(live),
        "pinned": sum(1 for s in live if s.pinned),
        "byType": by_type,
        # the original console's tab counters, flat: `all` plus one per skill type
        "all": len(live),
        **by_type,
    }


def summary(caller: Caller) -> dict[str, Any]:
    """Enabled, non-archived skills grouped by type."""
    skills = list_enabled(caller)
    groups = []
    for t in SKILL_TYPES:
        members = [s for s in skills if s["skillType"] == t]
        if members:
            groups.append({"skillType": t, "count": len(members), "skills": members})
    return {"total": len(skills), "groups": groups}


# ---- preparing content ----------------------------------------------------------------------


# A bundle file's path as the `/files/{path}` routes document and check it: the route path rule, and neither
# SKILL.md nor LESSONS.md (the skill's own text and lessons have routes of their own)
BUNDLE_PATH_PATTERN = rf"^(?!(?:{re.escape(SKILL_FILE)}|{re.escape(LESSONS_FILE)})$)" + files.ROUTE_PATH_PATTERN[1:]
BUNDLE_PATH_RE = re.compile(BUNDLE_PATH_PATTERN)


def check_bundle_route_path(path: str) -> str:
    return files.check_route_path(path, BUNDLE_PATH_RE, f"{files.ROUTE_PATH_RULE}, not {SKILL_FILE} nor {LESSONS_FILE}")


def check_bundle_path(rel: str, refusal: type[ApiError] = BadRequest) -> str:
    """A bundle file path (relative, no escape); SKILL.md and LESSONS.md are not bundle files."""
    try:
        clean = "/".join(files.split_rel(rel))
    except ApiError as exc:
        raise refusal(f"files: '{rel[:200]}': {exc.msg}")
    if clean in (SKILL_FILE, LESSONS_FILE):
        raise refusal(f"files: '{clean}' is not a bundle file")
    return clean


def _file_and_folder(paths: Iterable[str]) -> str | None:
    """A path that is a file and, in another path, a folder ("a" beside "a/b"): no folder on disk can hold both."""
    paths = set(paths)
    folders = {p.rsplit("/", i)[0] for p in paths for i in range(1, p.count("/") + 1)}
    return min(paths & folders, default=None)


def check_bundle(bundle: dict[str, bytes], path_refusal: type[ApiError] = BadRequest) -> dict[str, bytes]:
    """The bundle's limits (400) and its paths' rules; a JSON body's `files` keys refuse the latter with
    `path_refusal` (a 422 there: OpenAPI 3.0 cannot state a rule on an object's keys, so the request was valid per
    the document; a ZIP's entry names stay a 400)."""
    if len(bundle) > MAX_BUNDLE_FILES:
        raise BadRequest(f"files: at most {MAX_BUNDLE_FILES} files")
    out: dict[str, bytes] = {}
    for rel, data in bundle.items():
        if len(data) > MAX_FILE_BYTES:
            raise BadRequest(f"files: '{rel[:200]}' is larger than {MAX_FILE_BYTES} bytes")
        out[check_bundle_path(rel, path_refusal)] = data
    clash = _file_and_folder(out)
    if clash is not None:
        raise path_refusal(f"files: '{clash}' is both a file and a folder")
    if sum(len(d) for d in out.values()) > MAX_BUNDLE_BYTES:
        raise BadRequest(f"files: more than {MAX_BUNDLE_BYTES} bytes in total")
    return out


def _values(content: str, name: str, display: str, description: str, version: str) -> dict[str, Any]:
    """Final stored values; the SKILL.md front matter is rewritten to agree with the fields."""
    if len(content) > MAX_CONTENT:
        raise BadRequest(f"content: at most {MAX_CONTENT} characters")
    text = fm.with_meta(
        content,
        {
            "name": name,
            "displayName": display if display and display != name else None,
            "description": description or None,
            "version": version,
        },
    )
    requires = fm.requirements(fm.parse(text).meta, strict=True)
    return {"name": name, "display_name": display or name, "description": description, "version": version, "content": text, "requires": requires}


def prepare_new(
    content: str | None, name: str | None, display_name: str | None = None, description: str | None = None, version: str | None = None
) -> dict[str, Any]:
    """Values of a new skill from explicit fields, falling back to the SKILL.md front matter."""
    doc = fm.parse(content) if content else fm.SkillDoc()
    fm_name = doc.text("name")
    # no name anywhere: one made from what names it (slugify answers `skill` for nothing); taken, it is a 409
    final = fm.check_slug(name) if name else fm.slugify(fm_name or display_name or "")
    display = display_name or doc.text("displayName") or doc.text("display_name") or (fm_name if fm_name != final else None) or final
    desc = description if description is not None else (doc.text("description") or "")
    ver = version or doc.text("version") or "1.0.0"
    return _values(content if content is not None else fm.compose({}, ""), final, display, desc, ver)


def _unique_name(caller: Caller, name: str, exclude_id: int | None = None) -> None:
    q = _in_workspace(caller).where(Skill.name == name)
    if exclude_id is not None:
        q = q.where(Skill.id != exclude_id)
    if q.exists():
        raise Conflict(f"A skill named '{name}' already exists in this workspace")


def free_name(caller: Caller, base: str) -> str:
    """`base`, or `base-2`, `base-3`, ... whichever is free in the workspace."""
    name, n = base, 1
    while get_by_name(caller, name) is not None:
        n += 1
        suffix = f"-{n}"
        name = base[: 64 - len(suffix)] + suffix
    return name


def _replace_files(skill: Skill, bundle: dict[str, bytes]) -> None:
    SkillFile.delete().where(SkillFile.skill == skill.id).execute()
    for rel, data in sorted(bundle.items()):
        SkillFile.create(skill=skill.id, path=rel, data=data, size=len(data))


def create_skill(
    caller: Caller, values: dict[str, Any], skill_type: str, source: str, enabled: bool, bundle: dict[str, bytes] | None = None
) -> Skill:
    """Insert a prepared skill (see prepare_new) with its bundle; audited."""
    with database.atomic():
        _unique_name(caller, values["name"])
        skill = Skill.create(
            workspace_id=caller.workspace_id, skill_type=skill_type, source=source[:255], enabled=enabled, creator_user_id=caller.user_id, **values
        )
        _replace_files(skill, bundle or {})
        audit.record(caller, "CREATE", "SKILL", skill.id, f"skill {skill.name} ({skill_type})")
    return skill


def update(caller: Caller, skill_id: int, given: dict[str, Any], bundle: dict[str, bytes] | None, record_noop: bool = True) -> tuple[Skill, str]:
    """Sparse update; returns the skill and its name before the change (the cache folder to move)."""
    with database.atomic():
        skill = get_skill(caller, skill_id)
        old_name = skill.name
        content = given.get("content")
        doc = fm.parse(content) if content is not None else None
        name = given.get("name") or skill.name
        if name != skill.name:
            fm.check_slug(name)
            if skill.skill_type == "builtin":
                raise Conflict("Built-in skills cannot be renamed")  # what the skill is: a 409
            _unique_name(caller, name, skill.id)

        def pick(key: str, *fm_keys: str) -> Any:
            if given.get(key) is not None:
                return given[key]
            if doc is not None:
                found = next((doc.text(k) for k in fm_keys if doc.text(k)), None)
                if found:
                    return found
            return None

        display = pick("displayName", "displayName", "display_name") or skill.display_name
        description = pick("description", "description")
        version = pick("version", "version") or skill.version
        values = _values(
            content if content is not None else skill.content, name, display, skill.description if description is None else description, version
        )
        changed = [k for k, v in values.items() if getattr(skill, k) != v]
        for key, value in values.items():
            setattr(skill, key, value)
        if given.get("enabled") is not None and bool(skill.enabled) != given["enabled"]:
            skill.enabled = given["enabled"]
            changed.append("enabled")
        if bundle is not None:
            _replace_files(skill, bundle)
            changed.append("files")
        if not changed and not record_noop:
            return skill, old_name
        skill.update_time = utcnow()
        skill.save()
        audit.record(caller, "UPDATE", "SKILL", skill.id, f"skill {skill.name}: {', '.join(changed) or 'no change'}")
    return skill, old_name


def delete(caller: Caller, skill_id: int) -> Skill:
    """Delete the skill, its files, secrets and agent bindings (the caller removes the folder)."""
    with database.atomic():
        skill = get_skill(caller, skill_id)
        bindings = AgentSkill.delete().where(AgentSkill.skill_id == skill.id).execute()
        skill.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "SKILL", skill.id, f"skill {skill.name} ({bindings} bindings removed)")
    return skill


def _set_flag(caller: Caller, skill_id: int, attr: str, value: Any, detail: str) -> Skill:
    with database.atomic():
        skill = get_skill(caller, skill_id)
        setattr(skill, attr, value)
        if attr == "archived":
            skill.archived_at = utcnow() if value else None
        skill.update_time = utcnow()
        skill.save()
        audit.record(caller, "UPDATE", "SKILL", skill.id, f"skill {skill.name}: {detail}")
    return skill


def toggle(caller: Caller, skill_id: int, enabled: bool | None) -> dict[str, Any]:
    """Set `enabled`, or flip it when not given."""
    current = get_skill(caller, skill_id)
    value = (not current.enabled) if enabled is None else enabled
    return to_dict(_set_flag(caller, skill_id, "enabled", value, "enabled" if value else "disabled"))


def pin(caller: Caller, skill_id: int, pinned: bool | None) -> dict[str, Any]:
    current = get_skill(caller, skill_id)
    value = (not current.pinned) if pinned is None else pinned
    return to_dict(_set_flag(caller, skill_id, "pinned", int(value), "pinned" if value else "unpinned"))


def bound_enabled_agents(skill: Skill) -> list[Agent]:
    """Enabled agents of the skill's workspace bound to it."""
    q = (
        Agent.select()
        .join(AgentSkill, on=(AgentSkill.agent == Agent.id))
        .where((AgentSkill.skill_id == skill.id) & (Agent.workspace_id == skill.workspace_id) & (Agent.enabled == 1))
        .order_by(Agent.name, Agent.id)
    )
    return list(q)


def archive(caller: Caller, skill_id: int, force: bool) -> dict[str, Any]:
    """Archive; bound to enabled agents it needs `force=true` (409 with `boundAgents` otherwise)."""
    skill = get_skill(caller, skill_id)
    if skill.archived:
        return to_dict(skill)
    bound = bound_enabled_agents(skill)
    if bound and not force:
        raise ConfirmationRequired(
            f"Skill '{skill.name}' is bound to {len(bound)} enabled agent(s); repeat with force=true to archive it",
            [{"id": str(a.id), "name": a.name} for a in bound],
        )
    return to_dict(_set_flag(caller, skill_id, "archived", 1, "archived" + (" (forced)" if bound else "")))


def restore(caller: Caller, skill_id: int) -> dict[str, Any]:
    skill = get_skill(caller, skill_id)
    if not skill.archived:  # the skill's state, not the request, refuses it
        raise Conflict("Skill is not archived")
    return to_dict(_set_flag(caller, skill_id, "archived", 0, "restored"))


def employees(caller: Caller, skill_id: int) -> list[dict[str, Any]]:
    """Agents that can use the skill: bound, enabled, skills not disabled."""
    skill = get_skill(caller, skill_id)
    return [
        {"id": str(a.id), "name": a.name, "description": a.description, "icon": a.icon} for a in bound_enabled_agents(skill) if not a.skills_disabled
    ]


# ---- requirements ---------------------------------------------------------------------------


def requirement_statuses(skill: Skill, secret_keys: Iterable[str]) -> list[dict[str, Any]]:
    """Each declared requirement with `ok` or `missing` (env vars may also be set as skill secrets)."""
    keys = set(secret_keys)
    req = skill.requires or {}
    out: list[dict[str, Any]] = []
    for name in req.get("env", []):
        source = "secret" if name in keys else "env" if os.environ.get(name) else None
        out.append({"kind": "env", "name": name, "status": "ok" if source else "missing", "source": source})
    for name in req.get("bins", []):
        found = shutil.which(name) is not None
        out.append({"kind": "bin", "name": name, "status": "ok" if found else "missing", "source": "path" if found else None})
    for name in req.get("secrets", []):
        found = name in keys
        out.append({"kind": "secret", "name": name, "status": "ok" if found else "missing", "source": "secret" if found else None})
    return out


def requirements(caller: Caller, skill_id: int) -> dict[str, Any]:
    skill = get_skill(caller, skill_id)
    items = requirement_statuses(skill, secrets.keys_by_skill([skill.id])[skill.id])
    return {"skillId": str(skill.id), "name": skill.name, "satisfied": all(i["status"] == "ok" for i in items), "requirements": items}


def rescan(caller: Caller, skill_id: int, folder: Bundle | None) -> dict[str, Any]:
    """Re-read SKILL.md (the cache folder's copy when it was edited there) and re-parse the front matter."""
    skill = get_skill(caller, skill_id)
    given: dict[str, Any] = {"content": skill.content}
    bundle = None
    adopted = folder is not None and (folder.content != skill.content or folder.files != bundle_of(skill).files)
    if adopted and folder is not None:
        given["content"] = folder.content
        bundle = check_bundle(folder.files)
    doc = fm.parse(given["content"])
    for key in ("description", "version"):
        if doc.text(key):
            given[key] = doc.text(key)
    given["displayName"] = doc.text("displayName") or doc.text("display_name")
    updated, _ = update(caller, skill.id, given, bundle, record_noop=False)
    return {"skill": to_dict(updated, full=True), "adoptedFromFolder": adopted, "requires": to_dict(updated)["requires"]}


# ---- the runtime hook -----------------------------------------------------------------------


def active_skills(agent: Agent) -> list[Skill]:
    """Bound, enabled, non-archived skills of the agent's workspace whose requirements are met."""
    if agent.skills_disabled:
        return []
    order = {sid: i for i, sid in enumerate(agents.bound_skills(agent.id))}
    if not order:
        return []
    rows = list(
        Skill.select().where(Skill.id.in_(list(order)) & (Skill.workspace_id == agent.workspace_id) & (Skill.enabled == 1) & (Skill.archived == 0))
    )
    keys = secrets.keys_by_skill([s.id for s in rows])
    usable = [s for s in rows if all(r["status"] == "ok" for r in requirement_statuses(s, keys[s.id]))]
    return sorted(usable, key=lambda s: (-int(s.pinned), order[s.id]))


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "\n\n[... instructions truncated ...]"


def _section(config: Config, agent: Agent, skill: Skill) -> str:
    title = skill.name if not skill.display_name or skill.display_name == skill.name else f"{skill.name} ({skill.display_name})"
    parts = [f"### {title}"]
    if skill.description.strip():
        parts.append(skill.description.strip())
    body = fm.parse(skill.content).body.strip() if skill.content else ""
    if body:
        parts.append(_cap(body, PROMPT_SKILL_CAP))
    exported = agents.agent_root(config, agent.id) / "workspace" / "skills" / skill.name
    if exported.is_dir() and not exported.is_symlink():
        parts.append(f"(Files of this skill are in your workspace under `skills/{skill.name}/`.)")
    learned = lessons.prompt_text(config, skill.workspace_id, skill.name)
    if learned:
        parts.append(learned)
    return "\n\n".join(parts)


def prompt_for_agent(config: Config, agent: Agent) -> str:
    """The "## Skills" section the runtime appends to the system prompt ("" when there is none)."""
    skills = active_skills(agent)
    if not skills:
        return ""
    out = PROMPT_HEADER
    omitted: list[str] = []
    for skill in skills:
        section = _section(config, agent, skill)
        if omitted or len(out) + len(section) + 2 > PROMPT_TOTAL_CAP:
            omitted.append(skill.name)
            continue
        out += "\n\n" + section
    if omitted:
        out += "\n\n(Omitted for length: " + ", ".join(omitted) + ".)"
    return out


def secret_env(master: bytes, agent: Agent) -> dict[str, str]:
    """The secrets of the agent's active skills, for its tool executions' environment."""
    return secrets.env_for(master, active_skills(agent))


def mark_used(skill_names: list[str], workspace_id: int | None = None) -> None:
    """Count a use of each named skill (within workspace_id when given) and stamp lastUsedAt."""
    names = [n for n in dict.fromkeys(skill_names) if n]
    if not names:
        return
    q = Skill.update(use_count=Skill.use_count + 1, last_used_at=utcnow()).where(Skill.name.in_(names))
    if workspace_id is not None:
        q = q.where(Skill.workspace_id == workspace_id)
    with database.atomic():
        q.execute()


def prompt_preview(config: Config, caller: Caller, agent_id: int) -> dict[str, Any]:
    agent = agents.get_agent(caller, agent_id)
    text = prompt_for_agent(config, agent)
    return {
        "agentId": str(agent.id),
        "skillsDisabled": bool(agent.skills_disabled),
        "skills": [s.name for s in active_skills(agent)],
        "prompt": text,
        "length": len(text),
    }


def runtime_active(caller: Caller) -> list[dict[str, Any]]:
    """Every agent of the workspace with the skills the runtime would give it now."""
    rows = Agent.select().where(Agent.workspace_id == caller.workspace_id).order_by(Agent.name, Agent.id)
    return [
        {
            "agentId": str(a.id),
            "agentName": a.name,
            "enabled": bool(a.enabled),
            "skillsDisabled": bool(a.skills_disabled),
            "skills": [{"id": str(s.id), "name": s.name, "displayName": s.display_name or s.name} for s in active_skills(a)],
        }
        for a in rows
    ]


def runtime_status(caller: Caller) -> list[dict[str, Any]]:
    """Each skill's resolution: archived, disabled, requirements_missing or ready, with bound agents."""
    rows = list(_ordered(_in_workspace(caller)))
    keys = secrets.keys_by_skill([s.id for s in rows])
    out = []
    for s in rows:
        missing = [{"kind": r["kind"], "name": r["name"]} for r in requirement_statuses(s, keys[s.id]) if r["status"] != "ok"]
        status = "archived" if s.archived else "disabled" if not s.enabled else "requirements_missing" if missing else "ready"
        bound = bound_enabled_agents(s)
        out.append(
            {
                "id": str(s.id),
                "name": s.name,
                "skillType": s.skill_type,
                "enabled": bool(s.enabled),
                "archived": int(s.archived),
                "status": status,
                "missing": missing,
                "boundAgentCount": len(bound),
                "activeAgentCount": sum(1 for a in bound if not a.skills_disabled),
                # the original console's names: resolvable now, and why not
                "runtimeAvailable": status == "ready",
                "resolutionError": None if not missing else "missing: " + ", ".join(m["name"] for m in missing),
            }
        )
    return out


def workspace_skills(workspace_id: int) -> list[Skill]:
    return list(Skill.select().where(Skill.workspace_id == workspace_id).order_by(Skill.name))
