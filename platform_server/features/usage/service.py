"""Usage figures, scoped to one workspace: tokens from the usage records of every model call (chat,
wiki, memory, dreaming, workflows, teams, curator, skill synthesis, goal evaluation), messages from the
conversations."""

from __future__ import annotations

import datetime as dt
from typing import Any

import peewee

from platform_server.db import dict_row, dict_rows, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.guard.models import ToolCallLog
from platform_server.features.usage.models import UsageRecord


def _messages(workspace_id: int) -> peewee.ModelSelect[Message]:
    return Message.select().join(Conversation).where(Conversation.workspace_id == workspace_id)


def _records(workspace_id: int) -> peewee.ModelSelect[UsageRecord]:
    return UsageRecord.select().where(UsageRecord.workspace_id == workspace_id)


def _token_sums(q: peewee.ModelSelect[Any]) -> dict[str, int]:
    row = dict_row(
        q.select(
            peewee.fn.COALESCE(peewee.fn.SUM(UsageRecord.prompt_tokens), 0).alias("p"),
            peewee.fn.COALESCE(peewee.fn.SUM(UsageRecord.completion_tokens), 0).alias("c"),
            peewee.fn.COUNT(UsageRecord.id).alias("n"),
        )
    )
    return {"promptTokens": int(row["p"]), "completionTokens": int(row["c"]), "totalTokens": int(row["p"]) + int(row["c"]), "calls": int(row["n"])}


def by_source(q: peewee.ModelSelect[Any]) -> list[dict[str, Any]]:
    """Totals per source (chat, wiki, memory, ...), the largest first."""
    rows = dict_rows(
        q.select(
            UsageRecord.source.alias("k"),
            peewee.fn.COUNT(UsageRecord.id).alias("n"),
            peewee.fn.SUM(UsageRecord.prompt_tokens).alias("p"),
            peewee.fn.SUM(UsageRecord.completion_tokens).alias("c"),
        )
        .group_by(UsageRecord.source)
        .order_by(peewee.fn.SUM(UsageRecord.prompt_tokens + UsageRecord.completion_tokens).desc(), UsageRecord.source)
    )
    return [
        {
            "source": r["k"],
            "calls": int(r["n"]),
            "promptTokens": int(r["p"] or 0),
            "completionTokens": int(r["c"] or 0),
            "totalTokens": int(r["p"] or 0) + int(r["c"] or 0),
        }
        for r in rows
    ]


def _totals(workspace_id: int, since: dt.datetime | None) -> dict[str, Any]:
    records, messages = _records(workspace_id), _messages(workspace_id)
    if since is not None:
        records = records.where(UsageRecord.create_time >= since)
        messages = messages.where(Message.create_time >= since)
    return {**_token_sums(records), "messages": messages.count(), "bySource": by_source(records)}


def _period(workspace_id: int, since: dt.datetime) -> dict[str, Any]:
    """Tokens, messages, conversations active and tool calls since a moment (one comparison card)."""
    convs = Conversation.select().where((Conversation.workspace_id == workspace_id) & (Conversation.last_active_time >= since))
    calls = ToolCallLog.select().where((ToolCallLog.workspace_id == workspace_id) & (ToolCallLog.create_time >= since))
    return {**_totals(workspace_id, since), "conversations": convs.count(), "toolCalls": calls.count()}


def periods(workspace_id: int) -> dict[str, Any]:
    """The dashboard's period comparison: today, this week (from Monday) and this month, UTC. Exactly these
    three keys: the original console draws one card per key."""
    today = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    return {
        "today": _period(workspace_id, today),
        "thisWeek": _period(workspace_id, today - dt.timedelta(days=today.weekday())),
        "thisMonth": _period(workspace_id, today.replace(day=1)),
    }


def overview(workspace_id: int, running_turns: int) -> dict[str, Any]:
    """Counts for the dashboard: agents, conversations, messages, tokens (all time and today, per source)."""

    today = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    agents = Agent.select().where(Agent.workspace_id == workspace_id)
    convs = Conversation.select().where(Conversation.workspace_id == workspace_id)
    return {
        "agents": agents.count(),
        "enabledAgents": agents.where(Agent.enabled == True).count(),  # noqa: E712
        "conversations": convs.count(),
        "activeConversations": convs.where(Conversation.last_active_time >= utcnow() - dt.timedelta(hours=24)).count(),
        "runningTurns": running_turns,
        "total": _totals(workspace_id, None),
        "today": {
            **_totals(workspace_id, today),
            # the original console's "today" tiles
            "conversations": convs.where(Conversation.last_active_time >= today).count(),
            "toolCalls": ToolCallLog.select().where((ToolCallLog.workspace_id == workspace_id) & (ToolCallLog.create_time >= today)).count(),
        },
    }


