"""Memory routes under /api/v1/memory/{agentId}: the caller's own memory of an agent (optionally per end user)."""

from __future__ import annotations

import re
from typing import Any

from platform_server.blocking import run_blocking
from platform_server.features.agents import service as agents
from platform_server.features.memory import DREAMER, dreaming, facts, schedule, store
from platform_server.features.memory.schemas import (
    DREAM_EVENTS,
    EditRequest,
    FactEditRequest,
    FeedbackRequest,
    FileText,
    FocusedRequest,
    MemoryCandidateView,
    MemoryContradictionView,
    MemoryDiaryView,
    MemoryDreamEntryView,
    MemoryDreamReportView,
    MemoryDreamStatusView,
    MemoryEditedEntryView,
    MemoryFactView,
    MemoryFileInfoView,
    MemoryFileView,
    MemoryFileWrittenView,
    MemoryMorningCardView,
    MemorySummaryView,
    ResolveRequest,
)
from platform_server.features.memory.store import Scope
from platform_server.features.models import LLM
from platform_server.platform import Flag
from platform_server.web.base import ApiHandler
from platform_server.web.errors import BadRequest
from platform_server.web.live import LiveFeedHandler
from platform_server.web.openapi_answers import list_of, maybe, one, page_of
from platform_server.web.pagination import page_request, paginate
from platform_server.web.routing import gated, route

TAGS = ("Memory",)
BASE = "/api/v1/memory/{agentId}"
END_USER = {
    "name": "endUserId",
    "in": "query",
    "schema": {"type": "string", "maxLength": 128},  # MemoryHandler.scope counts it as sent, spaces included
    "description": "The end user whose memory this is (none: the caller's own)",
}


class MemoryHandler(ApiHandler):
    """Shared: the agent in the caller's workspace and the caller's memory scope of it."""

    access = {"GET": "viewer", "POST": "member"}
    tags = TAGS
    query_params = {"GET": [END_USER], "POST": [END_USER]}

    def scope(self, agent_id: int) -> tuple[Any, Scope]:
        caller = self.require_caller()
        agent = agents.get_agent(caller, agent_id)
        raw = self.get_query_argument("endUserId", "", strip=False) or ""
        if len(raw) > 128:  # the document's maxLength, of the value as sent (spaces around it count)
            raise BadRequest("endUserId: at most 128 characters")
        return agent, Scope(agent.workspace_id, caller.user_id, agent.id, raw.strip())

    @property
    def dreamer(self) -> dreaming.Dreamer:
        return self.platform.runtime(DREAMER)


class DreamEventsHandler(LiveFeedHandler, MemoryHandler):
    access = {"GET": "viewer"}
    sse_methods = frozenset({"GET"})
    events = {"GET": DREAM_EVENTS}
    query_token = True
    query_params = {"GET": [END_USER, {"name": "token", "in": "query", "schema": {"type": "string"}}]}

    async def get(self, agentId: int) -> None:
        """Dream progress of the caller's memories of this agent (SSE: snapshot, dream_*, error, heartbeat)."""
        agent, scope = self.scope(agentId)
        snapshot = {"agentId": str(agent.id), "running": self.dreamer.running_for(scope.user_id, agent.id)}
        await self.feed(
            self.dreamer.bus.subscribe(scope.user_id, agent.id), self.config.heartbeat_s, opening=lambda writer: writer.send("snapshot", snapshot)
        )


class MorningCardHandler(MemoryHandler):
    answers = {"GET": maybe(MemoryMorningCardView)}

    def get(self, agentId: int) -> None:
        """The last completed dream of this memory in short, with `seen` (null before the first dream)."""
        _, scope = self.scope(agentId)
        self.ok(dreaming.morning_card(scope))


