"""The `acp_delegate` agent tool: hand a task to an enabled ACP endpoint and return its answer.

The agent's progress (message chunks, its tool calls, plans) goes into the turn as `tool_progress`
events. Each permission request of the agent goes through the tool guard as the tool `acp_permission`
(a built-in rule asks): a grant or rule may decide at once; otherwise a pending approval is created,
`tool_approval_requested` is sent, and the owner answers with `/approve` or `/deny` through the
conversation's interrupt route while the tool waits. Stopping the turn cancels the ACP session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from platform_server.features.acp import launch
from platform_server.features.acp.models import AcpEndpoint
from platform_server.features.guard import service as guard
from platform_server.features.guard.models import PendingApproval
from platform_server.features.tools.registry import ToolContext, ToolDefinition, ToolError
from platform_server.integrations.acp_client import AcpError, AcpSession

log = logging.getLogger(__name__)

TOOL_NAME = "acp_delegate"
PERMISSION_TOOL = "acp_permission"
DESCRIPTION = (
    "Delegate a task to an external coding agent over the Agent Client Protocol (ACP) and get its "
    "final answer. `endpoint` is the name of an enabled ACP endpoint."
)
PARAMETERS = {
    "type": "object",
    "properties": {
        "endpoint": {"type": "string", "description": "Name of an enabled ACP endpoint"},
        "task": {"type": "string", "description": "What the agent should do, self-contained"},
    },
    "required": ["endpoint", "task"],
}
POLL_S = 0.1
ANSWER_CAP = 60_000


def definition() -> ToolDefinition:
    # a coding agent acts on the host: a member at least, never an end user's conversation, only where enabled
    return ToolDefinition(
        name=TOOL_NAME, description=DESCRIPTION, parameters=PARAMETERS, run=delegate, source="acp", min_role="member", end_users=False, host="acp"
    )


def _emit(ctx: ToolContext, name: str, data: dict[str, Any]) -> None:
    if ctx.emit is not None:
        ctx.emit(name, {"toolName": TOOL_NAME, **data})


def _progress(ctx: ToolContext, endpoint: str, update: dict[str, Any], answer: list[str]) -> None:
    kind = str(update.get("sessionUpdate") or "update")
    raw = update.get("content")
    content: dict[str, Any] = raw if isinstance(raw, dict) else {}
    data: dict[str, Any] = {"endpoint": endpoint, "kind": kind}
    if kind == "agent_message_chunk":
        text = str(content.get("text") or "")
        answer.append(text)
        data["text"] = text
    elif kind == "agent_thought_chunk":
        data["text"] = str(content.get("text") or "")
    elif kind in ("tool_call", "tool_call_update"):
        data.update({k: update.get(k) for k in ("toolCallId", "title", "kind", "status") if k in update})
        data["kind"] = kind
    elif kind == "plan":
        data["entries"] = update.get("entries") if isinstance(update.get("entries"), list) else []
    _emit(ctx, "tool_progress", data)


def _option(options: list[Any], prefix: str) -> str | None:
    ids = [(str(o.get("kind") or ""), str(o.get("optionId"))) for o in options if isinstance(o, dict) and o.get("optionId")]
    once = next((i for k, i in ids if k == f"{prefix}_once"), None)
    return once or next((i for k, i in ids if k.startswith(prefix)), None)


async def _permission(ctx: ToolContext, endpoint: str, params: dict[str, Any]) -> str | None:
    """Decide one permission request through the guard; returns the chosen optionId (None: cancelled)."""
    raw_call, raw_options = params.get("toolCall"), params.get("options")
    call: dict[str, Any] = raw_call if isinstance(raw_call, dict) else {}
    options: list[Any] = raw_options if isinstance(raw_options, list) else []
    title = str(call.get("title") or call.get("kind") or "an action")[:500]
    arguments = {"endpoint": endpoint, "permission": title, "kind": call.get("kind")}
    gctx = guard.GuardContext(ctx.user_id, ctx.workspace_id, ctx.agent_id, ctx.conversation_id)
    verdict = guard.evaluate(PERMISSION_TOOL, arguments, gctx)
    decision = verdict.decision
    if decision == "ask":
        pending = guard.create_pending(gctx, str(call.get("toolCallId") or "acp"), PERMISSION_TOOL, json.dumps(arguments), verdict, None)
        _emit(
            ctx,
            "tool_approval_requested",
            {
                "pendingId": pending["pendingId"],
                "toolName": PERMISSION_TOOL,
                "arguments": json.dumps(arguments),
                "reason": verdict.reason,
                "maxSeverity": verdict.severity,
                "endpoint": endpoint,
            },
        )
        decision = await _wait_for(int(pending["pendingId"]))
        _emit(ctx, "tool_approval_resolved", {"pendingId": pending["pendingId"], "toolName": PERMISSION_TOOL, "decision": decision})
    allowed = decision in ("allow", "approved")
    _emit(ctx, "tool_progress", {"endpoint": endpoint, "kind": "permission", "title": title, "decision": "allowed" if allowed else "refused"})
    return _option(options, "allow" if allowed else "reject")


async def _wait_for(pending_id: int) -> str:
    """The owner's decision on a pending approval (`approved`, `denied` or `expired`)."""
    while True:
        guard.expire_due()
        row = PendingApproval.get_or_none(PendingApproval.id == pending_id)
        if row is None:
            return "denied"
        if row.status != "pending":
            return str(row.status)
        await asyncio.sleep(POLL_S)


