"""Knowledge bases: CRUD in the caller's workspace, per-KB config, agent bindings."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import peewee

from platform_server.config import Config
from platform_server.db import database, utcnow
from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.models import service as model_service
from platform_server.features.wiki.models import KbAgent, KnowledgeBase, Page, RawMaterial
from platform_server.features.wiki.schemas import KbConfigUpdate, KbCreate, KbUpdate
from platform_server.memo import memo_on
from platform_server.ports import files as file_store
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, NotFound, Unprocessable
from platform_server.web.ownership import require_creator_or_admin

DEFAULT_CONFIG: dict[str, Any] = {
    "chunkSize": 1200,  # characters
    "chunkOverlap": 150,
    "embeddingModelId": None,  # null: the default embedding model
    "generationModelProvider": None,  # null: the global default chat model
    "generationModelName": None,
    "pageLanguage": "auto",  # "auto": the material's language
    "autoProcess": True,  # process a material as soon as it is added
    "maxChunksPerCall": 8,  # chunks given to the LLM in one page-writing call
    # "auto": the LLM digest when the generation model can write JSON, else each material is one page as it is
    # (features/wiki/notes.py); "notes": always one page per material, no LLM
    "pageWriting": "auto",
}


def kb_dir(config: Config, kb_id: int) -> Path:
    """`<data_dir>/wiki/<kbId>` (not created)."""
    return file_store.current().path("wiki", int(kb_id))


def get_kb(caller: Caller, kb_id: int) -> KnowledgeBase:
    """The KB in the caller's workspace; 404 otherwise."""
    kb = KnowledgeBase.get_or_none((KnowledgeBase.id == kb_id) & (KnowledgeBase.workspace_id == caller.workspace_id))
    if kb is None:
        raise NotFound("Knowledge base not found")
    return kb


def config_of(kb: KnowledgeBase) -> dict[str, Any]:
    """The KB's config with defaults filled in."""
    return {**DEFAULT_CONFIG, **(kb.config or {})}


def agent_ids(kb_id: int) -> list[int]:
    return [r.agent_id for r in KbAgent.select(KbAgent.agent_id).where(KbAgent.kb == kb_id).order_by(KbAgent.id)]


to_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    name="name",
    description="description",
    creatorUserId=ident("creator_user_id"),
    agentIds=lambda kb: [str(a) for a in agent_ids(kb.id)],
    rawCount=lambda kb: RawMaterial.select().where(RawMaterial.kb == kb.id).count(),
    pageCount=lambda kb: Page.select().where((Page.kb == kb.id) & (Page.archived == 0)).count(),
    sourceDirectory=lambda kb: (kb.config or {}).get("sourceDirectory"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


def list_kbs(caller: Caller) -> list[dict[str, Any]]:
    q = KnowledgeBase.select().where(KnowledgeBase.workspace_id == caller.workspace_id)
    return [to_dict(kb) for kb in q.order_by(KnowledgeBase.create_time.desc(), KnowledgeBase.id.desc())]


def _bind(caller: Caller, kb: KnowledgeBase, ids: list[int]) -> None:
    for agent_id in dict.fromkeys(ids):
        agents.get_agent(caller, agent_id)  # 404 for an agent outside the workspace
    KbAgent.delete().where(KbAgent.kb == kb.id).execute()
    for agent_id in dict.fromkeys(ids):
        KbAgent.create(kb=kb.id, agent_id=agent_id)


def any_kb() -> bool:
    """Whether any workspace has a knowledge base (the start asks, to load the embedding model only then)."""
    return KnowledgeBase.select(KnowledgeBase.id).limit(1).exists()


def create(caller: Caller, req: KbCreate) -> dict[str, Any]:
    with database.atomic():
        kb = KnowledgeBase.create(
            workspace_id=caller.workspace_id, creator_user_id=caller.user_id, name=req.name.strip(), description=req.description, config={}
        )
        if req.agentIds:
            _bind(caller, kb, req.agentIds)
        audit.record(caller, "CREATE", "WIKI_KB", kb.id, f"knowledge base {kb.name}")
    return to_dict(kb)


def update(caller: Caller, kb_id: int, req: KbUpdate) -> dict[str, Any]:
    with database.atomic():
        kb = get_kb(caller, kb_id)
        require_creator_or_admin(caller, kb.creator_user_id, "knowledge base")
        if req.name is not None:
            kb.name = req.name.strip()
        if req.description is not None:
            kb.description = req.description
        if req.agentIds is not None:
            _bind(caller, kb, req.agentIds)
        kb.update_time = utcnow()
        kb.save()
        audit.record(caller, "UPDATE", "WIKI_KB", kb.id, f"knowledge base {kb.name}")
    return to_dict(kb)


def delete(caller: Caller, kb_id: int) -> list[int]:
    """Delete a KB and everything in it (creator or workspace admin); returns its material ids."""
    with database.atomic():
        kb = get_kb(caller, kb_id)
        require_creator_or_admin(caller, kb.creator_user_id, "knowledge base")
        raw_ids = [r.id for r in RawMaterial.select(RawMaterial.id).where(RawMaterial.kb == kb.id)]
        database.execute_sql("DELETE FROM wiki_chunk_fts WHERE kb_id = ?", (kb.id,))
        database.execute_sql("DELETE FROM wiki_page_fts WHERE kb_id = ?", (kb.id,))
        kb.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "WIKI_KB", kb_id, f"knowledge base {kb.name}")
    return raw_ids


