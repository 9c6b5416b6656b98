"""Request bodies of the chat routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, JsonValue, model_validator

from platform_server.features.plans.service import PlanDetailView
from platform_server.ids import CONVERSATION_ID_PATTERN, LAST_EVENT_ID_PATTERN, NOT_BLANK_PATTERN, NOT_BLANK_RE
from platform_server.serialize import View
from platform_server.web.openapi_events import SseEvents

ThinkingLevel = Literal["off", "low", "medium", "high", "max"]


class ContentPart(BaseModel):
    type: Literal["text", "image"]
    text: str | None = Field(default=None, max_length=200_000)
    url: str | None = None
    contentType: str | None = Field(default=None, max_length=100)


CONTINUE_PROMPT = "Continue your last answer exactly where it stopped, without repeating it."


class ChatStreamRequest(BaseModel):
    agentId: str | None = None
    message: str | None = Field(default=None, max_length=200_000)
    contentParts: list[ContentPart] | None = Field(default=None, max_length=20)
    conversationId: str = Field(default="default", json_schema_extra={"pattern": CONVERSATION_ID_PATTERN})
    reconnect: bool | None = None
    lastEventId: str | None = Field(default=None, pattern=LAST_EVENT_ID_PATTERN)  # service.parse_last_event_id
    thinkingLevel: ThinkingLevel | None = None
    modelProvider: str | None = Field(default=None, max_length=100)
    modelName: str | None = Field(default=None, max_length=200)
    endUserId: str | None = Field(default=None, max_length=128)
    # the last question and its answer become an earlier version; `message` (the same text, or an edit) is asked anew
    regenerate: bool = False
    # with regenerate: the id of an earlier question to ask anew (default: the last one); it and every message
    # after it become an earlier version (a branch kept and pageable), as ChatGPT and Open WebUI do
    regenerateFrom: str | None = Field(default=None, max_length=20)
    # go on with the last answer (a stopped or cut one): a marked continuation prompt, no question of the user's
    continueAnswer: bool = False

    @model_validator(mode="after")
    def _rules(self) -> "ChatStreamRequest":
        if self.message is not None and self.contentParts:
            # the original console sends the text twice (message and a text part): the parts win
            self.message = None
        if self.continueAnswer and not self.reconnect:
            if self.regenerate or self.contentParts:
                raise ValueError("continueAnswer goes alone (no regenerate, no contentParts)")
            self.message = self.message or CONTINUE_PROMPT
        if self.regenerateFrom is not None and not self.regenerate:
            raise ValueError("regenerateFrom goes with regenerate: true")
        if not self.reconnect:
            if self.message is None and not self.contentParts:
                raise ValueError("message or contentParts is required")
            if self.message is not None and not self.message.strip():
                raise ValueError("message must not be blank")
            if not self.agentId:
                raise ValueError("agentId is required")
        if bool(self.modelProvider) != bool(self.modelName):
            raise ValueError("modelProvider and modelName come together")
        return self


class SyncChatRequest(BaseModel):
    """`POST /agents/{id}/chat`: the agent is the path's (a body agentId is ignored)."""

    agentId: str | None = None
    message: str = Field(min_length=1, max_length=200_000)
    conversationId: str = Field(default="default", json_schema_extra={"pattern": CONVERSATION_ID_PATTERN})
    thinkingLevel: ThinkingLevel | None = None
    endUserId: str | None = Field(default=None, max_length=128)


class ChatRequest(SyncChatRequest):
    """`POST /chat`: the body names the agent."""

    agentId: str = Field(json_schema_extra={"pattern": "^[0-9]{1,18}$"})  # required here only


class InterruptRequest(BaseModel):
    @classmethod
    def openapi_schema(cls, schema: dict[str, object]) -> None:
        """At least one of them, as anyOf of required sets: a message with text, or one part or more (web.openapi calls
        this once ContentPart is a component; a null `contentParts` is not a branch's array)."""
        parts = {"type": "array", "minItems": 1, "items": {"$ref": "#/components/schemas/ContentPart"}}
        schema["anyOf"] = [
            {"required": ["message"], "properties": {"message": {"type": "string", "pattern": NOT_BLANK_PATTERN}}},
            {"required": ["contentParts"], "properties": {"contentParts": parts}},
        ]

    message: str | None = Field(default=None, max_length=200_000)
    contentParts: list[ContentPart] | None = Field(default=None, max_length=20)

    @model_validator(mode="after")
    def _one(self) -> "InterruptRequest":
        if (self.message is None or not NOT_BLANK_RE.search(self.message)) and not self.contentParts:  # NOT_BLANK_PATTERN
            raise ValueError("message or contentParts is required")
        return self