async def delegate(args: dict[str, Any], ctx: ToolContext) -> str:
    """Run the task on the endpoint's agent; its final answer is the tool result."""

    name = str(args.get("endpoint") or "").strip()
    task = str(args.get("task") or "").strip()
    if not task:
        raise ToolError("Argument 'task' must not be empty")
    row = AcpEndpoint.get_or_none((AcpEndpoint.name == name) & (AcpEndpoint.enabled == True))  # noqa: E712
    if row is None:
        raise ToolError(f"No enabled ACP endpoint named '{name}'")
    try:
        spec = await launch.prepare(ctx.config, row, ctx.workspace_id)  # the workspace's own folder, sandboxed
    except AcpError as exc:
        raise ToolError(f"ACP endpoint '{row.name}' failed: {exc}") from None
    session = AcpSession(spec)
    answer: list[str] = []
    session.on_update = lambda update: _progress(ctx, row.name, update, answer)

    async def on_permission(params: dict[str, Any]) -> str | None:
        return await _permission(ctx, row.name, params)

    session.on_permission = on_permission
    _emit(ctx, "tool_progress", {"endpoint": row.name, "kind": "started"})
    prompt: asyncio.Future[str] | None = None
    try:
        await session.start(ctx.config.acp_test_timeout_s)
        prompt = asyncio.ensure_future(session.prompt(task))
        stop_reason = await asyncio.shield(prompt)
    except asyncio.CancelledError:
        if prompt is not None and not prompt.done():
            with contextlib.suppress(Exception):
                await session.cancel()
                await asyncio.wait({prompt}, timeout=2.0)  # let the agent wind down
        raise
    except (AcpError, asyncio.TimeoutError) as exc:
        detail = str(exc) or "no answer in time"
        raise ToolError(f"ACP endpoint '{row.name}' failed: {detail}") from None
    finally:
        if prompt is not None and not prompt.done():
            prompt.cancel()
        await session.close()
    text = "".join(answer).strip()
    _emit(ctx, "tool_progress", {"endpoint": row.name, "kind": "finished", "stopReason": stop_reason})
    if stop_reason not in ("end_turn", "max_tokens"):
        text = f"{text}\n(the agent stopped: {stop_reason})".strip()
    return text[:ANSWER_CAP] or f"(the agent ended with {stop_reason} and no answer)"
