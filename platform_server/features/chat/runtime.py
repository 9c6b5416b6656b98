"""The chat turn orchestrator: agents, conversations, providers and tools meet here and nowhere else."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from platform_server.db import database, first_where, insert_row, stored_time, utcnow
from platform_server.features.chat import approvals, context, knowledge, sidecar, tool_calls, uploads
from platform_server.features.chat import answers
from platform_server.features.chat.answers import Answer
from platform_server.features.chat.pacing import TurnPacer
from platform_server.features.chat.turns import QueuedInput, Turn, TurnRegistry
from platform_server.features.conversations import service as conversations
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.guard import service as guard
from platform_server.features.skills import service as skills
from platform_server.features.usage import meter
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
from platform_server.web.context import Caller
from platform_server.features.chat.errors import ANSWER_NOT_SAVED, AgentBusy, AnswerNotSaved
from platform_server.web.errors import ApiError, Forbidden
from platform_server import eager
from platform_server.blocking import run_blocking
from platform_server.features.agents import files
from platform_server.features.agents import service as agents
from platform_server.features.chat import planner
from platform_server.features.goals import service as goals
from platform_server.features.memory import store as memory
from platform_server.features.models.errors import LlmFailure, reported
from platform_server.features.models.runtime import Routed
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.models import capabilities
from platform_server.features.skills import lessons

if TYPE_CHECKING:
    from platform_server.app import Platform

log = logging.getLogger(__name__)

PERSIST_EVERY_S = 0.5
MEMORY_CAP = 16_000


@dataclass
class TurnRequest:
    caller: Caller
    agent: Any  # features.agents.models.Agent
    conversation_id: str
    message: str | None
    content_parts: list[dict[str, Any]] | None = None
    thinking_level: str | None = None
    model_provider: str | None = None
    model_name: str | None = None
    end_user_id: str | None = None
    source: str = "web"
    command: str | None = None  # "approved" / "denied": resolve the pending tool call first
    text_commands: bool = False  # the sender may resolve a pending call by sending `/approve` or `/deny`
    held: bool = False  # set when the message arrives while a call waits for someone else's decision


@dataclass
class Totals:
    """Tokens and the model that answered, summed over a turn's model calls (the `done` event's figures)."""

    prompt: int = 0
    completion: int = 0
    model: str | None = None
    provider: str | None = None


@dataclass
class TurnSetup:
    """What a turn resolves once: model targets, tools, limits."""

    targets: list[Any]
    vision: bool
    specs: list[Any]
    tool_ctx: Any
    max_iterations: int
    thinking_level: str | None
    system_prompt: str = ""
    withheld: dict[str, str] = field(default_factory=dict)  # tool name -> why this caller may not use it
    citations: list[dict[str, Any]] = field(default_factory=list)  # the knowledge passages in the system prompt


def text_of(message: str | None, parts: list[dict[str, Any]] | None) -> str:
    if message is not None:
        return message
    return "\n".join(p.get("text", "") for p in parts or [] if p.get("type") == "text")


class ChatRuntime:
    """Starts turns, owns them (platform.services.chat), and runs the react / plan-execute loops."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.config = platform.config
        self.turns = TurnRegistry(platform.config.replay_retention_s)
        self.pacer = TurnPacer()

    # ---- public API ------------------------------------------------------------

    def is_running(self, key: str) -> bool:
        return self.turns.is_running(key)

    def cancel(self, key: str) -> bool:
        return self.turns.cancel(key)

    def wind_down(self, user_id: int, conv: Conversation) -> None:
        """A deleted conversation's turn stops and its pending approvals are denied."""
        self.cancel(conv.key)
        guard.deny_all_pending(user_id, conv.conversation_id, user_id, reason="conversation deleted")

    def start_turn(self, req: TurnRequest) -> Turn:
        """Store the user message, mark the conversation running and start the turn task."""
        caller, agent = req.caller, req.agent
        key = conversations.key_for(caller.user_id, req.conversation_id)
        if self.turns.is_running(key):
            raise AgentBusy()
        existing = conversations.check_owner(caller.user_id, req.conversation_id)
        text = text_of(req.message, req.content_parts)
        parts = uploads.check_parts(caller.user_id, req.content_parts) if req.content_parts else None
        now = utcnow()
        waiting = approvals.has_pending(caller.user_id, req.conversation_id)  # kept reads are used outside a transaction only
        with database.atomic():  # no await since check_owner: `existing` and `waiting` are still current
            conv = existing
            if conv is not None and (conv.end_user_id or None) != (req.end_user_id or None):
                raise Forbidden("This conversation belongs to another end user")
            if conv is None:
                conv = Conversation(
                    key=key,
                    conversation_id=req.conversation_id,
                    user_id=caller.user_id,
                    workspace_id=agent.workspace_id,
                    agent_id=agent.id,
                    title=text.strip()[:50] or "New chat",
                    source=req.source,
                    end_user_id=req.end_user_id,
                )
                insert_row(Conversation, **conv.__data__)  # defaults were set on the instance: stored as it holds them
            if req.model_provider and req.model_name:
                conv.model_provider, conv.model_name = req.model_provider, req.model_name
            conv.agent_id = agent.id
            conv.workspace_id = agent.workspace_id
            command = req.command or (approvals.command_of(text) if req.text_commands and not parts else None)
            if command:
                req.command = command
            elif waiting and not req.text_commands:
                req.held = True  # only the owner (console/API) or a channel approver decides; the call waits
            elif waiting:
                approvals.supersede(caller.user_id, req.conversation_id)
            metadata = {"command": command} if command else {"heldForApproval": True} if req.held else None
            user_message_id: int = insert_row(
                Message, conversation=conv.id, role="user", content=text, content_parts=parts, metadata=metadata, create_time=now
            )
            stamp, preview = stored_time(now), answers.preview_of(text) or None
            database.execute_sql(
                answers.START_SQL, (stamp, stamp, preview, conv.agent_id, conv.workspace_id, conv.model_provider, conv.model_name, conv.id)
            )
            conv.message_count += 1
            conv.stream_status = "running"
        turn = Turn(
            key=key,
            conversation_db_id=conv.id,
            conversation_id=req.conversation_id,
            user_id=caller.user_id,
            workspace_id=agent.workspace_id,
            agent_id=agent.id,
            last_event_id=conv.last_event_id,
        )
        self.turns.add(turn)
        self._publish_meta(turn, user_message_id)  # before any other work: the stream's first frame goes out at once
        # started at once, in arrival order: its model request leaves now, not after every request queued behind this one
        turn.task = eager.start_task(self._run(turn, req, conv, user_message_id))
        return turn

    @staticmethod
    def _publish_meta(turn: Turn, user_message_id: int) -> None:
        turn.publish("meta", {"conversationId": turn.conversation_id, "agentId": str(turn.agent_id), "userMessageId": str(user_message_id)})

    def queue_input(self, key: str, message: str | None, parts: list[dict[str, Any]] | None, user_id: int) -> int | None:
        """Queue a follow-up for the running turn; None when nothing runs."""
        turn = self.turns.get(key)
        if turn is None or not turn.running:
            return None
        checked = uploads.check_parts(user_id, parts) if parts else None
        turn.queue.append(QueuedInput(message, checked))
        turn.publish("queued_input_accepted", {"queuedMessage": text_of(message, checked), "queueSize": len(turn.queue)})
        return len(turn.queue)

    def resolve_live_approval(self, key: str, message: str | None, caller: Caller) -> dict[str, str] | None:
        """`/approve` or `/deny` for a call a running tool waits on (a delegated agent's permission
        request): resolve the oldest pending one now; returns `{resolved[, reason]}`, or None when not
        applicable. An approver without the role the call needs refuses it instead (with the reason)."""
        turn = self.turns.get(key)
        command = approvals.command_of(message or "")
        if turn is None or not turn.running or command is None:
            return None
        outcome = approvals.resolve_as(self.platform.services.tools, caller.user_id, caller.workspace_role, turn.conversation_id, command)
        return outcome.answer() if outcome is not None else None

    def find_turns(self, conversation_id: str) -> list[Turn]:
        """Turns whose public id (or storage key) is conversation_id (admin routes, any user)."""
        return [t for t in self.turns.all() if t.conversation_id == conversation_id or t.key == conversation_id]

    def request_stop(self, turn: Turn) -> bool:
        """Friendly stop: the turn winds down at its next checkpoint."""
        if not turn.running:
            return False
        turn.stop_requested = True
        return True

    async def recycle(self, turn: Turn, grace_s: float = 2.0) -> bool:
        """Force: cancel the task; if it ignores that, drop the run state and free the conversation."""
        if not turn.running:
            self.turns.drop(turn.key)
            return False
        self.turns.cancel(turn.key)
        if turn.task is not None:
            await asyncio.wait([turn.task], timeout=grace_s)
        if turn.running:
            Conversation.update(stream_status="idle").where(Conversation.id == turn.conversation_db_id).execute()
            turn.publish("done", {"conversationId": turn.conversation_id, "status": "stopped"})
            turn.finish("stopped")
        self.turns.drop(turn.key)
        return True

    async def sweep(self) -> list[str]:
        """Recycle every turn with no event for longer than stuck_turn_s."""
        stuck = self.turns.stuck(self.config.stuck_turn_s)
        for turn in stuck:
            await self.recycle(turn)
        return [t.conversation_id for t in stuck]

    async def drain(self, timeout_s: float) -> int:
        """Wait until no turn runs or timeout_s has passed; returns how many still run."""
        tasks = [t.task for t in self.turns.running() if t.task]
        if tasks and timeout_s > 0:
            await asyncio.wait(tasks, timeout=timeout_s)
        return len(self.turns.running())

    async def stop_all(self) -> None:
        tasks = [t.task for t in self.turns.running() if t.task]
        for t in self.turns.running():
            self.turns.cancel(t.key)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---- persistence -------------------------------------------------------------

    # ---- the turn ------------------------------------------------------------------

    async def _run(self, turn: Turn, req: TurnRequest, conv: Conversation, user_message_id: int) -> None:
        meter.enter(meter.source_of_conversation(req.source), turn.workspace_id, turn.user_id, turn.agent_id, turn.conversation_id)
        meter.defer()  # the turn's usage is stored with its end (`_finish`)
        status, answer = "completed", None
        totals = Totals()
        try:
            pending_input: tuple[int, TurnRequest] | None = (user_message_id, req)
            while pending_input is not None:
                user_id, current = pending_input
                if current is not req:  # a queued input (the first one's meta went out when the turn began)
                    self._publish_meta(turn, user_id)
                answer = await self._answer(turn, current, conv, totals, conv_current=current is req)
                pending_input = None
                if turn.queue:  # the final answer of this input is stored now; the turn goes on
                    if answer.unsaved:
                        answers.save_answer(answer, answer.unsaved)
                    self._announce(turn, answer, "completed")
                    queued = turn.queue.pop(0)
                    with database.atomic():
                        row_id = answers.add_message(conv, "user", text_of(queued.message, queued.content_parts), content_parts=queued.content_parts)
                    pending_input = (
                        row_id,
                        TurnRequest(
                            caller=req.caller,
                            agent=req.agent,
                            conversation_id=req.conversation_id,
                            message=queued.message,
                            content_parts=queued.content_parts,
                            thinking_level=req.thinking_level,
                            end_user_id=req.end_user_id,
                            source=req.source,
                        ),
                    )
        except approvals.AwaitingApproval:
            status = "awaiting_approval"
            answer = self._current_answer(turn) or answer
            if answer is not None:
                answer.unsaved = "completed"  # stored with the turn's end (retried there)
                self._announce(turn, answer, status)
            self._keep_queued(turn, conv)
        except asyncio.CancelledError:
            status = "stopped"
            answer = self._current_answer(turn) or answer
            if answer is not None:
                answer.unsaved = "stopped"
                self._announce(turn, answer, "stopped")
        except Exception as exc:  # noqa: BLE001 - every failure ends the turn with an error frame
            status = "failed"
            frame = self._error_frame(exc, conv.id)
            fault = self.platform.storage.note_fault(exc)
            if fault is not None:
                frame = AnswerNotSaved(code=503 if fault == "busy" else 507).stream_frame()
            answer = self._current_answer(turn) or answer
            if answer is not None:
                answer.unsaved = "failed"
            turn.result.error = str(frame["message"])
            turn.publish("error", frame)
            if answer is not None:
                self._announce(turn, answer, "failed")
        finally:
            if self._learns(req):  # lessons are read from the stored turn, before its end is announced
                if answer is not None and answer.unsaved:
                    with contextlib.suppress(Exception):  # kept `unsaved`: stored (and retried) with the turn's end
                        answers.save_answer(answer, answer.unsaved)
                await self._learn(req, conv)
            await self._finish(turn, conv, status, answer, totals)

    @staticmethod
    def _error_frame(exc: Exception, conversation_id: int) -> dict[str, str | int]:
        """The `error` frame of a failed turn (SSE, talk socket, webchat, synchronous chat all relay it), in the
        shape of a request's own error frame: a provider's URL and answer body go to the log under an error id,
        never to the user."""
        if isinstance(exc, ApiError):
            return exc.stream_frame()
        if isinstance(exc, LlmError):
            message, error_id = reported(exc, f"chat turn of conversation {conversation_id}")
            return LlmFailure(message).stream_frame(error_id)
        error_id = secrets.token_hex(6)
        log.exception("chat turn of conversation %s failed [error %s]", conversation_id, error_id)
        return ApiError(f"Internal error (error {error_id})").stream_frame(error_id)

    @staticmethod
    def _learns(req: TurnRequest) -> bool:
        """Whether the turn's agent has skills to learn about (no hop to a thread for nothing)."""
        return not req.agent.skills_disabled and bool(agents.bound_skills(req.agent.id))

    async def _learn(self, req: TurnRequest, conv: Conversation) -> None:
        """Skills the turn used: count the use, record lessons of failures and corrections."""
        try:
            await run_blocking(lessons.after_turn, self.config, req.agent, conv.id)
        except Exception:  # noqa: BLE001 - learning must never break the turn
            log.exception("recording skill lessons failed")

    def _keep_queued(self, turn: Turn, conv: Conversation) -> None:
        """Inputs queued behind a paused turn are stored (accepted messages are never lost)."""
        with database.atomic():
            while turn.queue:
                queued = turn.queue.pop(0)
                answers.add_message(
                    conv,
                    "user",
                    text_of(queued.message, queued.content_parts),
                    content_parts=queued.content_parts,
                    metadata={"queuedWhilePaused": True},
                )

    def _current_answer(self, turn: Turn) -> Answer | None:
        answer: Answer | None = turn.answer
        return answer

    @staticmethod
    def _announce(turn: Turn, answer: Answer, status: str) -> None:
        turn.publish("message_complete", {"status": status, "assistantMessageId": str(answer.row_id)})
        answer.announced = True

    async def _finish(self, turn: Turn, conv: Conversation, status: str, answer: Answer | None, totals: Totals) -> None:
        """The turn's end: one commit (the final answer, usage, the conversation idle), then its last events.

        `completed` goes out only once that commit succeeded. A failed commit is tried again after a short
        pause (the loop serves meanwhile); if it still fails, the stream ends with an error frame and
        `failed`, and the conversation is set idle as soon as that can be written."""
        final = answer if answer is not None and answer.unsaved else None  # stored with the commit below
        turn.answer = None
        announce = answer is not None and status == "completed" and not answer.announced
        complete_id = turn.next_event_id() if announce else 0  # the events' ids, known before the commit stores the last
        done_id = turn.next_event_id()
        try:
            count = await answers.commit_turn_end(turn.conversation_id, conv.id, final, done_id, self.platform.storage.note_fault)
            failed = count is None
            if count is None:
                status = "failed"
                turn.result.error = ANSWER_NOT_SAVED
                turn.publish("error", AnswerNotSaved().stream_frame())
                count = database.execute_sql(answers.MESSAGES_OF, (conv.id,)).fetchone()[0]
            elif announce:
                assert answer is not None
                turn.publish("message_complete", {"status": status, "assistantMessageId": str(answer.row_id)}, complete_id)
                answer.announced = True
            turn.result.status, turn.result.assistant_message_id = status, str(answer.row_id) if answer else None
            turn.result.prompt_tokens, turn.result.completion_tokens = totals.prompt, totals.completion
            done = {
                "conversationId": turn.conversation_id,
                "status": status,
                "assistantMessageId": str(answer.row_id) if answer else None,
                "runtimeModel": totals.model,
                "runtimeProvider": totals.provider,
                "promptTokens": totals.prompt,
                "completionTokens": totals.completion,
                "messageCount": count,
            }
            turn.publish("done", done, None if failed else done_id)  # after the error frame: a later id
        finally:
            turn.finish(status)  # the stream ends whatever happened to the store

    async def _answer(self, turn: Turn, req: TurnRequest, conv: Conversation, totals: Totals, conv_current: bool = False) -> Answer:
        """One user input: react, or plan-execute for such agents."""

        setup = self._setup(turn, req, conv, conv_current)
        await knowledge.add(self.platform, req.agent, text_of(req.message, req.content_parts), conv.id, bool(req.command or req.held), setup)
        await sidecar.prepare(self, turn, conv, setup.vision)
        turn.publish("message_start", {"role": "assistant"})
        if setup.citations:
            turn.publish("citations", {"citations": setup.citations})
        if req.held or (req.command and not await approvals.resume(self, turn, conv, req.command, setup)):
            answer = answers.new_answer(conv)
            answer.content = approvals.WAITING_FOR_OWNER if req.held else approvals.NOTHING_PENDING
            turn.publish("content_delta", {"delta": answer.content})
            answers.save_answer(answer, "completed")
            return answer
        if req.agent.agent_type == "plan_execute" or req.source == "execute":
            return await planner.plan_execute(self, turn, req, conv, totals, setup)
        return await self.react(turn, req, conv, totals, setup, final_with_turn_end=True)

    def _setup(self, turn: Turn, req: TurnRequest, conv: Conversation, conv_current: bool = False) -> "TurnSetup":

        agent = req.agent
        if not conv_current:  # a queued input: the conversation may have changed since the turn began
            conv = first_where(Conversation, id=conv.id) or Conversation.get_by_id(conv.id)
        preferences = agents.provider_preferences(agent.id)
        if conv.model_provider and conv.model_name:
            targets = resolve_targets(conv.model_name, conv.model_provider, preferences)
        else:
            targets = resolve_targets(agent.model_name or None, getattr(agent, "model_provider", None) or None, preferences)
        role = req.caller.workspace_role
        specs, tool_ctx = tool_calls.agent_tools(
            self.platform, agent, turn.user_id, turn.workspace_id, turn.conversation_id, end_user_id=req.end_user_id, role=role
        )
        withheld = tool_calls.withheld(self.platform.services.tools, specs, role, req.end_user_id, turn.workspace_id)
        specs[:] = [spec for spec in specs if spec.name not in withheld]  # in place: tool_search extends this list
        if not any("tools" in capabilities.of_target(t) for t in targets):
            specs.clear()  # a model that cannot call tools (the embedded demo) gets none: their schemas would fill its window
        tool_ctx.emit = turn.publish  # tools that report progress (acp_delegate) stream into the turn
        return TurnSetup(
            targets=targets,
            vision="image" in (targets[0].modalities or ""),
            specs=specs,
            tool_ctx=tool_ctx,
            max_iterations=max(1, int(agent.max_iterations or 10)),
            thinking_level=req.thinking_level or agent.default_thinking_level,
            system_prompt=self.system_prompt(agent, conv),
            withheld=withheld,
        )

    async def react(
        self,
        turn: Turn,
        req: TurnRequest,
        conv: Conversation,
        totals: Totals,
        setup: "TurnSetup",
        extra: list[ChatMessage] | None = None,
        use_tools: bool = True,
        final_with_turn_end: bool = False,
    ) -> Answer:
        """Model <-> tools until an answer or maxIterations; returns the final assistant message
        (stored, or with `final_with_turn_end` left for the turn's end to store in its one commit)."""
        router = self.platform.services.llm
        answer = answers.new_answer(conv)
        turn.answer = answer
        reported: dict[str, Any] | None = None
        for iteration in range(setup.max_iterations):
            self.checkpoint(turn)
            built = await context.build(router, self.config, conv, setup, extra, use_tools)  # within the model's window
            if built.report is not None and built.report != reported:
                reported = built.report
                turn.publish("context", built.report)  # what was kept, summarised or cut
            chat_req = ChatRequest(model="", messages=built.messages, tools=built.tools, thinking_level=setup.thinking_level)
            finish = await self._stream_model(turn, router, setup.targets, chat_req, answer, totals)
            if not finish.tool_calls:
                answer.citations = answers.mark_cited(setup.citations, answer.content)  # GET messages returns them
                if final_with_turn_end:
                    answer.unsaved = "completed"
                else:
                    answers.save_answer(answer, "completed")
                return answer
            turn.phase = "executing"
            answer.tool_calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in finish.tool_calls]
            answers.save_answer(answer, "completed")
            for call in finish.tool_calls:
                self.checkpoint(turn)
                await approvals.run_call(self, turn, conv, call, setup, answer)
            turn.phase = "thinking"
            answer = answers.new_answer(conv)
            turn.answer = answer
        note = f"Stopped after reaching the maximum of {setup.max_iterations} iterations."
        answer.content = note
        turn.publish("content_delta", {"delta": note})
        answers.save_answer(answer, "completed")
        return answer

    @staticmethod
    def checkpoint(turn: Turn) -> None:
        """A friendly stop takes effect here (between events, tool calls and iterations)."""
        if turn.stop_requested:
            raise asyncio.CancelledError()

    async def _stream_model(self, turn: Turn, router: Any, targets: list[Any], chat_req: ChatRequest, answer: Answer, totals: Totals) -> Finish:

        finish: Finish | None = None
        loop = asyncio.get_running_loop()
        async with aclosing(router.stream_chat(targets, chat_req)) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    answer.content += event.text
                    turn.publish("content_delta", {"delta": event.text})
                elif isinstance(event, ReasoningDelta):
                    answer.reasoning += event.text
                    turn.publish("thinking_delta", {"delta": event.text})
                elif isinstance(event, Usage):
                    answer.prompt_tokens += event.prompt_tokens
                    answer.completion_tokens += event.completion_tokens
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
                    answers.save_partial(answer)
        if finish is None:
            raise LlmError("The model stream ended without a finish")
        return finish

    def store_tool_result(self, turn: Turn, conv: Conversation, call: ToolCall, answer: Answer, success: bool, result: str) -> None:
        """Store a tool result, note it on the assistant message, and stream it."""
        with database.atomic():
            answers.add_message(
                conv, "tool", result, tool_name=call.name, metadata={"toolCallId": call.id, "arguments": call.arguments, "success": success}
            )
        for entry in answer.tool_calls:
            if entry["id"] == call.id:
                entry["result"], entry["success"] = result[:2000], success
        answers.save_answer(answer, "completed")
        turn.result.tool_calls.append({"id": call.id, "name": call.name, "arguments": call.arguments, "result": result, "success": success})
        turn.publish("tool_call_completed", {"toolCallId": call.id, "toolName": call.name, "result": result, "success": success})

    # ---- building the model's view of the conversation ------------------------------

    def system_prompt(self, agent: Any, conv: Conversation) -> str:
        """The agent's prompt (with prompt files), memory, skills and the conversation's goal, built once per answer."""

        prompt = agents.system_prompt(self.config, agent)
        memory = self._memory_text(agent.id, conv.end_user_id, conv.user_id)
        extras = (
            f"## Memory\n\n{memory}" if memory else "",
            skills.prompt_for_agent(self.config, agent),
            goals.context_for(conv.user_id, conv.conversation_id) or "",
        )  # the KBs' digest and passages: `knowledge.add`
        return "\n\n".join(part for part in (prompt, *extras) if part)

    def _memory_text(self, agent_id: int, end_user_id: str | None, user_id: int) -> str:
        """The agent's shared notes (its MEMORY.md, or the end user's) and this user's own memory of the agent."""

        rel = f"memory/users/{agents.end_user_key(end_user_id)}/MEMORY.md" if end_user_id else "MEMORY.md"
        # confined like every workspace file: a symlink is never followed, and only the cap is read
        shared = (files.read_text_capped(agents.workspace_path(self.config, agent_id), rel, MEMORY_CAP * 4) or "").strip()
        own = memory.prompt_text(self.config, agent_id, user_id, end_user_id)
        return "\n\n".join(p for p in (shared[:MEMORY_CAP], own) if p)[:MEMORY_CAP]
