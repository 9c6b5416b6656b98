"""Disclosure tiers: `core` tools are always offered; `extension` tools (a Tool row's tier, which an MCP
server's tier sets for all its tools) are held back and offered only after the model asks for them
with `tool_search`, for the rest of that turn."""

from __future__ import annotations

import re
from typing import Any

from platform_server.features.tools.registry import ToolContext, ToolDefinition, ToolError

TOOL_NAME = "tool_search"
MAX_MATCHES = 10


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if len(w) > 1}


async def tool_search(args: dict[str, Any], ctx: ToolContext) -> str:
    """Find held-back tools by words of their name or description and make them available now."""
    query = _words(str(args.get("query") or ""))
    if not query:
        raise ToolError("Argument 'query' must name what the tool should do")
    scored = []
    for spec in ctx.deferred:
        score = len(query & _words(spec.name.replace("_", " ") + " " + spec.description))
        if score:
            scored.append((score, spec))
    matches = [spec for _, spec in sorted(scored, key=lambda x: (-x[0], x[1].name))[:MAX_MATCHES]]
    if not matches:
        return "No additional tool matches. Available on request: " + ", ".join(s.name for s in ctx.deferred)
    if ctx.offer is not None:
        ctx.offer([s.name for s in matches])
    lines = [f"- {s.name}: {s.description}" for s in matches]
    return "These tools are now available to you:\n" + "\n".join(lines)


TOOL_SEARCH = ToolDefinition(
    name=TOOL_NAME,
    description=(
        "Find more tools: some tools are only offered on request. Describe what you need (for example "
        "'send email' or 'query database'); matching tools become available for this answer."
    ),
    parameters={"type": "object", "properties": {"query": {"type": "string", "description": "What the tool should do"}}, "required": ["query"]},
    run=tool_search,
    source="meta",  # never offered by the default rules: only when tools are held back
)