def remove_files(config: Config, kb_id: int) -> None:
    """Remove a deleted KB's folder (blocking)."""
    shutil.rmtree(kb_dir(config, kb_id), ignore_errors=True)


def get_config(caller: Caller, kb_id: int) -> dict[str, Any]:
    kb = get_kb(caller, kb_id)
    cfg = config_of(kb)
    out = {k: cfg[k] for k in DEFAULT_CONFIG}
    out["embeddingModelId"] = None if cfg["embeddingModelId"] is None else str(cfg["embeddingModelId"])
    return {"kbId": str(kb.id), **out}


def put_config(caller: Caller, kb_id: int, req: KbConfigUpdate) -> dict[str, Any]:
    """Sparse update of the config; null clears the model overrides."""
    given = req.model_fields_set
    with database.atomic():
        kb = get_kb(caller, kb_id)
        require_creator_or_admin(caller, kb.creator_user_id, "knowledge base")
        cfg = dict(kb.config or {})
        for name in DEFAULT_CONFIG:
            if name not in given:
                continue
            value = getattr(req, name)
            if value is None and name not in ("embeddingModelId", "generationModelProvider", "generationModelName"):
                continue
            cfg[name] = value
        merged = {**DEFAULT_CONFIG, **cfg}
        if merged["chunkOverlap"] >= merged["chunkSize"] // 2:  # two values (one maybe stored) 3.0 cannot relate: 422
            raise Unprocessable("chunkOverlap: must be less than half of chunkSize")
        if merged["embeddingModelId"] is not None:
            row = model_service.get_model_row(int(merged["embeddingModelId"]))
            if row.model_type != "embedding":  # the id names a model, but no embedding one: nothing to use, as a 404
                raise NotFound("embeddingModelId: not an embedding model")
        kb.config = cfg
        kb.update_time = utcnow()
        kb.save()
        audit.record(caller, "UPDATE", "WIKI_KB", kb.id, f"config of {kb.name}: {', '.join(sorted(given)) or 'no change'}")
    return get_config(caller, kb_id)


def _agent_kb_ids(agent: Agent) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if agent.primary_kb_id is not None:
        out.append((agent.primary_kb_id, "primary"))
    for kb_id in (r.kb_id for r in KbAgent.select(KbAgent.kb).where(KbAgent.agent_id == agent.id).order_by(KbAgent.id)):
        if kb_id != agent.primary_kb_id:
            out.append((kb_id, "bound"))
    return out


@memo_on(Agent, KbAgent, KnowledgeBase)
def _bound_kb_ids(workspace_id: int, agent_id: int) -> tuple[tuple[int, str], ...]:
    """(KB id, binding) of the agent's KBs in the workspace, primary first (read once per change of those tables:
    every chat turn asks, and most agents have none)."""
    agent = Agent.get_or_none((Agent.id == agent_id) & (Agent.workspace_id == workspace_id))
    if agent is None:
        return ()
    ids = _agent_kb_ids(agent)
    present = {
        kb.id
        for kb in KnowledgeBase.select(KnowledgeBase.id).where(
            KnowledgeBase.id.in_([i for i, _ in ids] or [0]) & (KnowledgeBase.workspace_id == workspace_id)
        )
    }
    return tuple((kb_id, how) for kb_id, how in ids if kb_id in present)


