"""Provider-neutral request, response and stream-event types for LLM clients."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from platform_server.json_types import JsonObject

THINKING_LEVELS = ("off", "low", "medium", "high", "max")


@dataclass(frozen=True)
class Timeouts:
    """A client's time limits: the whole call, the wait for the first byte, the wait between stream chunks."""

    total_s: float = 120
    first_byte_s: float = 60
    idle_s: float = 60


class LlmError(Exception):
    """A provider call failed; the message is for the log and admins (it may name the provider's URL and quote
    its answer), `user_message` is what a chat user may read."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = True,
        timeout: bool = False,
        public: str | None = None,
        retry_after_s: float | None = None,
        connection: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.timeout = timeout  # a time limit ran out (the provider hung or stalled)
        self.public = public
        self.retry_after_s = retry_after_s  # the provider's Retry-After, in seconds from now
        self.connection = connection  # the connection failed or dropped: nothing of the answer was produced

    @property
    def user_message(self) -> str:
        """The failure in words for the user: never the provider's URL, host or upstream body."""
        if self.public:
            return self.public
        if self.timeout:
            return "The model did not answer in time."
        if self.status == 429:
            return "The model provider is busy (rate limited); try again in a moment."
        if self.status in (401, 403):
            return "The model provider refused the platform's credentials."
        if self.status in (400, 413, 422):
            return "The model provider rejected the request."
        return "The model provider failed to answer."


@dataclass
class ToolCall:
    """A complete tool call requested by the model; arguments is JSON text."""

    id: str
    name: str
    arguments: str


@dataclass
class ChatMessage:
    """One conversation message; list content holds text/image parts."""

    role: str
    content: str | list[JsonObject] | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    def text(self) -> str:
        """Return the message's text, joining text parts of list content."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")


@dataclass
class ToolSpec:
    """A tool offered to the model, with a JSON-schema parameters object."""

    name: str
    description: str
    parameters: JsonObject


@dataclass
class ChatRequest:
    """A chat completion request in provider-neutral form."""

    model: str
    messages: list[ChatMessage]
    tools: list[ToolSpec] = field(default_factory=list)
    thinking_level: str | None = None  # off/low/medium/high/max
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass
class TextDelta:
    """A piece of answer text."""

    text: str


@dataclass
class ReasoningDelta:
    """A piece of reasoning/thinking text."""

    text: str


@dataclass
class ToolCallDelta:
    """An incremental piece of a tool call, keyed by its index."""

    index: int
    id: str | None
    name: str | None
    arguments_delta: str


@dataclass
class Usage:
    """Token counts of the call."""

    prompt_tokens: int
    completion_tokens: int


@dataclass
class Finish:
    """The last event of a stream, with the fully assembled tool calls."""

    reason: str
    tool_calls: list[ToolCall] = field(default_factory=list)


StreamEvent = Union[TextDelta, ReasoningDelta, ToolCallDelta, Usage, Finish]


@dataclass
class ChatResult:
    """The outcome of a whole (non-streamed or consumed) chat call."""

    content: str
    reasoning: str
    tool_calls: list[ToolCall]
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


@dataclass
class ModelInfo:
    """A model a provider offers."""

    id: str
    model_type: str = "chat"
    modalities: str = "text"
    max_input_tokens: int | None = None
    capabilities: tuple[str, ...] | None = None  # what the provider says the model can do (Ollama: tools, vision, ...)


@dataclass(frozen=True)
class ProviderSettings:
    """A provider's own request settings (Ollama's keep_alive and num_ctx); None leaves the default."""

    keep_alive: str | int | None = None
    num_ctx: int | None = None
