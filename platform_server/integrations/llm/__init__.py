"""Outbound LLM provider clients (OpenAI-compatible, Anthropic, embedded local model)."""

from platform_server.integrations.llm.base import LlmClient, make_client
from platform_server.integrations.llm.types import (
    ChatMessage,
    ChatRequest,
    ChatResult,
    Finish,
    LlmError,
    ModelInfo,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
)

__all__ = [
    "ChatMessage",
    "ChatRequest",
    "ChatResult",
    "Finish",
    "LlmClient",
    "LlmError",
    "ModelInfo",
    "ReasoningDelta",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolSpec",
    "Usage",
    "make_client",
]