def kbs_of_agent(workspace_id: int, agent_id: int) -> list[tuple[KnowledgeBase, str]]:
    """The agent's KBs in the workspace (primary first), with how each is bound."""
    bound = _bound_kb_ids(workspace_id, agent_id)
    if not bound:
        return []
    rows = {kb.id: kb for kb in KnowledgeBase.select().where(KnowledgeBase.id.in_([i for i, _ in bound]))}
    return [(rows[kb_id], how) for kb_id, how in bound if kb_id in rows]


def for_agent(caller: Caller, agent_id: int) -> list[dict[str, Any]]:
    agents.get_agent(caller, agent_id)
    return [{**to_dict(kb), "binding": how} for kb, how in kbs_of_agent(caller.workspace_id, agent_id)]


def bindable(caller: Caller, agent_id: int | None) -> list[dict[str, Any]]:
    """Workspace KBs the agent is not bound to yet (all of them without an agent)."""
    taken: set[int] = set()
    if agent_id is not None:
        agents.get_agent(caller, agent_id)
        taken = {kb.id for kb, _ in kbs_of_agent(caller.workspace_id, agent_id)}
    q = KnowledgeBase.select().where(KnowledgeBase.workspace_id == caller.workspace_id)
    if taken:
        q = q.where(KnowledgeBase.id.not_in(list(taken)))
    return [to_dict(kb) for kb in q.order_by(KnowledgeBase.name, KnowledgeBase.id)]


def workspace_kbs(workspace_id: int) -> peewee.ModelSelect[KnowledgeBase]:
    return KnowledgeBase.select().where(KnowledgeBase.workspace_id == workspace_id)


def agent_bindings(caller: Caller, agent_id: int) -> list[dict[str, Any]]:
    """The KBs an agent is bound to besides its primary one, as rows `{agentId, kbId, enabled}`."""
    agent = agents.get_agent(caller, agent_id)
    return [
        {"agentId": str(agent.id), "kbId": str(kb.id), "enabled": True} for kb, how in kbs_of_agent(caller.workspace_id, agent.id) if how == "bound"
    ]


_KB_ID = re.compile("[0-9]{1,18}")  # web.openapi_inputs' body of PUT /agents/{agentId}/kbs, checked with fullmatch


def set_agent_bindings(caller: Caller, agent_id: int, body: Any) -> list[dict[str, Any]]:
    """Replace the KBs an agent is bound to: `body` is a JSON array of ids of the caller's workspace's KBs."""
    with database.atomic():
        agent = agents.get_agent(caller, agent_id)
        # the document's body: at most 200 ids, each a string of 1-18 digits (a number or " 12" was taken as one)
        if not isinstance(body, list) or len(body) > 200 or not all(isinstance(i, str) and _KB_ID.fullmatch(i) for i in body):
            raise BadRequest("Request body must be an array of at most 200 knowledge base ids (strings of 1-18 digits)")
        wanted = list(dict.fromkeys(int(item) for item in body))
        found = {kb.id for kb in workspace_kbs(caller.workspace_id).where(KnowledgeBase.id.in_(wanted or [0]))}
        missing = [i for i in wanted if i not in found]
        if missing:
            raise NotFound(f"Knowledge base not found: {missing[0]}")
        KbAgent.delete().where(KbAgent.agent_id == agent.id).execute()
        for kb_id in wanted:
            KbAgent.create(kb=kb_id, agent_id=agent.id)
        audit.record(caller, "UPDATE", "WIKI_KB", None, f"knowledge bases of agent {agent.name}: {len(wanted)} bound")
    return agent_bindings(caller, agent_id)


def embedding_model(kb: KnowledgeBase) -> int | None:
    """The id of the embedding model the KB's vectors come from: its own, else the default (None: none)."""
    chosen = config_of(kb)["embeddingModelId"]
    if chosen is not None:
        return int(chosen)
    row = model_service.default_model("embedding")
    return int(row.id) if row is not None else None
