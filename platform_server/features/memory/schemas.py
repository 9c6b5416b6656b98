"""Request bodies and answers of the memory routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from platform_server.features.memory import store
from platform_server.ids import NOT_BLANK_PATTERN
from platform_server.serialize import View
from platform_server.web.bodies import explained
from platform_server.web.openapi_events import SseEvents

# dreaming.edit_entry and facts.edit keep the text without its spaces: a blank one is refused (the document's rule)
NOT_BLANK = explained(NOT_BLANK_PATTERN, "must not be blank")


class FeedbackRequest(BaseModel):
    value: Literal["HELPFUL", "UNHELPFUL"]


class ResolveRequest(BaseModel):
    resolution: Literal["KEEP_A", "KEEP_B", "MERGE", "IGNORE"]
    statement: str | None = Field(
        default=None, min_length=1, max_length=1000, description="MERGE only: the merged statement (else the model writes it)"
    )


class FocusedRequest(BaseModel):
    topic: str = Field(min_length=1, max_length=200)


class EditRequest(BaseModel):
    after: str = Field(min_length=1, max_length=1000, pattern=NOT_BLANK)


class FactEditRequest(BaseModel):
    statement: str = Field(min_length=1, max_length=1000, pattern=NOT_BLANK)


class FileText(BaseModel):
    content: str = Field(max_length=store.NOTE_CAP)


# ---- answers (web/openapi_answers.py): facts.py, dreaming.py, schedule.status and store's file dicts ---------------


class MemoryFactView(View):
    """A remembered fact of the agent (and end user, when scoped to one)."""

    id: str
    agentId: str
    endUserId: str | None
    key: str
    statement: str
    confidence: float
    status: str = Field(description="active or forgotten")
    source: str
    sourceConversationId: str | None
    mentions: int
    helpfulCount: int
    unhelpfulCount: int
    userEdited: bool
    createTime: str | None
    updateTime: str | None
    forgottenTime: str | None


class MemoryExtractedFactView(MemoryFactView):
    outcome: str = Field(description="what the summary did with it (added, updated, ...)")


class MemoryContradictionView(View):
    id: str
    agentId: str
    endUserId: str | None
    status: str
    resolution: str | None
    factA: MemoryFactView
    factB: MemoryFactView
    createTime: str | None
    resolveTime: str | None


class MemoryCandidateView(View):
    """A fact ranked for the next dream, with the parts of its score."""

    fact: MemoryFactView
    key: str
    statement: str
    score: float
    recency: float
    frequency: float
    helpfulness: float
    confidence: float


class MemoryDreamEntryView(View):
    """One change a dream made to memory (add, update or remove), to confirm or edit."""

    key: str
    action: str
    before: str | None
    after: str | None
    confirmed: bool
    confirmTime: str | None
    userEdited: bool
    editTime: str | None


class MemoryEditedEntryView(MemoryDreamEntryView):
    factId: str
    memoryFile: str


class MemoryDreamCountsView(View):
    add: int
    update: int
    remove: int


class MemorySkippedEntryView(View):
    key: str
    action: str
    reason: str


class MemoryDreamReportView(View):
    id: str
    agentId: str
    endUserId: str | None
    mode: str = Field(description="NIGHTLY or FOCUSED")
    trigger: str
    topic: str | None
    status: str
    summary: str
    entries: list[MemoryDreamEntryView]
    counts: MemoryDreamCountsView
    skipped: list[MemorySkippedEntryView]
    error: str | None
    model: str | None
    seen: bool
    createTime: str | None
    finishTime: str | None


class MemoryMorningCardView(View):
    """The latest finished dream, summed up for the morning."""

    reportId: str
    agentId: str
    endUserId: str | None
    mode: str
    topic: str | None
    summary: str
    counts: MemoryDreamCountsView
    highlights: list[MemoryDreamEntryView]
    createTime: str | None
    finishTime: str | None
    seen: bool


class MemoryDiaryView(View):
    path: str
    content: str


class MemoryStatsView(View):
    activeFacts: int
    forgottenFacts: int
    userEditedFacts: int
    openContradictions: int
    reports: int
    dailyNotes: int


class MemoryDreamStatusView(View):
    enabled: bool = Field(description="the setting and the feature flag both on")
    configEnabled: bool
    featureFlag: bool
    hour: int
    timezone: str
    nextRunTime: str | None
    lastNightlyDate: str | None
    lastRunTime: str | None
    lastRunStatus: str | None
    lastReportId: str | None
    running: bool
    memoryFile: str
    stats: MemoryStatsView


class MemorySummaryView(View):
    conversationId: str
    endUserId: str | None
    model: str
    extracted: int
    facts: list[MemoryExtractedFactView]
    contradictions: list[MemoryContradictionView]
    dailyNote: str


class MemoryFileInfoView(View):
    """A memory file; `filename`, `fileSize` and `updateTime` repeat `path`, `size` and `modifiedTime` under the
    original console's names."""

    path: str
    size: int
    modifiedTime: str | None
    filename: str
    fileSize: int
    updateTime: str | None
    editable: bool


class MemoryFileView(View):
    path: str
    content: str
    editable: bool


class MemoryFileWrittenView(View):
    path: str
    size: int
    editable: bool


# ---- dream progress SSE events (dreaming.py): GET /memory/agents/{agentId}/dream/events. Documentation only
# (web/openapi_events.py); the bus publishes dicts.


class SseDreamRunning(View):
    reportId: str
    agentId: str
    endUserId: str | None


class SseDreamSnapshot(View):
    """`snapshot`, the first frame: the dreams of this memory running now."""

    agentId: str
    running: list[SseDreamRunning]


class SseDreamStarted(View):
    """`dream_started`."""

    reportId: str
    agentId: str
    endUserId: str | None
    mode: str
    trigger: str
    topic: str | None


class SseDreamProgress(View):
    """`dream_progress`: the dream's stage."""

    reportId: str
    agentId: str
    endUserId: str | None
    stage: str = Field(description="gathering | consolidating | writing")


class SseDreamCompleted(View):
    """`dream_completed`: what the dream did to the memory, by action."""

    reportId: str
    agentId: str
    endUserId: str | None
    status: str
    counts: dict[str, int]


class SseDreamError(View):
    """`error`: a dream failed (with its report), or the request was refused (`code`)."""

    message: str
    code: int | None = None
    errorId: str | None = None
    reportId: str | None = None
    agentId: str | None = None
    endUserId: str | None = None


DREAM_EVENTS = SseEvents(
    "SseMemoryDream",
    {
        "snapshot": SseDreamSnapshot,
        "dream_started": SseDreamStarted,
        "dream_progress": SseDreamProgress,
        "dream_completed": SseDreamCompleted,
        "error": SseDreamError,
    },
)