class MorningCardSeenHandler(MemoryHandler):
    answers = {"POST": one(MemoryMorningCardView)}

    def post(self, agentId: int) -> None:
        """Mark the morning card (the last completed dream report) as seen."""
        _, scope = self.scope(agentId)
        self.ok(dreaming.mark_seen(scope, self.require_caller()))


class ReportsHandler(MemoryHandler):
    answers = {"GET": page_of(MemoryDreamReportView)}
    query_params = {
        "GET": [
            END_USER,
            {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
            {"name": "size", "in": "query", "schema": {"type": "integer", "minimum": 1}},
        ]
    }

    def get(self, agentId: int) -> None:
        """Dream reports of this memory, newest first (paged)."""
        _, scope = self.scope(agentId)
        req = page_request(self.get_query_argument("page", None), self.get_query_argument("size", None), self.config.max_page_size)
        self.ok(paginate(dreaming.reports_query(scope), req, dreaming.report_vo))


class ReportHandler(MemoryHandler):
    answers = {"GET": one(MemoryDreamReportView)}

    def get(self, agentId: int, reportId: int) -> None:
        """One dream report with its entries (key, action, before, after)."""
        _, scope = self.scope(agentId)
        self.ok(dreaming.report_vo(dreaming.get_report(scope, reportId)))


class EntryConfirmHandler(MemoryHandler):
    answers = {"POST": one(MemoryDreamEntryView)}

    def post(self, agentId: int, reportId: int, key: str) -> None:
        """Acknowledge a report entry (memory is unchanged; the confirmation time is recorded)."""
        _, scope = self.scope(agentId)
        self.ok(dreaming.confirm_entry(scope, self.require_caller(), reportId, key))


class EntryEditHandler(MemoryHandler):
    answers = {"POST": one(MemoryEditedEntryView)}
    body_models = {"POST": EditRequest}

    def post(self, agentId: int, reportId: int, key: str) -> None:
        """Rewrite an entry (`{after}`); MEMORY.md marks it user-edited and later dreams keep it."""
        req = self.body(EditRequest)
        _, scope = self.scope(agentId)
        self.ok(dreaming.edit_entry(self.config, scope, self.require_caller(), reportId, key, req.after))


class CandidatesHandler(MemoryHandler):
    answers = {"GET": list_of(MemoryCandidateView)}
    query_params = {"GET": [END_USER, {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 500}}]}

    def get(self, agentId: int) -> None:
        """Active facts ranked by recall score with its parts (recency, frequency, helpfulness, confidence)."""
        _, scope = self.scope(agentId)
        limit = self.query_long("limit")
        limit = 20 if limit is None else limit
        if not 1 <= limit <= 500:
            raise BadRequest("limit: must be between 1 and 500")
        self.ok(facts.candidates(scope, limit))


class DreamsHandler(MemoryHandler):
    answers = {"GET": one(MemoryDiaryView)}

    def get(self, agentId: int) -> None:
        """The DREAMS.md consolidation diary of this memory (`content` is empty before the first dream)."""
        _, scope = self.scope(agentId)
        self.ok({"path": scope.path(store.DIARY), "content": store.read(self.config, scope, store.DIARY)})


class FocusedHandler(MemoryHandler):
    answers = {"POST": one(MemoryDreamReportView)}
    body_models = {"POST": FocusedRequest}

    async def post(self, agentId: int) -> None:
        """Dream now on one topic: only facts matching it may change; returns the report."""
        req = self.body(FocusedRequest)
        agent, scope = self.scope(agentId)
        self.ok(await self.dreamer.dream(scope, agent, self.require_caller(), "FOCUSED", "manual", req.topic.strip()))


class StatusHandler(MemoryHandler):
    answers = {"GET": one(MemoryDreamStatusView)}

    def get(self, agentId: int) -> None:
        """Dreaming configuration, this memory's stats, last and next run."""
        _, scope = self.scope(agentId)
        self.ok(schedule.status(self.platform.runtime(DREAMER), scope))


