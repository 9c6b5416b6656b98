"""Agents: CRUD scoped to the caller's workspace, bindings, preferences, and what the runtime reads."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path
from typing import Any, Sequence

from platform_server.config import Config
from platform_server.db import database, first_where, iso, utcnow
from platform_server.features.agents import files
from platform_server.features.agents.errors import AgentNotFound
from platform_server.features.agents.models import Agent, AgentSkill, AgentTool
from platform_server.features.agents.schemas import AgentCreate, AgentUpdate
from platform_server.features.audit import service as audit
from platform_server.features.models import runtime
from platform_server.features.settings import service as settings
from platform_server.features.skills.models import Skill
from platform_server.features.wiki.models import KnowledgeBase
from platform_server.features.workspaces import service as workspaces
from platform_server.memo import memo_on
from platform_server.ports import files as file_store
from platform_server.web.context import Caller
from platform_server.web.encode import JsonText, encoded
from platform_server.web.errors import ApiError, BadRequest, Forbidden, NotFound
from platform_server.web.ownership import may_change

PROMPT_FILE_CAP = 64 * 1024  # bytes of one prompt file appended to the system prompt
_SAFE_END_USER = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")

# AgentEntity JSON name -> model attribute
FIELDS = {
    "name": "name",
    "description": "description",
    "agentType": "agent_type",
    "systemPrompt": "system_prompt",
    "modelProvider": "model_provider",
    "modelName": "model_name",
    "maxIterations": "max_iterations",
    "enabled": "enabled",
    "icon": "icon",
    "tags": "tags",
    "defaultThinkingLevel": "default_thinking_level",
    "primaryKbId": "primary_kb_id",
    "skillsDisabled": "skills_disabled",
    "toolsDisabled": "tools_disabled",
}
NULLABLE = {"modelProvider", "defaultThinkingLevel", "primaryKbId"}


# ---- the API other areas use -------------------------------------------------


def get_agent(caller: Caller, agent_id: int) -> Agent:
    """The agent in the caller's workspace; 404 when absent or in another workspace."""
    agent = Agent.get_or_none((Agent.id == agent_id) & (Agent.workspace_id == caller.workspace_id))
    if agent is None:
        raise NotFound("Agent not found")
    return agent


def get_agent_for_chat(caller: Caller, agent_id: int) -> Agent:
    """The agent to run a turn with: AgentNotFound (1001) when absent, 400 when disabled."""
    agent = _chat_agent(agent_id, caller.workspace_id)
    if agent is None:
        raise AgentNotFound()
    if not agent.enabled:
        raise BadRequest("Agent is disabled")
    return agent


@memo_on(Agent)
def _chat_agent(agent_id: int, workspace_id: int) -> Agent | None:
    """The agent row a turn reads (shared while unchanged: turns only read it)."""
    return first_where(Agent, id=agent_id, workspace_id=workspace_id)


# The columns the AgentEntity JSON is built from, in the order `agent_vo` reads them.
VO_COLUMNS = (
    "id",
    "name",
    "description",
    "agent_type",
    "system_prompt",
    "model_provider",
    "model_name",
    "max_iterations",
    "enabled",
    "icon",
    "tags",
    "default_thinking_level",
    "primary_kb_id",
    "skills_disabled",
    "tools_disabled",
    "workspace_id",
    "creator_user_id",
    "template_id",
    "create_time",
    "update_time",
)
_LIST_SQL = f"SELECT {', '.join(VO_COLUMNS)} FROM agent WHERE workspace_id = ?"
_LIST_ORDER = " ORDER BY create_time DESC, id DESC"


