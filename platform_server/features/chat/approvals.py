"""Every tool call passes the guard; a call that needs approval pauses the turn until `/approve` or `/deny`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from platform_server.db import database
from platform_server.features.acp.delegate import PERMISSION_TOOL as ACP_PERMISSION
from platform_server.features.acp.delegate import TOOL_NAME as ACP_DELEGATE
from platform_server.features.chat import tool_calls
from platform_server.features.chat.store import Answer
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.guard import service as guard
from platform_server.features.tools.registry import ToolRegistry
from platform_server.integrations.llm import ToolCall
from platform_server.json_types import JsonObject
from platform_server.memo import memo_on
from platform_server.web.context import ROLE_RANK

if TYPE_CHECKING:
    from platform_server.features.chat.react import ReactLoop
    from platform_server.features.chat.turn_setup import TurnSetup
    from platform_server.features.chat.turns import Turn

COMMANDS = {"/approve": "approved", "/deny": "denied"}
NOTHING_PENDING = "There is no tool call waiting for approval in this conversation."
DENIED_RESULT = "The user denied this tool call."
WAITING_FOR_OWNER = "A tool call in this conversation is waiting for the owner's approval; it is decided in the console, not by a chat message here."


class AwaitingApproval(Exception):
    """Raised inside a turn when a tool call waits for the owner's decision."""


def command_of(text: str) -> str | None:
    """`approved` / `denied` when the message is `/approve` or `/deny`."""
    return COMMANDS.get(text.strip().lower())


# Calls that are approved while another tool runs: they need that tool's role (a delegated coding
# agent's permission request is the acp_delegate call acting).
_RUNS_UNDER = {ACP_PERMISSION: ACP_DELEGATE}


def approval_refusal(registry: ToolRegistry, role: str | None, tool_name: str) -> str | None:
    """Why this approver may not approve a call of `tool_name` (the tool's role floor is above the
    approver's role), else None. Approving needs the role the call needs; denying needs none."""
    floor = registry.required_role(_RUNS_UNDER.get(tool_name, tool_name))
    if floor and ROLE_RANK.get(role or "", 0) < ROLE_RANK[floor]:
        return f"Approving {tool_name} needs the {floor} role in this workspace; the approver's role is lower"
    return None


@dataclass(frozen=True)
class Resolution:
    pending: JsonObject  # the resolved row (guard.pending_dict)
    decision: str  # approved | denied
    reason: str | None = None  # set when an approval was refused for the approver's role

    def answer(self) -> dict[str, str]:
        return {"resolved": self.decision, "reason": self.reason} if self.reason else {"resolved": self.decision}


def resolve_as(registry: ToolRegistry, user_id: int, role: str | None, conversation_id: str, decision: str) -> Resolution | None:
    """Resolve the owner's oldest pending call; an approval the approver's role cannot give refuses the
    call with the reason (spec: such an approver cannot approve it). None when nothing is pending."""
    reason = None
    if decision == "approved":
        pending = guard.pending_for(user_id, conversation_id)
        reason = approval_refusal(registry, role, str(pending[0]["toolName"])) if pending else None
    final = "denied" if reason else decision
    resolved = guard.resolve_oldest(user_id, conversation_id, final, user_id, note=reason)
    return Resolution(resolved, final, reason) if resolved is not None else None


def context(turn: Turn) -> guard.GuardContext:
    return guard.GuardContext(turn.user_id, turn.workspace_id, turn.agent_id, turn.conversation_id)


_ANY_PENDING = "SELECT 1 FROM pending_approval WHERE user_id = ? AND conversation_id = ? AND status = 'pending' LIMIT 1"
_USERS_WAITING = "SELECT DISTINCT user_id FROM pending_approval WHERE status = 'pending'"


@memo_on("pending_approval")
def _users_waiting() -> frozenset[int]:
    """Users with a call waiting for approval, kept until an approval row changes (most have none)."""
    return frozenset(row[0] for row in database.execute_sql(_USERS_WAITING))


def has_pending(user_id: int, conversation_id: str) -> bool:
    """Whether a call waits for approval; no read when the user has nothing pending (every turn's start)."""
    if user_id not in _users_waiting() or database.execute_sql(_ANY_PENDING, (user_id, conversation_id)).fetchone() is None:
        return False
    return bool(guard.pending_for(user_id, conversation_id))  # marks expired ones first


def supersede(user_id: int, conversation_id: str) -> int:
    """A new ordinary message denies what was waiting (the model moves on)."""
    return guard.deny_all_pending(user_id, conversation_id, user_id, reason="superseded by a new message")


