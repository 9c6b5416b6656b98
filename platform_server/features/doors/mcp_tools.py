"""The MCP server core of `/api/v1/mcp/serve` (the `mcp` SDK's MCPServer): tools over agents and the wiki, pages as resources.

Imported on the first MCP request only (mcp_door.py names it with lazy_import): a start imports no `mcp`. Every tool
acts as the token's user, read from `agents_door.DOOR_CALLER`, set by the HTTP handler for this request; the tools
call the same services as the REST routes, so the same role and workspace checks apply."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ListResourcesResult, PaginatedRequestParams, Resource

from platform_server.features.doors import agents_door, wiki_door
from platform_server.web.context import Principal
from platform_server.web.encode import dumps
from platform_server.web.errors import ApiError

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from platform_server.platform import Platform


def _identity() -> tuple[Principal, int | None]:
    current = agents_door.DOOR_CALLER.get()
    if current is None:  # never reached through the handler, which authenticates first
        raise ToolError("Not authenticated")
    return current


def _sources(citations: list[dict[str, Any]]) -> str:
    """The knowledge passages the agent was given, as the answer's numbered sources (pages by their wiki:// URI)."""
    lines = [
        f"[{c.get('id')}] {c.get('title', '')}" + (f": {wiki_door.uri(int(c['kbId']), str(c['slug']))}" if c.get("slug") else "") for c in citations
    ]
    return "\n\nSources:\n" + "\n".join(lines) if lines else ""


class PlatformMcpServer(MCPServer[Any]):
    """MCPServer whose resource list is the caller's readable wiki pages (they differ per token)."""

    async def _handle_list_resources(self, ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None) -> ListResourcesResult:
        principal, only = _identity()
        rows = wiki_door.listed(principal, only)
        return ListResourcesResult(
            resources=[Resource(uri=r["uri"], name=r["name"], description=r["description"], mime_type="text/markdown") for r in rows]
        )


def build(platform: Platform) -> PlatformMcpServer:
    """The server with its tools and the wiki page resource template."""
    server = PlatformMcpServer(
        name="agent-platform",
        instructions="Agents of this platform and the knowledge bases you may read. Cite wiki answers by their wiki:// URIs.",
        log_level="WARNING",
    )

    @server.tool(description="The agents you may chat with: pass an agent's `id` to ask_agent.")
    def list_agents() -> str:
        principal, only = _identity()
        rows = agents_door.listable_agents(principal, only)
        return dumps(
            [{"id": agents_door.model_id(a), "name": a.name, "description": a.description or "", "workspaceId": str(a.workspace_id)} for a in rows]
        )

    @server.tool(
        description="Send a message to an agent and get its answer (its tools, knowledge and memory apply). Pass the "
        "returned `conversation` again to continue the same conversation."
    )
    async def ask_agent(agent: str, message: str, conversation: str | None = None) -> str:
        principal, only = _identity()
        if not message.strip():
            raise ToolError("message must not be blank")
        key = (conversation or "").strip() or secrets.token_hex(8)
        try:
            caller, row = agents_door.caller_for(principal, agent, only)
            cid = agents_door.conversation_id("mcp", key)
            turn = await agents_door.start(platform, caller, row, cid, message, wiki_door.SOURCE)
        except ApiError as exc:
            raise ToolError(exc.msg) from None
        outcome = agents_door.Outcome()
        subscription = turn.subscribe(0)
        async for _ in agents_door.pieces(subscription, outcome):
            pass
        if outcome.status == "failed":
            raise ToolError(outcome.error or "The agent's turn failed")
        return f"{outcome.text}{_sources(outcome.citations)}\n\n(conversation: {key})"

    @server.tool(
        description="Search the wiki pages of the knowledge bases you may read. Answers are numbered with their sources "
        "(wiki://<kbId>/<slug>); read a page with wiki_read."
    )
    async def wiki_search(query: str, knowledge_base: str | None = None, top_k: int = 5) -> str:
        principal, only = _identity()
        try:
            return await wiki_door.search_text(platform, principal, only, query, knowledge_base, top_k)
        except ApiError as exc:
            raise ToolError(exc.msg) from None

    @server.tool(description="Read one wiki page (markdown) and the source passages it cites.")
    def wiki_read(knowledge_base: str, slug: str) -> str:
        principal, only = _identity()
        try:
            return wiki_door.read_text(principal, only, knowledge_base, slug)
        except ApiError as exc:
            raise ToolError(exc.msg) from None

    @server.resource("wiki://{kb_id}/{slug}", name="wiki-page", description="A wiki page", mime_type="text/markdown")
    def wiki_page(kb_id: str, slug: str) -> str:
        principal, only = _identity()
        try:
            return wiki_door.read_text(principal, only, kb_id, slug)
        except ApiError as exc:
            raise ResourceError(exc.msg) from None

    return server


def session_manager(platform: Platform) -> StreamableHTTPSessionManager:
    """The SDK's streamable HTTP session manager of the server, stateless (no session kept between requests).

    Its Starlette app is built only to make the manager (the SDK's documented way to mount it elsewhere); the
    requests reach the manager from the Tornado handler. The SDK's DNS-rebinding check is off: the platform's own
    Host check (`allowed_hosts`) has already run on every request."""
    server = build(platform)
    server.streamable_http_app(stateless_http=True, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return server.session_manager