def agent_vo(row: Sequence[Any]) -> dict[str, Any]:
    """The AgentEntity JSON from one row of `VO_COLUMNS` (stored text or model values alike)."""
    (
        id_,
        name,
        description,
        agent_type,
        system_prompt,
        model_provider,
        model_name,
        max_iterations,
        enabled,
        icon,
        tags,
        thinking,
        kb_id,
        skills_disabled,
        tools_disabled,
        workspace_id,
        creator_id,
        template_id,
        created,
        updated,
    ) = row
    return {
        "id": str(id_),
        "name": name,
        "description": description,
        "agentType": agent_type,
        "systemPrompt": system_prompt,
        "modelProvider": model_provider,
        "modelName": model_name,
        "maxIterations": max_iterations,
        "enabled": bool(enabled),
        "icon": icon,
        "tags": tags,
        "defaultThinkingLevel": thinking,
        "primaryKbId": None if kb_id is None else str(kb_id),
        "skillsDisabled": bool(skills_disabled),
        "toolsDisabled": bool(tools_disabled),
        "workspaceId": str(workspace_id),
        "creatorUserId": None if creator_id is None else str(creator_id),
        "templateId": None if template_id is None else str(template_id),
        "createTime": iso(created),
        "updateTime": iso(updated),
    }


def to_dict(agent: Agent) -> dict[str, Any]:
    """The AgentEntity JSON."""
    data = agent.__data__
    return agent_vo([data.get(c) for c in VO_COLUMNS])


def agent_root(config: Config, agent_id: int) -> Path:
    """`<data_dir>/agents/<agentId>` (not created)."""
    return file_store.current().path("agents", int(agent_id))  # the root resolved once: no stat per turn


def workspace_path(config: Config, agent_id: int) -> Path:
    """The agent's workspace folder, not created: for reading (a missing folder holds no file)."""
    return agent_root(config, agent_id) / "workspace"


def agent_dir(config: Config, agent_id: int) -> Path:
    """The agent's workspace folder `<data_dir>/agents/<agentId>/workspace`, created if missing."""
    path = agent_root(config, agent_id) / "workspace"
    path.mkdir(parents=True, exist_ok=True)
    return path


def private_dir(config: Config, agent_id: int) -> Path:
    """`<data_dir>/agents/<agentId>/private` (0700, created if missing): per-user memory, outside the workspace.

    Nothing that reaches the shared workspace (files routes, tools, memory export, prompt files) reaches here.
    """
    path = agent_root(config, agent_id) / "private"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def move_private_memory(config: Config) -> int:
    """Move per-user memory kept in `workspace/memory/people` by older versions into `private/`; returns how many."""
    moved = 0
    agents_root = file_store.current().path("agents")
    for old in agents_root.glob("*/workspace/memory/people"):
        if old.is_symlink() or not old.is_dir() or not old.parent.parent.parent.name.isdigit():
            continue
        target = private_dir(config, int(old.parent.parent.parent.name)) / "memory" / "people"
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if target.exists():
            for person in old.iterdir():
                if not (target / person.name).exists():
                    person.rename(target / person.name)
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.rename(target)
        moved += 1
    return moved