class EmergenceHandler(MemoryHandler):
    answers = {"POST": one(MemoryDreamReportView)}

    async def post(self, agentId: int) -> None:
        """Consolidate now, as the nightly dream does (NIGHTLY mode); returns the report."""
        agent, scope = self.scope(agentId)
        self.ok(await self.dreamer.dream(scope, agent, self.require_caller(), "NIGHTLY", "manual"))


class FactsHandler(MemoryHandler):
    answers = {"GET": list_of(MemoryFactView)}
    query_params = {
        "GET": [
            END_USER,
            {
                "name": "status",
                "in": "query",
                "schema": {"type": "string", "enum": ["active", "forgotten", "all"]},  # facts.list_facts checks the same
                "description": "active (default), forgotten or all",
            },
            {"name": "keyword", "in": "query", "schema": {"type": "string"}},
        ]
    }

    def get(self, agentId: int) -> None:
        """The caller's remembered facts of this agent, newest first."""
        _, scope = self.scope(agentId)
        status = self.get_query_argument("status", None, strip=False)  # as sent: " active" is none of the document's enum
        self.ok(facts.list_facts(scope, status, self.get_query_argument("keyword", None)))


class ContradictionsHandler(MemoryHandler):
    answers = {"GET": list_of(MemoryContradictionView)}

    def get(self, agentId: int) -> None:
        """Open contradictions: two active facts with the same key and different statements."""
        _, scope = self.scope(agentId)
        self.ok(facts.contradictions(scope))


class ResolveHandler(MemoryHandler):
    answers = {"POST": one(MemoryContradictionView)}
    body_models = {"POST": ResolveRequest}

    async def post(self, agentId: int, contradictionId: int) -> None:
        """Resolve with KEEP_A, KEEP_B, MERGE (into fact A) or IGNORE (both stay)."""
        req = self.body(ResolveRequest)
        agent, scope = self.scope(agentId)
        self.ok(
            await facts.resolve(
                self.platform.runtime(LLM), self.config, scope, self.require_caller(), agent, contradictionId, req.resolution, req.statement
            )
        )


class FeedbackHandler(MemoryHandler):
    answers = {"POST": one(MemoryFactView)}
    body_models = {"POST": FeedbackRequest}

    def post(self, agentId: int, factId: int) -> None:
        """Vote HELPFUL or UNHELPFUL on a fact (it feeds the recall score)."""
        req = self.body(FeedbackRequest)
        _, scope = self.scope(agentId)
        self.ok(facts.feedback(scope, self.require_caller(), factId, req.value))


class ForgetHandler(MemoryHandler):
    answers = {"POST": one(MemoryFactView)}

    def post(self, agentId: int, factId: int) -> None:
        """Forget a fact (kept as `forgotten`) and rebuild MEMORY.md from the active facts."""
        _, scope = self.scope(agentId)
        self.ok(facts.forget(self.config, scope, self.require_caller(), factId))


class FactEditHandler(MemoryHandler):
    answers = {"POST": one(MemoryFactView)}
    body_models = {"POST": FactEditRequest}

    def post(self, agentId: int, factId: int) -> None:
        """Rewrite an active fact (`{statement}`; marked user-edited) and rebuild MEMORY.md."""
        req = self.body(FactEditRequest)
        _, scope = self.scope(agentId)
        self.ok(facts.edit(self.config, scope, self.require_caller(), factId, req.statement))


class MemoryFilesHandler(MemoryHandler):
    answers = {"GET": list_of(MemoryFileInfoView)}

    async def get(self, agentId: int) -> None:
        """The caller's memory files of this agent (MEMORY.md, daily notes, DREAMS.md), private to them."""
        _, scope = self.scope(agentId)
        self.ok(await run_blocking(store.list_files, self.config, scope))


