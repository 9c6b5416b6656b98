"""Page-type permissions: per agent and KB, may it read pages of a type, and write them (allow, deny, approval)."""

from __future__ import annotations

from typing import Any, Literal

from platform_server.db import database, utcnow
from platform_server.features.agents import service as agents
from platform_server.features.audit import service as audit
from platform_server.features.wiki import profile
from platform_server.features.wiki.kbs import get_kb
from platform_server.features.wiki.models import PageTypePermission
from platform_server.features.wiki.schemas import PermissionRule
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import NotFound

ANY_TYPE = "*"


to_dict = Fields(
    id=ident("id"),
    kbId=ident("kb_id"),
    agentId=ident("agent_id"),
    pageType="page_type",
    read="read",
    write="write",
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


def list_rules(caller: Caller, kb_id: int, agent_id: int) -> list[dict[str, Any]]:
    kb = get_kb(caller, kb_id)
    agents.get_agent(caller, agent_id)
    q = PageTypePermission.select().where((PageTypePermission.kb == kb.id) & (PageTypePermission.agent_id == agent_id))
    return [to_dict(r) for r in q.order_by(PageTypePermission.page_type)]


def upsert(caller: Caller, kb_id: int, agent_id: int, req: PermissionRule) -> dict[str, Any]:
    """Add the rule, or update the one of the same agent, KB and page type."""
    with database.atomic():
        kb = get_kb(caller, kb_id)
        agents.get_agent(caller, agent_id)
        page_type = req.pageType.strip().lower()
        if page_type != ANY_TYPE and page_type not in profile.type_names(kb):  # the KB's profile names the types: 404
            raise NotFound(
                f"pageType: not a page type of this knowledge base: {page_type} "
                f"(use one of {', '.join(profile.type_names(kb))}, or * for every other type)"
            )
        rule = PageTypePermission.get_or_none(
            (PageTypePermission.kb == kb.id) & (PageTypePermission.agent_id == agent_id) & (PageTypePermission.page_type == page_type)
        )
        if rule is None:
            rule = PageTypePermission.create(kb=kb.id, agent_id=agent_id, page_type=page_type, read=req.read, write=req.write)
        else:
            rule.read, rule.write, rule.update_time = req.read, req.write, utcnow()
            rule.save()
        audit.record(
            caller, "UPDATE", "WIKI_PERMISSION", rule.id, f"agent {agent_id} on {page_type} pages of {kb.name}: read {req.read}, write {req.write}"
        )
    return to_dict(rule)


def delete(caller: Caller, kb_id: int, agent_id: int, rule_id: int) -> None:
    with database.atomic():
        kb = get_kb(caller, kb_id)
        rule = PageTypePermission.get_or_none(
            (PageTypePermission.id == rule_id) & (PageTypePermission.kb == kb.id) & (PageTypePermission.agent_id == agent_id)
        )
        if rule is None:
            raise NotFound("Permission rule not found")
        rule.delete_instance()
        audit.record(caller, "DELETE", "WIKI_PERMISSION", rule_id, f"agent {agent_id} on {rule.page_type} pages")


def rules_of(kb_id: int, agent_id: int) -> dict[str, PageTypePermission]:
    q = PageTypePermission.select().where((PageTypePermission.kb == kb_id) & (PageTypePermission.agent_id == agent_id))
    return {r.page_type: r for r in q}


def decision(rules: dict[str, PageTypePermission], page_type: str, what: Literal["read", "write"]) -> str:
    """The rule of the page type, else the `*` rule, else allow."""
    rule = rules.get(page_type) or rules.get(ANY_TYPE)
    return "allow" if rule is None else str(getattr(rule, what))