async def run_call(loop: ReactLoop, turn: Turn, conv: Conversation, call: ToolCall, setup: TurnSetup, answer: Answer, approved: bool = False) -> None:
    """Guard, then run (or refuse, or pause on) one tool call, storing and streaming its result."""
    if call.name in setup.withheld:
        turn.publish("tool_call_started", {"toolCallId": call.id, "toolName": call.name, "arguments": call.arguments})
        loop.store_tool_result(turn, conv, call, answer, False, setup.withheld[call.name])
        return
    if call.name not in {spec.name for spec in setup.specs}:
        turn.publish("tool_call_started", {"toolCallId": call.id, "toolName": call.name, "arguments": call.arguments})
        loop.store_tool_result(turn, conv, call, answer, False, f"Tool '{call.name}' is not available to this agent")
        return
    verdict = tool_calls.evaluate(call, context(turn))
    if approved and verdict.decision == "ask":  # the owner's approval answers an "ask", never a "deny"
        verdict = guard.Verdict("allow", verdict.severity, verdict.rule_id, "approved by the owner")
    if verdict.decision == "ask":
        pending = guard.create_pending(context(turn), call.id, call.name, call.arguments, verdict, answer.row_id)
        # kept on the stored call (saved with the paused turn's end): the history shows the card after a reload
        note_approval(
            answer, call.id, {"pendingId": pending["pendingId"], "reason": verdict.reason, "maxSeverity": verdict.severity, "decision": "pending"}
        )
        turn.set_phase("awaiting_approval", call.name)
        turn.publish(
            "tool_approval_requested",
            {
                "pendingId": pending["pendingId"],
                "toolName": call.name,
                "arguments": call.arguments,
                "reason": verdict.reason,
                "maxSeverity": verdict.severity,
            },
        )
        raise AwaitingApproval(pending["pendingId"])
    turn.set_phase("calling_tool", call.name)
    turn.publish("tool_call_started", {"toolCallId": call.id, "toolName": call.name, "arguments": call.arguments})
    with turn.usage.lent():  # a tool's own model calls (a sub-agent, the wiki) count on the turn
        outcome = await tool_calls.run_guarded(
            loop.tools, context(turn), setup.tool_ctx, call, verdict, f"Denied by the tool guard: {verdict.reason}"
        )
    loop.store_tool_result(turn, conv, call, answer, outcome.success, outcome.result)


def note_approval(answer: Answer, call_id: str, fields: JsonObject) -> None:
    """Record an approval's state on the answer's stored tool call (`metadata.toolCalls[].approval`)."""
    for entry in answer.tool_calls:
        if entry["id"] == call_id:
            approval = entry.get("approval")
            entry["approval"] = {**(approval if isinstance(approval, dict) else {}), **fields}


def answer_from_row(row: Message) -> Answer:
    meta = row.metadata or {}
    return Answer(
        row_id=row.id,
        conversation_db_id=row.conversation_id,
        content=row.content,
        tool_calls=list(meta.get("toolCalls", [])),
        # kept as stored: saving the resumed answer rewrites its metadata whole
        reasoning=str(meta.get("reasoning") or ""),
        citations=list(meta.get("citations") or []),
        timing=meta.get("timing") if isinstance(meta.get("timing"), dict) else None,
        runtime_model=row.runtime_model,
        runtime_provider=row.runtime_provider,
        stored=True,
    )


async def resume(loop: ReactLoop, turn: Turn, conv: Conversation, decision: str, setup: TurnSetup) -> bool:
    """Resolve the oldest pending call, then finish that assistant message's other calls.

    Returns False when nothing was pending (the turn then just says so).
    """
    outcome = resolve_as(loop.tools, turn.user_id, setup.tool_ctx.role, turn.conversation_id, decision)
    if outcome is None:
        return False
    resolved, decision, refused = outcome.pending, outcome.decision, outcome.reason
    turn.publish("tool_approval_resolved", {"pendingId": resolved["pendingId"], "toolName": resolved["toolName"], "decision": decision})
    row = Message.get_or_none(Message.id == int(str(resolved["assistantMessageId"] or 0)))
    if row is None:
        return True
    answer = answer_from_row(row)
    turn.answer = answer
    resolution: JsonObject = {"decision": decision, "reason": refused} if refused else {"decision": decision}
    note_approval(answer, str(resolved["toolCallId"]), resolution)  # stored with the call's result below
    done = {m.metadata.get("toolCallId") for m in Message.select().where((Message.conversation == conv.id) & (Message.role == "tool")) if m.metadata}
    for entry in answer.tool_calls:
        if entry["id"] in done:
            continue
        call = ToolCall(str(entry["id"]), str(entry["name"]), str(entry.get("arguments") or "{}"))
        if entry["id"] == resolved["toolCallId"] and decision == "denied":
            turn.publish("tool_call_started", {"toolCallId": call.id, "toolName": call.name, "arguments": call.arguments})
            loop.store_tool_result(turn, conv, call, answer, False, refused or DENIED_RESULT)
            continue
        loop.checkpoint(turn)
        await run_call(loop, turn, conv, call, setup, answer, approved=entry["id"] == resolved["toolCallId"])
    return True