def end_user_key(end_user_id: str) -> str:
    """A folder name for an end user id: the id itself when plainly safe, else a hash of it."""
    if _SAFE_END_USER.match(end_user_id) and end_user_id.strip(".") != "":
        return end_user_id
    return "_" + hashlib.sha256(end_user_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def memory_dir(config: Config, agent_id: int, end_user_id: str | None) -> Path:
    """Where the agent's memory notes go, created if missing.

    `<workspace>/memory` for the agent itself, `<workspace>/memory/users/<endUserId>` for one end
    user (ids that are not plain names are hashed). `MEMORY.md` at the workspace root is the
    agent's main memory file; export and import cover it and `memory/**`.
    """
    path = agent_dir(config, agent_id) / "memory"
    if end_user_id:
        path = path / "users" / end_user_key(end_user_id)
    path.mkdir(parents=True, exist_ok=True)
    return path


def system_prompt(config: Config, agent: Agent) -> str:
    """The agent's systemPrompt followed by its prompt files (missing ones skipped, each capped)."""
    parts = [agent.system_prompt.strip()] if agent.system_prompt.strip() else []
    names = list(agent.prompt_files or [])
    if names:
        root = workspace_path(config, agent.id)
        for name in names:
            text = files.read_text_capped(root, name, PROMPT_FILE_CAP)
            if text is not None and text.strip():
                parts.append(f"## {name}\n\n{text.strip()}")
    return "\n\n".join(parts)


def bound_tools(agent_id: int) -> list[str]:
    """Names of the tools bound to the agent, in binding order."""
    return list(_bound_tools(agent_id))


@memo_on(AgentTool)
def _bound_tools(agent_id: int) -> tuple[str, ...]:
    q = AgentTool.select(AgentTool.tool_name).where(AgentTool.agent == agent_id).order_by(AgentTool.position)
    return tuple(row.tool_name for row in q)


def bound_skills(agent_id: int) -> list[int]:
    """Ids of the skills bound to the agent, oldest binding first."""
    return list(_bound_skills(agent_id))


@memo_on(AgentSkill)
def _bound_skills(agent_id: int) -> tuple[int, ...]:
    q = AgentSkill.select(AgentSkill.skill_id).where(AgentSkill.agent == agent_id).order_by(AgentSkill.create_time, AgentSkill.id)
    return tuple(row.skill_id for row in q)


def provider_preferences(agent_id: int) -> list[str]:
    """Provider ids to fail over to, in order (empty when none or the agent is gone)."""
    return list(_provider_preferences(agent_id))


@memo_on(Agent)
def _provider_preferences(agent_id: int) -> tuple[str, ...]:
    agent = first_where(Agent, id=agent_id)
    return tuple(agent.provider_preferences or []) if agent else ()


# ---- CRUD ----------------------------------------------------------------------


def list_agents(caller: Caller, enabled: bool | None) -> JsonText:
    """The workspace's agents, newest first, optionally only enabled or disabled ones.

    A hot route: one plain SQL read of the columns the JSON needs, no model objects.
    """
    return _agents_json(caller.workspace_id, enabled)


@memo_on(Agent)
def _agents_json(workspace_id: int, enabled: bool | None) -> JsonText:
    """The list encoded once, kept until an agent row changes (a console polls it)."""
    if enabled is None:
        cursor = database.execute_sql(_LIST_SQL + _LIST_ORDER, (workspace_id,))
    else:
        cursor = database.execute_sql(_LIST_SQL + " AND enabled = ?" + _LIST_ORDER, (workspace_id, int(enabled)))
    return encoded([agent_vo(row) for row in cursor])


def check_not_foreign(caller: Caller, skill_ids: list[int] | None = None, kb_id: int | None = None) -> None:
    """403 when a bound skill or knowledge base belongs to another workspace (unknown ids stay dangling)."""
    if skill_ids:
        foreign = Skill.select(Skill.id).where(Skill.id.in_(skill_ids) & (Skill.workspace_id != caller.workspace_id))
        row = foreign.first()
        if row is not None:
            raise Forbidden(f"skillIds: skill {row.id} belongs to another workspace")
    if kb_id is not None:
        kb = KnowledgeBase.get_or_none(KnowledgeBase.id == kb_id)
        if kb is not None and kb.workspace_id != caller.workspace_id:
            raise Forbidden("primaryKbId: the knowledge base belongs to another workspace")


def create(caller: Caller, req: AgentCreate, template_id: int | None = None) -> dict[str, Any]:
    """Create an agent in the caller's workspace; the caller is its creator."""
    check_not_foreign(caller, kb_id=req.primaryKbId)
    values = {attr: getattr(req, name) for name, attr in FIELDS.items()}
    with database.atomic():
        agent = Agent.create(
            workspace_id=caller.workspace_id,
            creator_user_id=caller.user_id,
            template_id=template_id,
            **values,
        )
        note = f" from template {template_id}" if template_id is not None else ""
        audit.record(caller, "CREATE", "AGENT", agent.id, f"agent {agent.name}{note}")
    return to_dict(agent)


def update(caller: Caller, agent_id: int, req: AgentUpdate) -> dict[str, Any]:
    """Sparse update: fields absent stay; null clears only nullable fields."""
    given = req.model_fields_set
    if "primaryKbId" in given:
        check_not_foreign(caller, kb_id=req.primaryKbId)
    with database.atomic():
        agent = get_agent(caller, agent_id)
        changed = []
        for name, attr in FIELDS.items():
            if name not in given:
                continue
            value = getattr(req, name)
            if value is None and name not in NULLABLE:
                continue
            if getattr(agent, attr) != value:
                setattr(agent, attr, value)
                changed.append(name)
        agent.update_time = utcnow()
        agent.save()
        audit.record(caller, "UPDATE", "AGENT", agent.id, f"agent {agent.name}: {', '.join(changed) or 'no change'}")
    return to_dict(agent)


def can_delete(caller: Caller, agent: Agent) -> bool:
    return may_change(caller, agent.creator_user_id)


def delete(caller: Caller, agent_id: int) -> None:
    """Delete an agent (global admin, workspace admin or above, or its creator); see remove_files."""
    with database.atomic():
        agent = get_agent(caller, agent_id)
        if not can_delete(caller, agent):
            raise Forbidden("Only the creator or a workspace admin can delete this agent")
        AgentSkill.delete().where(AgentSkill.agent == agent.id).execute()
        AgentTool.delete().where(AgentTool.agent == agent.id).execute()
        agent.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "AGENT", agent_id, f"agent {agent.name}")


