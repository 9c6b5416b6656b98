"""The `wiki_read` and `wiki_write` tools, and the guard hook that applies page-type permissions to them.

`deny` and `approval_required` are decided by the guard (`register_tool_hook`), so an approval goes
through the same pending-approval flow as any guarded tool; the tools re-check `deny` themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.guard import service as guard
from platform_server.features.tools.registry import ToolContext, ToolDefinition, ToolError
from platform_server.features.wiki import kbs, permissions, profile, search, tool
from platform_server.features.wiki.models import KnowledgeBase, Page
from platform_server.features.wiki.pages import set_links
from platform_server.features.wiki.schemas import MAX_MARKDOWN
from platform_server.features.wiki.text import slugify

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter

RULE_ID = "wiki-page-type"
STRICTNESS = {"allow": 0, "approval_required": 1, "deny": 2}


@dataclass
class Target:
    kb: KnowledgeBase
    slug: str
    page: Page | None
    page_type: str


def _kb(workspace_id: int, agent_id: int, kb_id: Any) -> KnowledgeBase:
    bound = [kb for kb, _ in kbs.kbs_of_agent(workspace_id, agent_id)]
    if not bound:
        raise ToolError("No knowledge base is bound to this agent")
    if kb_id in (None, ""):
        return bound[0]
    for kb in bound:
        if str(kb.id) == str(kb_id):
            return kb
    raise ToolError(f"Knowledge base {kb_id} is not bound to this agent")


def _find(workspace_id: int, agent_id: int, slug: str, kb_id: Any) -> tuple[KnowledgeBase, Page]:
    key = slugify(slug)
    bound = [_kb(workspace_id, agent_id, kb_id)] if kb_id not in (None, "") else [kb for kb, _ in kbs.kbs_of_agent(workspace_id, agent_id)]
    if not bound:
        raise ToolError("No knowledge base is bound to this agent")
    for kb in bound:
        page = Page.get_or_none((Page.kb == kb.id) & (Page.slug == key)) or Page.get_or_none((Page.kb == kb.id) & (Page.title ** slug.strip()))
        if page is not None:
            return kb, page
    raise ToolError(f"No wiki page '{slug}' in the agent's knowledge bases")


def write_target(workspace_id: int, agent_id: int, args: dict[str, Any]) -> Target:
    kb = _kb(workspace_id, agent_id, args.get("kbId"))
    slug = slugify(str(args.get("slug") or args.get("title") or ""))
    if not slug:
        raise ToolError("slug or title: give the page a name with a letter or digit")
    page = Page.get_or_none((Page.kb == kb.id) & (Page.slug == slug))
    wanted = str(args.get("pageType") or "").strip().lower()
    if wanted and wanted not in profile.type_names(kb):
        raise ToolError(f"pageType must be one of: {', '.join(profile.type_names(kb))}")
    page_type = wanted or (page.page_type if page else profile.profile_of(kb)["defaultType"])
    return Target(kb, slug, page, page_type)


def write_decision(agent_id: int, target: Target) -> str:
    rules = permissions.rules_of(target.kb.id, agent_id)
    types = {target.page_type} | ({target.page.page_type} if target.page else set())
    return max((permissions.decision(rules, t, "write") for t in types), key=lambda d: STRICTNESS.get(d, 2))


def guard_hook(args: dict[str, Any], ctx: guard.GuardContext) -> guard.Verdict | None:
    """`deny` or `ask` for a wiki_write the agent's page-type rules restrict (None: no opinion)."""
    try:
        target = write_target(ctx.workspace_id, ctx.agent_id, args)
    except ToolError:
        return None  # the tool itself reports the problem
    choice = write_decision(ctx.agent_id, target)
    where = f"{target.page_type} pages of {target.kb.name}"
    if choice == "deny":
        return guard.Verdict("deny", "medium", RULE_ID, f"wiki_write is denied for this agent on {where}")
    if choice == "approval_required":
        return guard.Verdict("ask", "medium", RULE_ID, f"wiki_write on {where} requires approval")
    return None


