"""MCP server rows: validation, secrets kept write-only, tool naming, discovery records, deletes.

MCP servers are global like the tools they bring: every workspace's agents can bind their
tools, so only a global admin changes them (stdio servers run commands on the host).
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.parse
from typing import Any

from platform_server.db import database, utcnow
from platform_server.features.agents.models import Agent, AgentTool
from platform_server.features.audit import service as audit
from platform_server.features.mcp.models import McpServer, McpToolAlias
from platform_server.features.mcp.schemas import MASK, McpServerCreate, McpServerUpdate
from platform_server.features.tools import service as tools_service
from platform_server.features.tools.models import Tool
from platform_server.features.tools.schemas import McpToolCreate
from platform_server.integrations.mcp_client import McpTarget, McpToolInfo
from platform_server.integrations.secret_origin import carry
from platform_server.ports import files as file_store
from platform_server.serialize import GIVEN, Fields, flag, ident, items, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, ConfirmationRequired, Forbidden, NotFound

HEADER_NAME_RE = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_ENTRIES = 50
MAX_VALUE = 8192
TOOL_NAME_MAX = 64
HOP_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "mcp-session-id", "mcp-protocol-version"})


# ---- naming -----------------------------------------------------------------------------


def tool_name(server_name: str, mcp_tool: str) -> str:
    """`mcp__<server>__<tool>`: a valid function name for every LLM provider (^[A-Za-z0-9_-]{1,64}$).

    A tool name with other characters, or too long, is cut and suffixed with a hash of the
    original so two tools of one server never share a name.
    """
    prefix = f"mcp__{server_name}__"
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", mcp_tool)
    if safe == mcp_tool and len(prefix) + len(safe) <= TOOL_NAME_MAX:
        return prefix + safe
    digest = hashlib.sha1(mcp_tool.encode("utf-8")).hexdigest()[:8]
    room = TOOL_NAME_MAX - len(prefix) - len(digest) - 1
    return f"{prefix}{safe[:room]}_{digest}"


# ---- validation -------------------------------------------------------------------------


def _check_url(url: str | None) -> str:
    text = (url or "").strip()
    if not text:
        raise BadRequest("url: required for transports streamable_http and sse")
    parts = urllib.parse.urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise BadRequest("url: only http and https URLs are allowed")
    if not parts.hostname:
        raise BadRequest("url: must name a host")
    if parts.username or parts.password:
        raise BadRequest("url: must not carry credentials (use headers)")
    try:
        _ = parts.port
    except ValueError:
        raise BadRequest("url: invalid port") from None
    return text


def _merge_secrets(kind: str, given: dict[str, str], stored: dict[str, str], name_re: re.Pattern[str]) -> dict[str, str]:
    """Validate a header/env map; a value equal to the mask keeps the stored value of that key."""
    if len(given) > MAX_ENTRIES:
        raise BadRequest(f"{kind}: at most {MAX_ENTRIES} entries")
    out: dict[str, str] = {}
    for key, value in given.items():
        if not name_re.match(key):
            raise BadRequest(f"{kind}: invalid name '{key[:64]}'")
        if kind == "headers" and key.lower() in HOP_HEADERS:
            raise BadRequest(f"headers: '{key}' is set by the client itself")
        if value == MASK:
            if key not in stored:
                raise BadRequest(f"{kind}: '{key}' has no stored value to keep")
            value = stored[key]
        if len(value) > MAX_VALUE or any(c in value for c in "\r\n\x00"):
            raise BadRequest(f"{kind}: invalid value for '{key}'")
        out[key] = value
    return out


def _check_command(command: str | None, args: list[str]) -> str:
    text = (command or "").strip()
    if not text:
        raise BadRequest("command: required for transport stdio")
    if "\x00" in text:
        raise BadRequest("command: must not contain NUL bytes")
    for arg in args:
        if "\x00" in arg or len(arg) > 4096:
            raise BadRequest("args: each argument must be at most 4096 characters without NUL bytes")
    return text


def _apply_target(
    row: McpServer,
    transport: str,
    url: str | None,
    headers: dict[str, str] | None,
    command: str | None,
    args: list[str] | None,
    env: dict[str, str] | None,
) -> None:
    """Set the connection fields of `row` for `transport`; the other transport's fields are cleared."""
    row.transport = transport
    if transport == "stdio":
        row.args = list(args if args is not None else (row.args or []))
        row.command = _check_command(command if command is not None else row.command, row.args)
        row.env = _merge_secrets("env", env, row.env or {}, ENV_NAME_RE) if env is not None else dict(row.env or {})
        row.url, row.headers = "", {}
    else:
        new_url = _check_url(url if url is not None else row.url)
        # Header values stored for another origin are not sent to this one (integrations.secret_origin).
        given, stored = carry(headers, row.headers or {}, MASK, row.url or None, new_url)
        row.url = new_url
        row.headers = _merge_secrets("headers", given, stored, HEADER_NAME_RE) if given is not None else stored
        row.command, row.args, row.env = "", [], {}