def remove_files(config: Config, agent_id: int) -> None:
    """Remove a deleted agent's folder (blocking: run it off the IOLoop)."""
    shutil.rmtree(agent_root(config, agent_id), ignore_errors=True)


# ---- bindings and preferences --------------------------------------------------


def _touch(agent: Agent) -> None:
    agent.update_time = utcnow()
    agent.save(only=[Agent.update_time])


def skills(caller: Caller, agent_id: int) -> list[dict[str, Any]]:
    """The agent's skill bindings as rows `{agentId, skillId, enabled}` (the original console's shape)."""
    agent = get_agent(caller, agent_id)
    return [{"agentId": str(agent.id), "skillId": str(s), "enabled": True} for s in bound_skills(agent.id)]


def set_skills(caller: Caller, agent_id: int, skill_ids: list[int]) -> list[dict[str, Any]]:
    """Replace the agent's skill bindings."""
    check_not_foreign(caller, skill_ids=skill_ids)
    with database.atomic():
        agent = get_agent(caller, agent_id)
        AgentSkill.delete().where(AgentSkill.agent == agent.id).execute()
        for sid in skill_ids:
            AgentSkill.create(agent=agent.id, skill_id=sid)
        _touch(agent)
        audit.record(caller, "UPDATE", "AGENT_SKILL", agent.id, f"skills of {agent.name}: {len(skill_ids)} bound")
    return skills(caller, agent_id)


def bind_skill(caller: Caller, agent_id: int, skill_id: int) -> list[dict[str, Any]]:
    if skill_id <= 0:
        raise BadRequest("skillId: must be a positive Long")
    check_not_foreign(caller, skill_ids=[skill_id])
    with database.atomic():
        agent = get_agent(caller, agent_id)
        exists = AgentSkill.select().where((AgentSkill.agent == agent.id) & (AgentSkill.skill_id == skill_id)).exists()
        if not exists:
            AgentSkill.create(agent=agent.id, skill_id=skill_id)
            _touch(agent)
            audit.record(caller, "CREATE", "AGENT_SKILL", agent.id, f"bind skill {skill_id} to {agent.name}")
    return skills(caller, agent_id)


def unbind_skill(caller: Caller, agent_id: int, skill_id: int) -> list[dict[str, Any]]:
    with database.atomic():
        agent = get_agent(caller, agent_id)
        deleted = AgentSkill.delete().where((AgentSkill.agent == agent.id) & (AgentSkill.skill_id == skill_id)).execute()
        if not deleted:
            raise NotFound("Skill is not bound to this agent")
        _touch(agent)
        audit.record(caller, "DELETE", "AGENT_SKILL", agent.id, f"unbind skill {skill_id} from {agent.name}")
    return skills(caller, agent_id)


def tools(caller: Caller, agent_id: int) -> list[dict[str, Any]]:
    """The agent's tool bindings in order, as rows `{agentId, toolName, enabled}`."""
    agent = get_agent(caller, agent_id)
    return [{"agentId": str(agent.id), "toolName": name, "enabled": True} for name in bound_tools(agent.id)]