# A memory file's path, relative to the scope's folder: Markdown, up to 32 names of at most 63 characters (so no name
# passes 255 bytes, nor the path 1024), no backslash, colon or control character (files.split_rel, store.write_file).
# The handler checks it too, so the document and the server say the same.
MEMORY_PATH = re.compile(r"^(\./)?([^/:\\\x00-\x1f\x7f]{1,63}/){0,31}[^/:\\\x00-\x1f\x7f]{0,60}\.md$")


def _check_path(path: str) -> None:
    if len(path) > 256 or not MEMORY_PATH.fullmatch(path):
        raise BadRequest("path: a Markdown file (.md) relative to the memory folder: up to 32 names of at most 63 characters")


class MemoryFileHandler(MemoryHandler):
    access = {"GET": "viewer", "PUT": "member"}
    answers = {"GET": one(MemoryFileView), "PUT": one(MemoryFileWrittenView)}
    body_models = {"PUT": FileText}
    query_params = {"GET": [END_USER], "PUT": [END_USER]}
    path_schemas = {"path": {"type": "string", "maxLength": 256, "pattern": MEMORY_PATH.pattern}}

    async def get(self, agentId: int, path: str) -> None:
        """One memory file of the caller as `{path, content, editable}`."""
        _check_path(path)
        _, scope = self.scope(agentId)
        self.ok(await run_blocking(store.read_file, self.config, scope, path))

    async def put(self, agentId: int, path: str) -> None:
        """Replace a daily note or DREAMS.md (`{content}`); MEMORY.md follows the facts and is refused."""
        _check_path(path)
        req = self.body(FileText)
        _, scope = self.scope(agentId)
        self.ok(await run_blocking(store.write_file, self.config, scope, path, req.content))


class SummarizeHandler(MemoryHandler):
    answers = {"POST": one(MemorySummaryView)}
    query_params = {}

    async def post(self, agentId: int, conversationId: str) -> None:
        """Extract durable facts from the caller's conversation (its endUserId picks the memory)."""
        caller = self.require_caller()
        agent = agents.get_agent(caller, agentId)
        self.ok(await facts.summarize(self.platform.runtime(LLM), self.config, caller, agent, conversationId))


ROUTES = gated(
    "dreaming",
    [
        route(f"{BASE}/dream/events", DreamEventsHandler),
        route(f"{BASE}/dream/morning-card", MorningCardHandler),
        route(f"{BASE}/dream/morning-card/seen", MorningCardSeenHandler),
        route(f"{BASE}/dream/reports", ReportsHandler),
        route(f"{BASE}/dream/reports/{{reportId}}", ReportHandler),
        route(f"{BASE}/dream/reports/{{reportId}}/entries/{{key}}/confirm", EntryConfirmHandler),
        route(f"{BASE}/dream/reports/{{reportId}}/entries/{{key}}/edit", EntryEditHandler),
        route(f"{BASE}/dreaming/candidates", CandidatesHandler),
        route(f"{BASE}/dreaming/dreams", DreamsHandler),
        route(f"{BASE}/dreaming/focused", FocusedHandler),
        route(f"{BASE}/dreaming/status", StatusHandler),
    ],
) + [
    route(f"{BASE}/emergence", EmergenceHandler),
    route(f"{BASE}/facts", FactsHandler),
    route(f"{BASE}/facts/contradictions", ContradictionsHandler),
    route(f"{BASE}/facts/contradictions/{{contradictionId}}/resolve", ResolveHandler),
    route(f"{BASE}/facts/{{factId}}/feedback", FeedbackHandler),
    route(f"{BASE}/facts/{{factId}}/forget", ForgetHandler),
    route(f"{BASE}/facts/{{factId}}/edit", FactEditHandler),
    route(f"{BASE}/files", MemoryFilesHandler),
    route(f"{BASE}/files/**", MemoryFileHandler),
    route(f"{BASE}/summarize/{{conversationId:str}}", SummarizeHandler),
]

FLAGS = [Flag("dreaming", True, "Memory consolidation (nightly dreams and the dreaming routes)")]
