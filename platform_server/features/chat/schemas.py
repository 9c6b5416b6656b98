"""Request bodies of the chat routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, JsonValue, model_validator

from platform_server.features.plans.service import PlanDetailView
from platform_server.serialize import View

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
    conversationId: str = "default"
    reconnect: bool | None = None
    lastEventId: str | None = None
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
    agentId: str | None = None
    message: str = Field(min_length=1, max_length=200_000)
    conversationId: str = "default"
    thinkingLevel: ThinkingLevel | None = None
    endUserId: str | None = Field(default=None, max_length=128)


class InterruptRequest(BaseModel):
    message: str | None = Field(default=None, max_length=200_000)
    contentParts: list[ContentPart] | None = Field(default=None, max_length=20)

    @model_validator(mode="after")
    def _one(self) -> "InterruptRequest":
        if (self.message is None or not self.message.strip()) and not self.contentParts:
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