async def run_read(args: dict[str, Any], ctx: ToolContext) -> str:
    slug = str(args.get("slug") or "").strip()
    if not slug:
        raise ToolError("slug must not be empty")
    kb, page = _find(ctx.workspace_id, ctx.agent_id, slug, args.get("kbId"))
    if permissions.decision(permissions.rules_of(kb.id, ctx.agent_id), page.page_type, "read") == "deny":
        raise ToolError(f"Reading {page.page_type} pages of {kb.name} is denied for this agent")
    archived = " (archived)" if page.archived else ""
    return f"# {page.title}{archived}\nslug: {page.slug} | type: {page.page_type} | knowledge base: {kb.name}\n\n{page.markdown}"


async def run_write(args: dict[str, Any], ctx: ToolContext, router: LlmRouter) -> str:
    markdown = str(args.get("markdown") or "")
    if not markdown.strip():
        raise ToolError("markdown must not be empty")
    if len(markdown) > MAX_MARKDOWN:
        raise ToolError(f"markdown is longer than {MAX_MARKDOWN} characters")
    target = write_target(ctx.workspace_id, ctx.agent_id, args)
    if write_decision(ctx.agent_id, target) == "deny":
        raise ToolError(f"Writing {target.page_type} pages of {target.kb.name} is denied for this agent")
    title = str(args.get("title") or (target.page.title if target.page else target.slug)).strip()[:200]
    got = await tool.embed_query(router, target.kb, f"{title}\n\n{markdown[:4000]}")
    vec = got.vector
    with database.atomic():
        page = Page.get_or_none((Page.kb == target.kb.id) & (Page.slug == target.slug))
        if page is None:
            page = Page.create(
                kb=target.kb.id,
                workspace_id=target.kb.workspace_id,
                slug=target.slug,
                title=title,
                page_type=target.page_type,
                markdown=markdown,
                origin="agent",
            )
        else:
            page.title, page.page_type, page.markdown, page.origin = title, target.page_type, markdown, "agent"
            page.version += 1
            page.update_time = utcnow()
        if vec is not None:
            page.embedding, page.dims, page.embed_model = vec, len(vec) // 4, got.model_id
        page.save()
        set_links(page)
        search.fts_put_page(page)
        audit.record(None, "UPDATE", "WIKI_PAGE", page.id, f"agent {ctx.agent_id} wrote page {page.slug}", workspace_id=target.kb.workspace_id)
    return f"Saved wiki page '{page.slug}' ({page.page_type}, version {page.version}) in {target.kb.name}."


def definitions(router: LlmRouter) -> list[ToolDefinition]:
    async def write(args: dict[str, Any], ctx: ToolContext) -> str:
        return await run_write(args, ctx, router)

    kb_param = {"type": "string", "description": "Knowledge base id (default: the agent's primary one)"}
    return [
        ToolDefinition(
            name="wiki_read",
            description="Read one wiki page of the agent's knowledge bases by slug (or exact title).",
            parameters={
                "type": "object",
                "properties": {"slug": {"type": "string", "description": "The page's slug or title"}, "kbId": kb_param},
                "required": ["slug"],
            },
            run=run_read,
            source="wiki",
            feature="wiki",
        ),
        ToolDefinition(
            name="wiki_write",
            description="Create or replace a wiki page in the agent's knowledge base; [[slug]] links other pages.",
            parameters={
                "type": "object",
                "properties": {
                    "slug": {"type": "string", "description": "The page's slug (default: from the title)"},
                    "title": {"type": "string"},
                    "markdown": {"type": "string", "description": "The complete page in Markdown"},
                    "pageType": {"type": "string", "description": "One of the knowledge base's page types"},
                    "kbId": kb_param,
                },
                "required": ["markdown"],
            },
            run=write,
            source="wiki",
            feature="wiki",
            min_role="member",  # the REST page routes' role: a viewer or an end user plants no page in everyone's prompts
            end_users=False,
        ),
    ]