class ExecuteRequest(BaseModel):
    task: str = Field(min_length=1, max_length=200_000)
    conversationId: str | None = Field(default=None, max_length=128)


class ChatResultView(View):
    """The synchronous chat's answer (`service.wait_result`)."""

    conversationId: str
    content: str
    assistantMessageId: str | None
    status: str | None = Field(description="completed | stopped | awaiting_approval")
    promptTokens: int
    completionTokens: int
    toolCalls: list[dict[str, object]]
    citations: list[object] = Field(description="the knowledge passages the answer was given")


class ChatStopView(View):
    stopped: bool
    deniedApprovals: int | None = Field(default=None, description="pending tool calls the stop denied; sent when any")


class ChatInterruptView(View):
    """A follow-up queued for the running turn, or (a yes/no while a tool call waits) the approval it resolved."""

    queued: bool
    queueSize: int | None = Field(default=None, description="messages waiting, when queued")
    resolved: Literal["approved", "denied"] | None = Field(default=None, description="the decision, when the message answered an approval")
    reason: str | None = Field(default=None, description="`no_active_stream`, or why an approval was refused")


class ChatUploadView(View):
    """An uploaded attachment; `url` is readable by the uploader only."""

    storedName: str
    url: str
    name: str
    size: int
    contentType: str
    createTime: str


class AgentStateView(View):
    agentId: str
    enabled: bool
    state: Literal["running", "idle"]
    activeTurns: int
    myRunningConversations: list[str] = Field(description="the caller's own conversations with a running turn")


class ExecuteResultView(ChatResultView):
    plan: PlanDetailView | None  # type: ignore[valid-type]  # a view derived from the plan Fields map


class RuntimeSummaryView(View):
    running: int
    stuck: int
    orphan: int
    queued: int
    subagentsActive: int


class RuntimeTurnView(View):
    """One turn as the admin runtime view shows it (`Turn.snapshot` and the live fields)."""

    conversationId: str
    userId: str
    agentId: str
    workspaceId: str
    status: str
    phase: str | None
    running: bool
    startedAt: float = Field(description="epoch seconds")
    secondsSinceLastEvent: float
    events: int
    subscribers: int
    queued: int
    stopRequested: bool
    agentName: str | None
    agentIcon: str | None
    username: str | None
    currentPhase: str | None
    runningToolName: str | None
    waitingReason: str | None
    done: bool
    firstTokenReceived: bool
    subscriberCount: int
    queueLen: int
    ageMs: int
    msSinceLastEvent: int
    stuckReason: str | None
    orphan: bool
    subagentCount: int


class RuntimeSnapshotView(View):
    summary: RuntimeSummaryView
    runs: list[RuntimeTurnView] = Field(description="turns in flight")
    turns: list[RuntimeTurnView] = Field(description="in flight and finished ones still kept for replay")
    subagents: list[JsonValue] = Field(description="always empty: sub-agent runs are listed by /subagents")
    timestamp: int = Field(description="epoch milliseconds")


class RuntimeStopView(View):
    stopRequested: int


class RuntimeRecycleView(View):
    recycled: int
    conversationIds: list[str] | None = Field(default=None, description="the swept conversations (sweep only)")


# ---- the chat turn's SSE events (service.py, react.py, approvals.py, planner.py, sidecar.py; tool progress from
# acp/delegate.py and sub-agent phases from subagents/service.py): POST /chat/stream, GET /agents/{id}/chat/stream
# and the public webchat stream send these. Documentation only (web/openapi_events.py); the streams publish dicts.


class SseChatMeta(View):
    """`meta`, the first frame: the turn's conversation, agent and the stored question."""

    conversationId: str
    agentId: str
    userMessageId: str


class SseChatPhase(View):
    """`phase`: what the turn does now; `toolName` with calling_tool/awaiting_approval, plan fields while a plan
    runs, sub-agent fields while a delegated agent works."""

    phase: str = Field(description="queued | thinking | writing | calling_tool | awaiting_approval | planning | executing | answering | subagent")
    toolName: str | None = None
    planId: str | None = None
    steps: list[str] | None = Field(default=None, description="the plan's steps (executing, once)")
    step: int | None = Field(default=None, description="the index of the plan step being executed")
    subagentId: str | None = None
    agentId: str | None = None
    agentName: str | None = None
    status: str | None = Field(default=None, description="the sub-agent's state")


class SseChatQueuedInput(View):
    """`queued_input_accepted`: a follow-up sent while the turn runs is queued behind it."""

    queuedMessage: str
    queueSize: int


class SseChatMessageStart(View):
    """`message_start`: the answer begins."""

    role: str


