"""Usage figures from the stored per-message token counts, scoped to one workspace."""
from __future__ import annotations

import datetime as dt
from typing import Any

import peewee

from platform_server.db import dict_row, dict_rows, utcnow
from platform_server.features.conversations.models import Conversation, Message


def _messages(workspace_id: int) -> peewee.ModelSelect[Message]:
    return Message.select().join(Conversation).where(Conversation.workspace_id == workspace_id)


def _token_sums(q: peewee.ModelSelect[Any]) -> dict[str, int]:
    row = dict_row(q.select(
        peewee.fn.COALESCE(peewee.fn.SUM(Message.prompt_tokens), 0).alias("p"),
        peewee.fn.COALESCE(peewee.fn.SUM(Message.completion_tokens), 0).alias("c"),
        peewee.fn.COUNT(Message.id).alias("n"),
    ))
    return {"promptTokens": int(row["p"]), "completionTokens": int(row["c"]),
            "totalTokens": int(row["p"]) + int(row["c"]), "messages": int(row["n"])}


def overview(workspace_id: int, running_turns: int) -> dict[str, Any]:
    """Counts for the dashboard: agents, conversations, messages, tokens (all time and today)."""
    from platform_server.features.agents.models import Agent
    from platform_server.features.guard.models import ToolCallLog

    today = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    agents = Agent.select().where(Agent.workspace_id == workspace_id)
    convs = Conversation.select().where(Conversation.workspace_id == workspace_id)
    return {
        "agents": agents.count(),
        "enabledAgents": agents.where(Agent.enabled == True).count(),  # noqa: E712
        "conversations": convs.count(),
        "activeConversations": convs.where(Conversation.last_active_time >= utcnow() - dt.timedelta(hours=24)).count(),
        "runningTurns": running_turns,
        "total": _token_sums(_messages(workspace_id)),
        "today": {
            **_token_sums(_messages(workspace_id).where(Message.create_time >= today)),
            # the original console's "today" tiles
            "conversations": convs.where(Conversation.last_active_time >= today).count(),
            "toolCalls": ToolCallLog.select().where((ToolCallLog.workspace_id == workspace_id) & (ToolCallLog.create_time >= today)).count(),
        },
    }


def trend(workspace_id: int, days: int) -> list[dict[str, Any]]:
    """Per day (UTC), oldest first: messages, new conversations, tokens."""
    start = utcnow().replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=days - 1)
    day = peewee.fn.substr(Message.create_time, 1, 10).coerce(False)
    rows = dict_rows((
        _messages(workspace_id).where(Message.create_time >= start)
        .select(day.alias("day"), peewee.fn.COUNT(Message.id).alias("n"),
                peewee.fn.SUM(Message.prompt_tokens).alias("p"), peewee.fn.SUM(Message.completion_tokens).alias("c"))
        .group_by(day)
    ))
    by_day = {r["day"]: r for r in rows}
    cday = peewee.fn.substr(Conversation.create_time, 1, 10).coerce(False)
    new_convs = {
        r["day"]: r["n"]
        for r in dict_rows(Conversation.select(cday.alias("day"), peewee.fn.COUNT(Conversation.id).alias("n"))
        .where((Conversation.workspace_id == workspace_id) & (Conversation.create_time >= start))
        .group_by(cday))
    }
    out = []
    for i in range(days):
        d = (start + dt.timedelta(days=i)).date().isoformat()
        r = by_day.get(d, {})
        p, c = int(r.get("p") or 0), int(r.get("c") or 0)
        out.append({"date": d, "messages": int(r.get("n") or 0), "conversations": int(new_convs.get(d, 0)),
                    "promptTokens": p, "completionTokens": c, "totalTokens": p + c})
    return out


GROUPS: dict[str, tuple[Any, str]] = {
    "model": (Message.runtime_model, "model"),
    "provider": (Message.runtime_provider, "provider"),
    "agent": (Conversation.agent_id, "agentId"),
    "user": (Conversation.user_id, "userId"),
    "day": (peewee.fn.substr(Message.create_time, 1, 10).coerce(False), "date"),
}


def token_usage(workspace_id: int, start: dt.datetime | None, end: dt.datetime | None, group_by: str) -> dict[str, Any]:
    """Token totals in a time range, grouped by model, provider, agent, user or day."""
    q = _messages(workspace_id).where((Message.prompt_tokens > 0) | (Message.completion_tokens > 0))
    if start:
        q = q.where(Message.create_time >= start)
    if end:
        q = q.where(Message.create_time <= end)
    column, label = GROUPS[group_by]
    rows = dict_rows((
        q.select(column.alias("k"), peewee.fn.COUNT(Message.id).alias("n"),
                 peewee.fn.SUM(Message.prompt_tokens).alias("p"), peewee.fn.SUM(Message.completion_tokens).alias("c"))
        .group_by(column).order_by(peewee.fn.SUM(Message.prompt_tokens + Message.completion_tokens).desc())
    ))
    items = []
    for r in rows:
        key = r["k"]
        p, c = int(r["p"] or 0), int(r["c"] or 0)
        items.append({label: None if key is None else str(key), "messages": int(r["n"]),
                      "promptTokens": p, "completionTokens": c, "totalTokens": p + c})
    total = _token_sums(q)
    return {"groupBy": group_by, "total": total, "items": items, **_console_breakdown(q, total)}


def _console_breakdown(q: Any, total: dict[str, int]) -> dict[str, Any]:
    """The same range as the original console's token page reads it: flat totals, by model and by date."""
    sums = (peewee.fn.COUNT(Message.id).alias("n"), peewee.fn.SUM(Message.prompt_tokens).alias("p"),
            peewee.fn.SUM(Message.completion_tokens).alias("c"))
    day = peewee.fn.substr(Message.create_time, 1, 10).coerce(False)
    by_model: Any = q.select(Message.runtime_model, Message.runtime_provider, *sums).group_by(
        Message.runtime_model, Message.runtime_provider).order_by(peewee.fn.SUM(Message.prompt_tokens).desc()).dicts()
    by_date: Any = q.select(day.alias("d"), *sums).group_by(day).order_by(day).dicts()

    def row(r: dict[str, Any]) -> dict[str, int]:
        return {"promptTokens": int(r["p"] or 0), "completionTokens": int(r["c"] or 0), "messageCount": int(r["n"])}

    return {
        "totalPromptTokens": total["promptTokens"], "totalCompletionTokens": total["completionTokens"],
        "totalMessages": total["messages"],
        "byModel": [{"runtimeModel": r["runtime_model"], "runtimeProvider": r["runtime_provider"], **row(r)}
                    for r in by_model],
        "byDate": [{"date": r["d"], **row(r)} for r in by_date],
    }
