"""Dashboard and token usage."""

from __future__ import annotations

import datetime as dt
import re

from platform_server.db import parse_iso
from platform_server.features.chat import CHAT
from platform_server.features.usage import service
from platform_server.features.usage.schemas import DashboardStatsView, TokenUsageView, UsageOverviewView, UsageTrendDayView
from platform_server.web.base import ApiHandler
from platform_server.web.errors import DATE_TIME_PARAM, BadRequest, parse_date_time_param
from platform_server.web.openapi_answers import list_of, one
from platform_server.web.routing import route

TAGS = ("Dashboard",)
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class OverviewHandler(ApiHandler):
    answers = {"GET": one(UsageOverviewView)}
    access = {"GET": "viewer"}
    tags = TAGS

    def get(self) -> None:
        """The period comparison `{today, thisWeek, thisMonth}`, each `{conversations, messages, totalTokens,
        promptTokens, completionTokens, toolCalls, bySource}` (UTC; the week starts on Monday)."""
        self.ok(service.periods(self.require_caller().workspace_id))


class StatsHandler(ApiHandler):
    answers = {"GET": one(DashboardStatsView)}
    access = {"GET": "viewer"}
    tags = TAGS

    def get(self) -> None:
        """Workspace counts: agents, conversations, running turns, tokens and messages all time and today."""
        chat = self.platform.runtime(CHAT)
        caller = self.require_caller()
        running = len([t for t in chat.turns.running() if t.workspace_id == caller.workspace_id]) if chat else 0
        self.ok(service.overview(caller.workspace_id, running))


class TrendHandler(ApiHandler):
    answers = {"GET": list_of(UsageTrendDayView)}
    access = {"GET": "viewer"}
    tags = TAGS
    query_params = {"GET": [{"name": "days", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 90}}]}

    def get(self) -> None:
        """Daily usage for the last `days` days (default 7, at most 90)."""
        days = self.query_long("days")
        days = 7 if days is None else days
        if not 1 <= days <= 90:
            raise BadRequest("days: must be between 1 and 90")
        self.ok(service.trend(self.require_caller().workspace_id, days))


class TokenUsageHandler(ApiHandler):
    answers = {"GET": one(TokenUsageView)}
    access = {"GET": "viewer"}
    tags = TAGS
    query_params = {
        "GET": [
            {"name": "startTime", "in": "query", "schema": DATE_TIME_PARAM, "description": "RFC 3339, inclusive"},
            {"name": "endTime", "in": "query", "schema": DATE_TIME_PARAM, "description": "RFC 3339, inclusive"},
            {"name": "groupBy", "in": "query", "schema": {"type": "string", "enum": sorted(service.GROUPS)}},
        ]
    }

    def get(self) -> None:
        """Token usage in a time range grouped by model, provider, agent, user, source or day."""
        times = {}
        for name in ("startTime", "endTime"):
            raw = self.get_query_argument(name, None, strip=False)  # the document's format has no spaces
            if raw is not None:
                times[name] = parse_date_time_param(name, raw)
        for name, key, clock in (("startDate", "startTime", "T00:00:00"), ("endDate", "endTime", "T23:59:59.999")):
            raw = self.get_query_argument(name, None, strip=False)  # the original console sends whole days
            if raw is None:
                continue
            try:  # the document's `format: date`: exactly YYYY-MM-DD, a real day (an empty value is none)
                day = dt.date.fromisoformat(raw) if _DAY.fullmatch(raw) else None
            except ValueError:
                day = None
            if day is None:
                raise BadRequest(f"Invalid value for parameter '{name}': expected a date (YYYY-MM-DD)")
            if key not in times:
                times[key] = parse_iso(day.isoformat() + clock)
        group = self.query_choice("groupBy", service.GROUPS) or "model"  # an empty value is not one of the enum
        self.ok(service.token_usage(self.require_caller().workspace_id, times.get("startTime"), times.get("endTime"), group))


ROUTES = [
    route("/api/v1/dashboard/overview", OverviewHandler),
    route("/api/v1/dashboard/stats", StatsHandler),
    route("/api/v1/dashboard/trend", TrendHandler),
    route("/api/v1/token-usage", TokenUsageHandler),
]