class SseChatCitation(View):
    """One knowledge passage (wiki/retrieval.py `_citation`): a page, or a chunk of a raw material."""

    id: int = Field(description="the passage's number, as the answer cites it ([1], [2], ...)")
    kind: str = Field(description="page | chunk")
    kbId: str
    kbName: str
    title: str
    snippet: str
    url: str = Field(description="the console's address of the passage")
    apiPath: str
    pageId: str | None = None
    slug: str | None = None
    rawId: str | None = None
    chunkId: str | None = None


class SseChatCitations(View):
    """`citations`: the knowledge passages the answer is given."""

    citations: list[SseChatCitation]


class SseChatDelta(View):
    """`content_delta` / `thinking_delta`: the next piece of the answer (or of the model's reasoning)."""

    delta: str


class SseChatContextPart(View):
    messages: int
    tokens: int


class SseChatSummarised(View):
    messages: int
    tokens: int
    new: int = Field(description="stored messages compacted by this call")


class SseChatContext(View):
    """`context`: the history did not fit the model's window: what was kept, summarised or cut."""

    window: int
    reserve: int
    counter: str
    tokens: int
    kept: SseChatContextPart
    summarised: SseChatSummarised
    cut: SseChatContextPart
    truncated: SseChatContextPart
    toolsDropped: list[str] = Field(description="tools left out of the request to fit the window")
    systemTruncated: bool


class SseChatToolCallStarted(View):
    """`tool_call_started`: the model called a tool (`arguments` is its JSON text)."""

    toolCallId: str
    toolName: str
    arguments: str


class SseChatToolCallCompleted(View):
    """`tool_call_completed`: the tool's result (or why it was refused)."""

    toolCallId: str
    toolName: str
    result: str
    success: bool


class SseChatApprovalRequested(View):
    """`tool_approval_requested`: the guard asks the owner; the turn pauses (`done` with awaiting_approval)."""

    pendingId: str
    toolName: str
    arguments: str
    reason: str
    maxSeverity: str
    endpoint: str | None = Field(default=None, description="an ACP agent's permission request: the agent's endpoint")


class SseChatApprovalResolved(View):
    """`tool_approval_resolved`: the owner answered a pending call in the chat."""

    pendingId: str
    toolName: str
    decision: str


class SseChatNotice(View):
    """`notice`: something the user should know about the answer (images the model could not see)."""

    kind: str
    count: int
    message: str


class SseChatToolProgress(View):
    """`tool_progress`: a long tool reports as it works (an ACP coding agent's chunks, tool calls, plan)."""

    toolName: str
    endpoint: str
    kind: str = Field(description="started | finished | permission | agent_message_chunk | agent_thought_chunk | tool_call | ...")
    text: str | None = None
    toolCallId: str | None = None
    title: str | None = None
    status: str | None = None
    entries: list[object] | None = None
    decision: str | None = None
    stopReason: str | None = None


class SseChatMessageComplete(View):
    """`message_complete`: the answer is stored (`status` completed, stopped or failed)."""

    status: str
    assistantMessageId: str


class SseChatTiming(View):
    """An answer's speed as the user felt it (react.py `timing_of`)."""

    timeToFirstTokenMs: int
    tokensPerSecond: float | None = Field(description="null when the answer was too short to tell")


class SseChatDone(View):
    """`done`, the last frame: the turn's end. A re-attach with nothing to replay sends only the first two fields."""

    conversationId: str
    status: str = Field(description="completed | failed | stopped | awaiting_approval")
    assistantMessageId: str | None = None
    runtimeModel: str | None = None
    runtimeProvider: str | None = None
    promptTokens: int | None = None
    completionTokens: int | None = None
    messageCount: int | None = None
    timing: SseChatTiming | None = Field(default=None, description="the final answer's timing")
    finishReason: str | None = Field(default=None, description="`length`: cut by the token limit (Continue goes on); else null")


CHAT_EVENTS = SseEvents(
    "SseChatTurn",
    {
        "meta": SseChatMeta,
        "phase": SseChatPhase,
        "queued_input_accepted": SseChatQueuedInput,
        "message_start": SseChatMessageStart,
        "citations": SseChatCitations,
        "context": SseChatContext,
        "content_delta": SseChatDelta,
        "thinking_delta": SseChatDelta,
        "tool_call_started": SseChatToolCallStarted,
        "tool_call_completed": SseChatToolCallCompleted,
        "tool_approval_requested": SseChatApprovalRequested,
        "tool_approval_resolved": SseChatApprovalResolved,
        "tool_progress": SseChatToolProgress,
        "notice": SseChatNotice,
        "message_complete": SseChatMessageComplete,
        "done": SseChatDone,
    },
)