def set_tools(caller: Caller, agent_id: int, names: list[str], host: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Replace the agent's tool bindings (names; the registry checks them at run time). `host` names the
    host tools among them (name -> kind): a new binding of one needs the workspace to have it enabled."""
    with database.atomic():
        agent = get_agent(caller, agent_id)
        already = set(bound_tools(agent.id))
        for name in names:
            refusal = workspaces.host_tool_refusal(agent.workspace_id, host[name]) if host and name in host and name not in already else ""
            if refusal:
                raise Forbidden(f"Tool '{name}' cannot be bound: {refusal}")
        AgentTool.delete().where(AgentTool.agent == agent.id).execute()
        for pos, name in enumerate(names):
            AgentTool.create(agent=agent.id, tool_name=name, position=pos)
        _touch(agent)
        audit.record(caller, "UPDATE", "AGENT_TOOL", agent.id, f"tools of {agent.name}: {', '.join(names)[:300]}")
    return tools(caller, agent_id)


def preferences(caller: Caller, agent_id: int) -> list[dict[str, Any]]:
    """Preferred providers in order, as rows `{agentId, providerId, modelId: null, enabled, sortOrder}`."""
    agent = get_agent(caller, agent_id)
    ids = list(agent.provider_preferences or [])
    return [{"agentId": str(agent.id), "providerId": pid, "modelId": None, "enabled": True, "sortOrder": i} for i, pid in enumerate(ids)]


def set_preferences(caller: Caller, agent_id: int, provider_ids: list[str]) -> list[dict[str, Any]]:
    with database.atomic():
        agent = get_agent(caller, agent_id)
        agent.provider_preferences = provider_ids
        agent.update_time = utcnow()
        agent.save()
        audit.record(caller, "UPDATE", "AGENT", agent.id, f"provider preferences of {agent.name}: {', '.join(provider_ids)}")
    return preferences(caller, agent_id)


def prompt_files(caller: Caller, agent_id: int) -> dict[str, Any]:
    agent = get_agent(caller, agent_id)
    return {"agentId": str(agent.id), "files": list(agent.prompt_files or [])}


def set_prompt_files(caller: Caller, agent_id: int, names: list[str]) -> dict[str, Any]:
    """Set the ordered prompt-file list (workspace-relative names; files may be created later)."""
    clean = list(dict.fromkeys("/".join(files.split_rel(n)) for n in names))
    with database.atomic():
        agent = get_agent(caller, agent_id)
        agent.prompt_files = clean
        agent.update_time = utcnow()
        agent.save()
        audit.record(caller, "UPDATE", "AGENT", agent.id, f"prompt files of {agent.name}: {', '.join(clean)[:300]}")
    return prompt_files(caller, agent_id)


# ---- capabilities ---------------------------------------------------------------


def _resolved_model(agent: Agent) -> tuple[str, str, str] | None:
    """(provider, model, modalities) the runtime would use first for the agent, or None when unknown."""
    try:
        target = runtime.resolve_targets(agent.model_name or None, agent.model_provider, [])[0]
    except ApiError:
        return None
    return target.provider_id, target.model_name, target.modalities or "text"


def capabilities(caller: Caller, agent_id: int) -> dict[str, Any]:
    """The modality set of the agent's model and the sidecar configuration."""
    agent = get_agent(caller, agent_id)
    modalities = ["text"]
    model: dict[str, Any] = {"provider": agent.model_provider, "modelName": agent.model_name or None, "resolved": False}
    resolved = _resolved_model(agent)
    if resolved is not None:
        provider, name, found = resolved
        modalities = list(dict.fromkeys(["text", *(m.strip() for m in found.split(",") if m.strip())]))
        model = {"provider": provider, "modelName": name, "resolved": True}
    return {
        "agentId": str(agent.id),
        "model": model,
        "modalities": modalities,
        "vision": "image" in modalities,
        "sidecar": settings.get("sidecar"),
    }
