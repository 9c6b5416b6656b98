"""The react loop of a turn: the model answers or calls tools, the tools run, until an answer or maxIterations.

Plan-execute runs its steps through the same loop; approvals store their tool results through it.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING

from platform_server.config import Config
from platform_server.features.chat import approvals, context
from platform_server.features.chat.store import Answer, TurnStore, mark_cited, new_answer
from platform_server.features.chat.turns import Turn
from platform_server.features.conversations.models import Conversation
from platform_server.features.models.runtime import LlmRouter, ModelTarget, Routed
from platform_server.features.tools.registry import ToolRegistry
from platform_server.integrations.llm import (
    ChatMessage,
    ChatRequest,
    Finish,
    LlmError,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from platform_server.json_types import JsonObject

if TYPE_CHECKING:
    from platform_server.features.chat.turn_setup import TurnSetup

PERSIST_EVERY_S = 0.5


@dataclass
class Totals:
    """Tokens and the model that answered, summed over a turn's model calls (the `done` event's figures)."""

    prompt: int = 0
    completion: int = 0
    model: str | None = None
    provider: str | None = None


def timing_of(turn_started: float, first_token: float, ended: float, completion_tokens: int) -> JsonObject:
    """An answer's speed as the user felt it: from the turn's start (the message sent) to the model's first
    token, and its completion tokens over the time it spent writing them (None when too short to tell)."""
    writing_s = ended - first_token
    rate = round(completion_tokens / writing_s, 1) if completion_tokens and writing_s >= 0.05 else None
    return {"timeToFirstTokenMs": max(0, round((first_token - turn_started) * 1000)), "tokensPerSecond": rate}


class ReactLoop:
    """Model <-> tools for one answer; holds what a model call and a tool call need (one per chat service)."""

    def __init__(self, config: Config, llm: LlmRouter, tools: ToolRegistry, store: TurnStore) -> None:
        self.config = config
        self.llm = llm
        self.tools = tools
        self.store = store

    async def react(
        self,
        turn: Turn,
        conv: Conversation,
        totals: Totals,
        setup: TurnSetup,
        extra: list[ChatMessage] | None = None,
        use_tools: bool = True,
        final_with_turn_end: bool = False,
    ) -> Answer:
        """Model <-> tools until an answer or maxIterations; returns the final assistant message
        (stored, or with `final_with_turn_end` left for the turn's end to store in its one commit)."""
        answer = new_answer(conv)
        turn.answer = answer
        reported: JsonObject | None = None
        for _ in range(setup.max_iterations):
            self.checkpoint(turn)
            built = await context.build(self.llm, self.config, self.store, turn.usage, conv, setup, extra, use_tools)  # within the model's window
            if built.report is not None and built.report != reported:
                reported = built.report
                turn.publish("context", built.report)  # what was kept, summarised or cut
            chat_req = ChatRequest(model="", messages=built.messages, tools=built.tools, thinking_level=setup.thinking_level)
            turn.set_phase("thinking")  # the model has the request; "writing" at its first token
            finish = await self.stream_model(turn, setup.targets, chat_req, answer, totals)
            if not finish.tool_calls:
                answer.cut = finish.reason == "length"  # cut by the token limit: the console offers Continue
                answer.citations = mark_cited(setup.citations, answer.content)  # GET messages returns them
                if final_with_turn_end:
                    answer.unsaved = "completed"
                else:
                    self.store.save_answer(answer, "completed")
                return answer
            answer.tool_calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in finish.tool_calls]
            self.store.save_answer(answer, "completed")
            for call in finish.tool_calls:
                self.checkpoint(turn)
                await approvals.run_call(self, turn, conv, call, setup, answer)
            answer = new_answer(conv)
            turn.answer = answer
        note = f"Stopped after reaching the maximum of {setup.max_iterations} iterations."
        answer.content = note
        turn.publish("content_delta", {"delta": note})
        self.store.save_answer(answer, "completed")
        return answer

    @staticmethod
    def checkpoint(turn: Turn) -> None:
        """A friendly stop takes effect here (between events, tool calls and iterations)."""
        if turn.stop_requested:
            raise asyncio.CancelledError()

    async def stream_model(self, turn: Turn, targets: list[ModelTarget], chat_req: ChatRequest, answer: Answer, totals: Totals) -> Finish:
        """The turn's own model call: its text and reasoning streamed into the turn, kept every PERSIST_EVERY_S,
        its usage counted on the turn (stored with the turn's end)."""
        finish: Finish | None = None
        loop = asyncio.get_running_loop()
        first_token_at: float | None = None  # wall clock, like the turn's start
        completion = 0
        async with aclosing(self.llm.stream_chat(targets, chat_req, turn.usage)) as stream:
            async for event in stream:
                if isinstance(event, (TextDelta, ReasoningDelta)) and first_token_at is None:
                    first_token_at = time.time()
                if isinstance(event, TextDelta):
                    turn.set_phase("writing")
                    answer.content += event.text
                    turn.publish("content_delta", {"delta": event.text})
                elif isinstance(event, ReasoningDelta):
                    answer.reasoning += event.text
                    turn.publish("thinking_delta", {"delta": event.text})
                elif isinstance(event, Usage):
                    answer.prompt_tokens += event.prompt_tokens
                    answer.completion_tokens += event.completion_tokens
                    completion += event.completion_tokens
                    totals.prompt += event.prompt_tokens
                    totals.completion += event.completion_tokens
                elif isinstance(event, Finish):
                    finish = event
                elif isinstance(event, Routed):
                    answer.runtime_model = totals.model = event.target.model_name
                    answer.runtime_provider = totals.provider = event.target.provider_id
                elif isinstance(event, ToolCallDelta):
                    continue
                self.checkpoint(turn)
                if loop.time() - answer.persisted_at > PERSIST_EVERY_S:
                    answer.persisted_at = loop.time()
                    self.store.save_partial(answer)
        if finish is None:
            raise LlmError("The model stream ended without a finish")
        if first_token_at is not None:
            answer.timing = timing_of(turn.started_at, first_token_at, time.time(), completion)
        return finish

    def store_tool_result(self, turn: Turn, conv: Conversation, call: ToolCall, answer: Answer, success: bool, result: str) -> None:
        """Store a tool result, note it on the assistant message, and stream it."""
        self.store.add_tool_result(conv, call.id, call.name, call.arguments, success, result)
        for entry in answer.tool_calls:
            if entry["id"] == call.id:
                entry["result"], entry["success"] = result[:2000], success
        self.store.save_answer(answer, "completed")
        turn.result.tool_calls.append({"id": call.id, "name": call.name, "arguments": call.arguments, "result": result, "success": success})
        turn.publish("tool_call_completed", {"toolCallId": call.id, "toolName": call.name, "result": result, "success": success})