def trend(workspace_id: int, days: int) -> list[dict[str, Any]]:
    """Per day (UTC), oldest first: messages, new conversations, tokens (and tokens per source)."""
    start = utcnow().replace(hour=0, minute=0, second=0, microsecond=0) - dt.timedelta(days=days - 1)
    day = peewee.fn.substr(Message.create_time, 1, 10).coerce(False)
    messages = {
        r["day"]: int(r["n"])
        for r in dict_rows(
            _messages(workspace_id).where(Message.create_time >= start).select(day.alias("day"), peewee.fn.COUNT(Message.id).alias("n")).group_by(day)
        )
    }
    rday = peewee.fn.substr(UsageRecord.create_time, 1, 10).coerce(False)
    tokens: dict[str, dict[str, Any]] = {}
    for r in dict_rows(
        _records(workspace_id)
        .where(UsageRecord.create_time >= start)
        .select(
            rday.alias("day"),
            UsageRecord.source.alias("s"),
            peewee.fn.SUM(UsageRecord.prompt_tokens).alias("p"),
            peewee.fn.SUM(UsageRecord.completion_tokens).alias("c"),
        )
        .group_by(rday, UsageRecord.source)
    ):
        entry = tokens.setdefault(r["day"], {"p": 0, "c": 0, "sources": {}})
        p, c = int(r["p"] or 0), int(r["c"] or 0)
        entry["p"] += p
        entry["c"] += c
        entry["sources"][r["s"]] = p + c
    cday = peewee.fn.substr(Conversation.create_time, 1, 10).coerce(False)
    new_convs = {
        r["day"]: r["n"]
        for r in dict_rows(
            Conversation.select(cday.alias("day"), peewee.fn.COUNT(Conversation.id).alias("n"))
            .where((Conversation.workspace_id == workspace_id) & (Conversation.create_time >= start))
            .group_by(cday)
        )
    }
    out = []
    for i in range(days):
        d = (start + dt.timedelta(days=i)).date().isoformat()
        t = tokens.get(d, {"p": 0, "c": 0, "sources": {}})
        out.append(
            {
                "date": d,
                "messages": messages.get(d, 0),
                "conversations": int(new_convs.get(d, 0)),
                "promptTokens": t["p"],
                "completionTokens": t["c"],
                "totalTokens": t["p"] + t["c"],
                "bySource": t["sources"],
            }
        )
    return out


GROUPS: dict[str, tuple[Any, str]] = {
    "model": (UsageRecord.model, "model"),
    "provider": (UsageRecord.provider, "provider"),
    "agent": (UsageRecord.agent_id, "agentId"),
    "user": (UsageRecord.user_id, "userId"),
    "source": (UsageRecord.source, "source"),
    "day": (peewee.fn.substr(UsageRecord.create_time, 1, 10).coerce(False), "date"),
}


def token_usage(workspace_id: int, start: dt.datetime | None, end: dt.datetime | None, group_by: str) -> dict[str, Any]:
    """Token totals of every model call in a time range, grouped by model, provider, agent, user, source or day."""
    q = _records(workspace_id)
    if start:
        q = q.where(UsageRecord.create_time >= start)
    if end:
        q = q.where(UsageRecord.create_time <= end)
    column, label = GROUPS[group_by]
    rows = dict_rows(
        q.select(
            column.alias("k"),
            peewee.fn.COUNT(UsageRecord.id).alias("n"),
            peewee.fn.SUM(UsageRecord.prompt_tokens).alias("p"),
            peewee.fn.SUM(UsageRecord.completion_tokens).alias("c"),
        )
        .group_by(column)
        .order_by(peewee.fn.SUM(UsageRecord.prompt_tokens + UsageRecord.completion_tokens).desc())
    )
    items = []
    for r in rows:
        key = r["k"]
        p, c = int(r["p"] or 0), int(r["c"] or 0)
        # `messages` is kept for older clients: it counts model calls, like `calls`
        items.append(
            {
                label: None if key is None else str(key),
                "calls": int(r["n"]),
                "messages": int(r["n"]),
                "promptTokens": p,
                "completionTokens": c,
                "totalTokens": p + c,
            }
        )
    total = _token_sums(q)
    return {"groupBy": group_by, "total": total, "bySource": by_source(q), "items": items, **_console_breakdown(q, total)}


def _console_breakdown(q: peewee.ModelSelect[Any], total: dict[str, int]) -> dict[str, Any]:
    """The same range as the original console's token page reads it: flat totals, by model and by date
    (`messageCount` and `totalMessages` count model calls, as the usage records do)."""
    sums = (
        peewee.fn.COUNT(UsageRecord.id).alias("n"),
        peewee.fn.SUM(UsageRecord.prompt_tokens).alias("p"),
        peewee.fn.SUM(UsageRecord.completion_tokens).alias("c"),
    )
    day = peewee.fn.substr(UsageRecord.create_time, 1, 10).coerce(False)
    by_model = dict_rows(
        q.select(UsageRecord.model, UsageRecord.provider, *sums)
        .group_by(UsageRecord.model, UsageRecord.provider)
        .order_by(peewee.fn.SUM(UsageRecord.prompt_tokens).desc())
    )
    by_date = dict_rows(q.select(day.alias("d"), *sums).group_by(day).order_by(day))

    def row(r: dict[str, Any]) -> dict[str, int]:
        return {"promptTokens": int(r["p"] or 0), "completionTokens": int(r["c"] or 0), "messageCount": int(r["n"])}

    return {
        "totalPromptTokens": total["promptTokens"],
        "totalCompletionTokens": total["completionTokens"],
        "totalMessages": total["calls"],
        "byModel": [{"runtimeModel": r["model"], "runtimeProvider": r["provider"], **row(r)} for r in by_model],
        "byDate": [{"date": r["d"], **row(r)} for r in by_date],
    }
