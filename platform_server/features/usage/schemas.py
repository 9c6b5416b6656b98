"""Answers of the usage routes: token totals of the model calls the meter recorded, by period, source and group."""

from __future__ import annotations

from pydantic import Field

from platform_server.serialize import View


class UsageTotalsView(View):
    promptTokens: int
    completionTokens: int
    totalTokens: int
    calls: int = Field(description="model calls")


class UsageBySourceView(UsageTotalsView):
    """One source's share (chat, wiki, research, team, memory, ...)."""

    source: str


class UsagePeriodTotalsView(UsageTotalsView):
    messages: int = Field(description="chat messages stored in the period")
    bySource: list[UsageBySourceView]


class UsagePeriodView(UsagePeriodTotalsView):
    conversations: int
    toolCalls: int


class UsageOverviewView(View):
    today: UsagePeriodView
    thisWeek: UsagePeriodView
    thisMonth: UsagePeriodView


class DashboardStatsView(View):
    agents: int
    enabledAgents: int
    conversations: int
    activeConversations: int = Field(description="active in the last 24 h")
    runningTurns: int
    total: UsagePeriodTotalsView
    today: UsagePeriodView


class UsageTrendDayView(View):
    date: str = Field(description="YYYY-MM-DD")
    messages: int
    conversations: int = Field(description="conversations started that day")
    promptTokens: int
    completionTokens: int
    totalTokens: int
    bySource: dict[str, int] = Field(description="tokens by source")


class TokenUsageItemView(View):
    """One group; the key field is the one `groupBy` names (null: calls recorded without it)."""

    model: str | None = None
    provider: str | None = None
    agentId: str | None = None
    userId: str | None = None
    source: str | None = None
    date: str | None = None
    calls: int
    messages: int = Field(description="same as calls (kept for older clients)")
    promptTokens: int
    completionTokens: int
    totalTokens: int


class TokenUsageByModelView(View):
    runtimeModel: str | None
    runtimeProvider: str | None
    promptTokens: int
    completionTokens: int
    messageCount: int = Field(description="model calls")


class TokenUsageByDateView(View):
    date: str
    promptTokens: int
    completionTokens: int
    messageCount: int = Field(description="model calls")


class TokenUsageView(View):
    groupBy: str
    total: UsageTotalsView
    bySource: list[UsageBySourceView]
    items: list[TokenUsageItemView]
    totalPromptTokens: int
    totalCompletionTokens: int
    totalMessages: int = Field(description="model calls")
    byModel: list[TokenUsageByModelView]
    byDate: list[TokenUsageByDateView]