def _require_stdio_admin(caller: Caller, transport: str) -> None:
    if transport == "stdio" and not caller.is_global_admin:
        raise Forbidden("Only a global admin may configure stdio MCP servers (they run commands on the host)")


# ---- reading ------------------------------------------------------------------------------


def get_row(server_id: int) -> McpServer:
    row = McpServer.get_or_none(McpServer.id == server_id)
    if row is None:
        raise NotFound("MCP server not found")
    return row


def list_rows() -> list[McpServer]:
    return list(McpServer.select().order_by(McpServer.name))


def enabled_rows() -> list[McpServer]:
    return list(McpServer.select().where(McpServer.enabled == True).order_by(McpServer.name))  # noqa: E712


def _masked(values: dict[str, str] | None) -> dict[str, str]:
    return {k: MASK for k in (values or {})}


def _server_info(row: McpServer) -> dict[str, Any] | None:
    info = row.server_info or {}
    return {"name": info.get("name", ""), "version": info.get("version", "")} if info else None


SERVER_FIELDS = Fields(
    id=ident("id"),
    name="name",
    description="description",
    transport="transport",
    url="url",
    headers=lambda row: _masked(row.headers),
    command="command",
    args=items("args"),
    env=lambda row: _masked(row.env),
    enabled=flag("enabled"),
    disclosureTier="disclosure_tier",
    status=GIVEN,
    error=GIVEN,
    serverInfo=_server_info,
    protocolVersion=lambda row: (row.server_info or {}).get("protocolVersion") or None,
    toolCount=lambda row: len(row.tools or []),
    lastConnectedTime=when("last_connected_time"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


def to_dict(row: McpServer, runtime: dict[str, Any]) -> dict[str, Any]:
    """The server as clients see it: header and env values masked, runtime `status` and `error`."""
    return SERVER_FIELDS(row, status=runtime.get("status", "disconnected"), error=runtime.get("error") or (row.last_error or None))


def discovered(row: McpServer) -> list[McpToolInfo]:
    return [McpToolInfo(t["name"], t.get("description", ""), t.get("inputSchema") or {}) for t in row.tools or []]


def tools_view(row: McpServer, registered: set[str]) -> list[dict[str, Any]]:
    """Discovered tools of the last connection, with their registry names and Tool rows."""
    names = [t["toolName"] for t in row.tools or []]
    tool_rows = {t.name: t for t in Tool.select().where(Tool.name.in_(names))} if names else {}
    out = []
    for t in row.tools or []:
        tool_row = tool_rows.get(t["toolName"])
        out.append(
            {
                "name": t["name"],
                "toolName": t["toolName"],
                "description": t.get("description", ""),
                "inputSchema": t.get("inputSchema") or {},
                "toolId": str(tool_row.id) if tool_row else None,
                "enabled": bool(tool_row.enabled) if tool_row else False,
                "disclosureTier": tool_row.disclosure_tier if tool_row else row.disclosure_tier,
                "registered": t["toolName"] in registered,
            }
        )
    return out


def owned_names(row: McpServer) -> list[str]:
    """Tool names that belong to the server: discovered tools and aliases."""
    names = [t["toolName"] for t in row.tools or []]
    names += [a.name for a in McpToolAlias.select().where(McpToolAlias.server == row.id)]
    return list(dict.fromkeys(names))


def aliases_of(server_id: int) -> list[McpToolAlias]:
    return list(McpToolAlias.select().where(McpToolAlias.server == server_id).order_by(McpToolAlias.name))


def target_of(row: McpServer) -> McpTarget:
    """The connection parameters, secrets included (runtime use only)."""
    base = str(file_store.current().path("mcp"))
    return McpTarget(
        transport=row.transport,
        url=row.url,
        headers=dict(row.headers or {}),
        command=row.command,
        args=tuple(row.args or []),
        env=dict(row.env or {}),
        cwd=os.path.join(base, "work") if row.transport == "stdio" else "",
        stderr_path=os.path.join(base, "logs", f"{row.id}.stderr.log") if row.transport == "stdio" else "",
    )


# ---- changes -------------------------------------------------------------------------------


def create(caller: Caller, req: McpServerCreate) -> McpServer:
    _require_stdio_admin(caller, req.transport)
    if McpServer.get_or_none(McpServer.name == req.name) is not None:
        raise BadRequest(f"An MCP server named '{req.name}' already exists")
    row = McpServer(
        name=req.name, description=req.description, enabled=req.enabled, disclosure_tier=req.disclosureTier, creator_user_id=caller.user_id
    )
    _apply_target(row, req.transport, req.url, req.headers, req.command, req.args, req.env)
    audit.save(caller, "CREATE", "MCP_SERVER", row, f"MCP server {row.name} ({row.transport})")
    return row


def update(caller: Caller, server_id: int, req: McpServerUpdate) -> McpServer:
    """Sparse update; `name` is fixed (it is part of the tool names agents bind)."""
    row = get_row(server_id)
    if req.name is not None and req.name != row.name:
        raise BadRequest("name: cannot be changed (it is part of the server's tool names)")
    transport = req.transport or row.transport
    _require_stdio_admin(caller, transport)
    if transport != row.transport and transport == "stdio":
        row.command, row.args, row.env = "", [], {}
    elif transport != row.transport:
        row.url, row.headers = "", {}
    _apply_target(row, transport, req.url, req.headers, req.command, req.args, req.env)
    changed = [k for k, v in req.model_dump(exclude_none=True).items() if k != "name"]
    with database.atomic():
        if req.description is not None:
            row.description = req.description
        if req.enabled is not None:
            row.enabled = req.enabled
        row.update_time = utcnow()
        row.save()
        audit.record(caller, "UPDATE", "MCP_SERVER", row.id, f"MCP server {row.name}: {', '.join(changed) or 'no change'}")
    return row


def toggle(caller: Caller, server_id: int, enabled: bool | None) -> McpServer:
    """Enable or disable; no value flips it (as every toggle: the body is optional)."""
    row = get_row(server_id)
    enabled = (not row.enabled) if enabled is None else enabled
    row.enabled = enabled
    row.update_time = utcnow()
    audit.save(caller, "UPDATE", "MCP_SERVER", row, f"MCP server {row.name} {'enabled' if enabled else 'disabled'}")
    return row


def set_tier(caller: Caller, server_id: int, tier: str) -> McpServer:
    """The server's tier, and every Tool row of the server follows."""
    row = get_row(server_id)
    names = owned_names(row)
    with database.atomic():
        row.disclosure_tier = tier
        row.update_time = utcnow()
        row.save()
        if names:
            Tool.update(disclosure_tier=tier, update_time=utcnow()).where(Tool.name.in_(names)).execute()
        audit.record(caller, "UPDATE", "MCP_SERVER", row.id, f"MCP server {row.name} disclosure tier {tier} ({len(names)} tools)")
    return row


def bound_agents(names: list[str]) -> list[dict[str, str]]:
    """Agents (any workspace) bound to one of these tool names."""
    if not names:
        return []

    q = (
        Agent.select(Agent.id, Agent.name)
        .join(AgentTool, on=(AgentTool.agent == Agent.id))
        .where(AgentTool.tool_name.in_(names))
        .distinct()
        .order_by(Agent.id)
    )
    return [{"id": str(a.id), "name": a.name} for a in q]


def check_delete(server_id: int, force: bool) -> McpServer:
    """409 (second confirmation) when agents are bound to the server's tools and `force` is not set."""
    row = get_row(server_id)
    agents = bound_agents(owned_names(row))
    if agents and not force:
        raise ConfirmationRequired(f"{len(agents)} agent(s) use tools of MCP server '{row.name}'; delete with force=true to remove it anyway", agents)
    return row


def delete(caller: Caller, server_id: int) -> None:
    """Delete the server, its aliases and its tools' rows."""
    row = get_row(server_id)
    names = owned_names(row)
    with database.atomic():
        if names:
            Tool.delete().where(Tool.name.in_(names) & (Tool.source == "mcp")).execute()
        McpToolAlias.delete().where(McpToolAlias.server == row.id).execute()
        row.delete_instance()
        audit.record(caller, "DELETE", "MCP_SERVER", row.id, f"MCP server {row.name} and {len(names)} tools")


# ---- discovery ----------------------------------------------------------------------------


def record_discovery(server_id: int, tools: list[McpToolInfo], info: dict[str, str]) -> McpServer | None:
    """Store the tools and server identity of a successful connection."""
    row = McpServer.get_or_none(McpServer.id == server_id)
    if row is None:
        return None
    row.tools = [
        {"name": t.name, "toolName": tool_name(row.name, t.name), "description": t.description, "inputSchema": t.input_schema} for t in tools
    ]
    row.server_info = info
    row.last_error = ""
    row.last_connected_time = utcnow()
    with database.atomic():
        row.save()
    return row


def record_error(server_id: int, error: str) -> None:
    with database.atomic():
        McpServer.update(last_error=error[:2000]).where(McpServer.id == server_id).execute()


def prepare_tool_rows(row: McpServer, names: list[str]) -> set[str]:
    """Names among `names` that have no Tool row yet (they get the server's tier once registered)."""
    existing = {t.name for t in Tool.select(Tool.name).where(Tool.name.in_(names))} if names else set()
    return set(names) - existing


def finish_new_rows(row: McpServer, new_names: set[str], origin: dict[str, str]) -> None:
    """New Tool rows of the server take its tier and remember where they come from."""
    for name in new_names:
        tool_row = Tool.get_or_none(Tool.name == name)
        if tool_row is not None:
            tool_row.disclosure_tier = row.disclosure_tier
            tool_row.config = {"mcpServerId": str(row.id), "mcpServer": row.name, "mcpTool": origin.get(name, "")}
            with database.atomic():
                tool_row.save()


def live_aliases(server_id: int) -> list[McpToolAlias]:
    """The server's aliases; one whose Tool row was deleted (DELETE /api/v1/tools/{id}) is gone for good."""
    out = []
    for alias in aliases_of(server_id):
        if Tool.get_or_none(Tool.name == alias.name) is None:
            with database.atomic():
                alias.delete_instance()
            continue
        out.append(alias)
    return out


def create_alias(caller: Caller, req: McpToolCreate) -> tuple[McpServer, McpToolAlias, Tool]:
    """`POST /api/v1/tools`: a tool with its own name and description running one discovered server tool."""
    row = get_row(int(req.serverId))
    tool = next((t for t in row.tools or [] if t["name"] == req.toolName), None)
    if tool is None:
        raise BadRequest(f"MCP server '{row.name}' has no tool '{req.toolName}' (refresh or test the server to discover its tools)")
    if Tool.get_or_none(Tool.name == req.name) is not None:
        raise BadRequest(f"A tool named '{req.name}' already exists")
    description = req.description if req.description is not None else tool.get("description", "")
    with database.atomic():
        alias = McpToolAlias.create(server=row.id, name=req.name, mcp_tool=req.toolName)
        tool_row = tools_service.ensure_row(req.name, description, "mcp", tool.get("inputSchema") or {})
        tool_row.disclosure_tier = row.disclosure_tier
        tool_row.config = {"mcpServerId": str(row.id), "mcpServer": row.name, "mcpTool": req.toolName}
        tool_row.save()
        audit.record(caller, "CREATE", "TOOL", tool_row.id, f"tool {req.name} runs {req.toolName} of MCP server {row.name}")
    return row, alias, tool_row
