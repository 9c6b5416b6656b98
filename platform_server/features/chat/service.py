"""The chat service: starts turns and runs them, owns the running ones; what handlers and other areas call.

A turn's story, in order: `start_turn` stores the user's message and starts `_run`; `_run` answers each
input (`_answer`: setup in turn_setup.py, knowledge, the react loop in react.py or plan-execute in
planner.py, approvals in approvals.py) and ends with `_finish`, one commit of the final answer, the
turn's usage and the conversation idle (store.py holds every write). Its events go to the turn's own
buffer (turns.py), which SSE, talk, webchat and channels subscribe to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass

from platform_server import eager
from platform_server.blocking import run_blocking
from platform_server.config import Config
from platform_server.db import utcnow
from platform_server.features.agents import service as agents
from platform_server.features.agents.models import Agent
from platform_server.features.chat import approvals, knowledge, planner, remote, sidecar, turn_setup, uploads
from platform_server.features.chat.errors import ANSWER_NOT_SAVED, AgentBusy, AnswerNotSaved
from platform_server.features.chat.knowledge import Retrieve
from platform_server.features.chat.pacing import TurnPacer
from platform_server.features.chat.react import ReactLoop, Totals
from platform_server.features.chat.schemas import ContentPart
from platform_server.features.chat.store import Answer, TurnStore, new_answer
from platform_server.features.chat.turn_setup import TurnSetup
from platform_server.features.chat.turns import QueuedInput, Turn, TurnRegistry
from platform_server.features.conversations import service as conversations
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.guard import service as guard
from platform_server.features.models.errors import LlmFailure, reported
from platform_server.features.models.runtime import LlmRouter
from platform_server.features.skills import lessons
from platform_server.features.tools.registry import ToolRegistry
from platform_server.features.usage import meter
from platform_server.ids import LAST_EVENT_ID_RE
from platform_server.integrations.llm import LlmError
from platform_server.json_types import JsonObject
from platform_server.ports.events import Stream
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest, Forbidden, parse_long

log = logging.getLogger(__name__)


@dataclass
class TurnRequest:
    caller: Caller
    agent: Agent
    conversation_id: str
    message: str | None
    content_parts: list[JsonObject] | None = None
    thinking_level: str | None = None
    model_provider: str | None = None
    model_name: str | None = None
    end_user_id: str | None = None
    source: str = "web"
    command: str | None = None  # "approved" / "denied": resolve the pending tool call first
    text_commands: bool = False  # the sender may resolve a pending call by sending `/approve` or `/deny`
    held: bool = False  # set when the message arrives while a call waits for someone else's decision
    regenerate: bool = False  # the last exchange is kept as an earlier version (store.retire_exchange)
    regenerate_from: int | None = None  # ...or this earlier question and everything after it
    continuation: bool = False  # the message asks the model to go on with its last answer (marked, not a question)


def text_of(message: str | None, parts: list[JsonObject] | None) -> str:
    if message is not None:
        return message
    return "\n".join(str(p.get("text", "")) for p in parts or [] if p.get("type") == "text")


class ChatService:
    """Starts turns, owns them (platform.runtime(CHAT)), and runs each to its end."""

    def __init__(self, config: Config, llm: LlmRouter, tools: ToolRegistry, store: TurnStore, retrieve: Retrieve, skills_key: bytes | None) -> None:
        self.config = config
        self.llm = llm
        self.tools = tools
        self.store = store
        self.retrieve = retrieve  # the wiki's passages for a question
        self.skills_key = skills_key  # the skills' secrets join the tools' environment
        self.react_loop = ReactLoop(config, llm, tools, store)
        self.turns = TurnRegistry(config.replay_retention_s)
        self.pacer = TurnPacer()

    # ---- starting turns and talking to running ones ----------------------------------------------

    def is_running(self, key: str) -> bool:
        return self.turns.is_running(key)

    def cancel(self, key: str) -> bool:
        return self.turns.cancel(key)

    async def stop_here(self, turn: Turn, wait_s: float) -> bool:
        """Stop a turn of this process and wait (up to `wait_s`) for its end; False when it was not running."""
        if not self.turns.cancel(turn.key):
            return False
        if turn.task is not None:
            await asyncio.wait([turn.task], timeout=wait_s)
        return True

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
        if existing is not None and existing.stream_status == "running" and self.config.redis_url:
            raise AgentBusy()  # several processes: another one runs this conversation's turn (a dead one's is swept)
        text = text_of(req.message, req.content_parts)
        parts = uploads.check_parts(caller.user_id, req.content_parts) if req.content_parts else None
        now = utcnow()
        waiting = approvals.has_pending(caller.user_id, req.conversation_id)  # kept reads are used outside a transaction only
        if existing is not None and (existing.end_user_id or None) != (req.end_user_id or None):
            raise Forbidden("This conversation belongs to another end user")
        with self.store.transaction():  # no await since check_owner: `existing` and `waiting` are still current
            conv = existing
            if conv is None:
                conv = self.store.new_conversation(
                    Conversation(
                        key=key,
                        conversation_id=req.conversation_id,
                        user_id=caller.user_id,
                        workspace_id=agent.workspace_id,
                        agent_id=agent.id,
                        title=text.strip()[:50] or "New chat",
                        source=req.source,
                        end_user_id=req.end_user_id,
                    )
                )
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
            metadata: JsonObject | None = {"command": command} if command else {"heldForApproval": True} if req.held else None
            if req.regenerate and not command:
                metadata = {**(metadata or {}), "versionOf": self.store.retire_exchange(conv, req.regenerate_from)}
            elif req.continuation and not command:
                self.store.check_continuable(conv)
                metadata = {**(metadata or {}), "continuation": True}
            user_message_id = self.store.open_turn(conv, text, parts, metadata, now)
        if existing is None:
            self.store.without_summary.add(conv.id)  # its first turn reads no summary (none can exist yet)
        turn = Turn(
            key=key,
            conversation_db_id=conv.id,
            conversation_id=req.conversation_id,
            user_id=caller.user_id,
            workspace_id=agent.workspace_id,
            agent_id=agent.id,
            last_event_id=conv.last_event_id,
            # the turn's model calls are counted on it and stored with its end (`_finish`); a caller's own usage
            # scope (a workflow running this turn) names the source
            usage=meter.account(
                meter.source_of_conversation(req.source), agent.workspace_id, caller.user_id, agent.id, req.conversation_id, hold=True
            ),
        )
        self.turns.add(turn)
        self._publish_meta(turn, user_message_id)  # before any other work: the stream's first frame goes out at once
        turn.publish("phase", {"phase": "queued"})  # accepted; knowledge, context and the model come next
        # started at once, in arrival order: its model request leaves now, not after every request queued behind this one
        turn.task = eager.start_task(self._run(turn, req, conv, user_message_id))
        return turn

    @staticmethod
    def _publish_meta(turn: Turn, user_message_id: int) -> None:
        turn.publish("meta", {"conversationId": turn.conversation_id, "agentId": str(turn.agent_id), "userMessageId": str(user_message_id)})

    def queue_input(self, key: str, message: str | None, parts: list[JsonObject] | None, user_id: int) -> int | None:
        """Queue a follow-up for the running turn; None when nothing runs."""
        turn = self.turns.get(key)
        if turn is None or not turn.running:
            return None
        checked = uploads.check_parts(user_id, parts) if parts else None
        row_id = self.store.queue_input(turn.conversation_db_id, text_of(message, checked), checked)  # a dying process loses none
        turn.queue.append(QueuedInput(message, checked, row_id))
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
        outcome = approvals.resolve_as(self.tools, caller.user_id, caller.workspace_role, turn.conversation_id, command)
        return outcome.answer() if outcome is not None else None

    # ---- the admin's and the process's hold on turns ----------------------------------------------

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
            self.store.set_idle(turn.conversation_db_id)
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

    # ---- the turn ---------------------------------------------------------------------------------

    async def _run(self, turn: Turn, req: TurnRequest, conv: Conversation, user_message_id: int) -> None:
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
                        self.store.save_answer(answer, answer.unsaved)
                    self._announce(turn, answer, "completed")
                    queued = turn.queue.pop(0)
                    row_id = self.store.add_user_input(
                        conv, text_of(queued.message, queued.content_parts), queued.content_parts, queued_row=queued.row_id
                    )
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
            answer = turn.answer or answer
            if answer is not None:
                answer.unsaved = "completed"  # stored with the turn's end (retried there)
                self._announce(turn, answer, status)
            self._keep_queued(turn, conv)
        except asyncio.CancelledError:
            status = "stopped"
            answer = turn.answer or answer
            if answer is not None:
                answer.unsaved = "stopped"
                self._announce(turn, answer, "stopped")
        except Exception as exc:  # noqa: BLE001 - every failure ends the turn with an error frame
            status = "failed"
            frame = self._error_frame(exc, conv.id)
            fault = self.store.note_fault(exc)
            if fault is not None:
                frame = AnswerNotSaved(code=503 if fault == "busy" else 507).stream_frame()
            answer = turn.answer or answer
            if answer is not None:
                answer.unsaved = "failed"
            turn.result.error = str(frame["message"])
            turn.publish("error", frame)
            if answer is not None:
                self._announce(turn, answer, "failed")
        finally:
            if turn.queue:  # a stopped or failed turn takes no more input: what was queued behind it is kept
                with contextlib.suppress(Exception):  # (a failed write leaves the rows queued: the next start keeps them)
                    self._keep_queued(turn, conv, "queuedWhenStopped")
            if self._learns(req):  # lessons are read from the stored turn, before its end is announced
                if answer is not None and answer.unsaved:
                    with contextlib.suppress(Exception):  # kept `unsaved`: stored (and retried) with the turn's end
                        self.store.save_answer(answer, answer.unsaved)
                await self._learn(req, conv)
            await self._finish(turn, conv, status, answer, totals)

    async def _answer(self, turn: Turn, req: TurnRequest, conv: Conversation, totals: Totals, conv_current: bool = False) -> Answer:
        """One user input: react, or plan-execute for such agents."""
        setup = self._setup(turn, req, conv, conv_current)
        question = text_of(req.message, req.content_parts)
        await knowledge.add(self.retrieve, self.config, self.store, turn.usage, req.agent, question, conv.id, bool(req.command or req.held), setup)
        await sidecar.prepare(self.llm, self.store, turn, conv, setup.vision)
        turn.publish("message_start", {"role": "assistant"})
        if setup.citations:
            turn.publish("citations", {"citations": setup.citations})
        if req.held or (req.command and not await approvals.resume(self.react_loop, turn, conv, req.command, setup)):
            answer = new_answer(conv)
            answer.content = approvals.WAITING_FOR_OWNER if req.held else approvals.NOTHING_PENDING
            turn.publish("content_delta", {"delta": answer.content})
            self.store.save_answer(answer, "completed")
            return answer
        if req.agent.agent_type == "plan_execute" or req.source == "execute":
            return await planner.plan_execute(self.react_loop, turn, req.message or "", conv, totals, setup)
        return await self.react_loop.react(turn, conv, totals, setup, final_with_turn_end=True)

    def _setup(self, turn: Turn, req: TurnRequest, conv: Conversation, conv_current: bool = False) -> TurnSetup:
        return turn_setup.resolve(
            self.config, self.tools, self.skills_key, turn, req.caller, req.agent, conv, req.thinking_level, req.end_user_id, conv_current
        )

    @staticmethod
    def _error_frame(exc: Exception, conversation_id: int) -> JsonObject:
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

    def _keep_queued(self, turn: Turn, conv: Conversation, mark: str = "queuedWhilePaused") -> None:
        """Inputs queued behind a paused (or stopped, or failed) turn are stored (accepted messages are never lost)."""
        with self.store.transaction():
            while turn.queue:
                queued = turn.queue.pop(0)
                text = text_of(queued.message, queued.content_parts)
                self.store.add_user_input(conv, text, queued.content_parts, {mark: True}, queued.row_id)

    @staticmethod
    def _announce(turn: Turn, answer: Answer, status: str) -> None:
        turn.publish("message_complete", {"status": status, "assistantMessageId": str(answer.row_id)})
        answer.announced = True

    async def _finish(self, turn: Turn, conv: Conversation, status: str, answer: Answer | None, totals: Totals) -> None:
        """The turn's end: one commit (the final answer, usage, the conversation idle), then its last events.

        `completed` goes out only once that commit succeeded. A failed commit is tried again after a short
        pause (the loop serves meanwhile); if it still fails, the stream ends with an error frame and
        `failed`, and the conversation is set idle as soon as that can be written."""
        self.store.without_summary.discard(conv.id)
        final = answer if answer is not None and answer.unsaved else None  # stored with the commit below
        turn.answer = None
        announce = answer is not None and status == "completed" and not answer.announced
        complete_id = turn.next_event_id() if announce else 0  # the events' ids, known before the commit stores the last
        done_id = turn.next_event_id()
        try:
            count = await self.store.commit_turn_end(turn.conversation_id, conv.id, final, done_id, turn.usage)
            failed = count is None
            if count is None:
                status = "failed"
                turn.result.error = ANSWER_NOT_SAVED
                turn.publish("error", AnswerNotSaved().stream_frame())
                count = self.store.message_count(conv.id)
            elif announce:
                assert answer is not None
                turn.publish("message_complete", {"status": status, "assistantMessageId": str(answer.row_id)}, complete_id)
                answer.announced = True
            turn.result.status, turn.result.assistant_message_id = status, str(answer.row_id) if answer else None
            turn.result.prompt_tokens, turn.result.completion_tokens = totals.prompt, totals.completion
            done: JsonObject = {
                "conversationId": turn.conversation_id,
                "status": status,
                "assistantMessageId": str(answer.row_id) if answer else None,
                "runtimeModel": totals.model,
                "runtimeProvider": totals.provider,
                "promptTokens": totals.prompt,
                "completionTokens": totals.completion,
                "messageCount": count,
                "timing": answer.timing if answer else None,  # the final answer's; stored in its metadata too
                "finishReason": "length" if answer and answer.cut else None,  # cut by the token limit
            }
            turn.publish("done", done, None if failed else done_id)  # after the error frame: a later id
        finally:
            turn.finish(status)  # the stream ends whatever happened to the store


ChatRuntime = ChatService  # the name other areas knew it by


# ---- what chat requests call (handlers, talk, channels, workflows) ----------------------------------


def parts_of(parts: list[ContentPart] | None) -> list[JsonObject] | None:
    return None if parts is None else [p.model_dump(exclude_none=True) for p in parts]


def begin_turn(
    runtime: ChatService,
    config: Config,
    caller: Caller,
    agent_id_text: str,
    message: str | None,
    parts: list[JsonObject] | None,
    conversation_id: str,
    thinking_level: str | None = None,
    model_provider: str | None = None,
    model_name: str | None = None,
    end_user_id: str | None = None,
    source: str = "web",
    regenerate: bool = False,
    continuation: bool = False,
    regenerate_from: str | None = None,
) -> Turn:
    """Resolve the agent and conversation (owner only) and start a new turn."""
    cid = conversations.validate_id(conversation_id)
    agent = agents.get_agent_for_chat(caller, parse_long("agentId", agent_id_text))
    return runtime.start_turn(
        TurnRequest(
            caller=caller,
            agent=agent,
            conversation_id=cid,
            message=message,
            content_parts=parts,
            thinking_level=thinking_level,
            model_provider=model_provider,
            model_name=model_name,
            end_user_id=end_user_id,
            source=source,
            text_commands=True,  # the authenticated owner, console or API
            regenerate=regenerate,
            regenerate_from=parse_long("regenerateFrom", regenerate_from) if regenerate_from else None,
            continuation=continuation,
        )
    )


async def reattach(runtime: ChatService, caller: Caller, conversation_id: str) -> Stream | None:
    """The stream to replay for the conversation's owner: its turn's on this process, else the one another
    process runs or ran (several processes on Redis); None when nothing is buffered."""
    cid = conversations.validate_id(conversation_id)
    conversations.check_owner(caller.user_id, cid)
    key = conversations.key_for(caller.user_id, cid)
    turn = runtime.turns.get(key)
    return turn.hub if turn is not None else await remote.attach(key)


def parse_last_event_id(raw: str | None) -> int:
    """The SSE id to replay after, as the document's LAST_EVENT_ID_PATTERN states it (ASCII digits; empty: from the
    start): isdigit() also passed '²', which int() refused (a 500)."""
    if raw is None or raw == "":
        return 0
    if not LAST_EVENT_ID_RE.fullmatch(raw):
        raise BadRequest("Invalid value for parameter 'lastEventId': expected Long")
    return int(raw)


async def wait_result(turn: Turn) -> JsonObject:
    """Wait for a turn (synchronous chat) and shape its result."""
    assert turn.task is not None
    await asyncio.shield(turn.task)
    result = turn.result
    if result.status == "failed":
        raise LlmFailure(result.error or "The model call failed")
    content = ""
    citations: object = []
    if result.assistant_message_id:
        row = Message.get_or_none(Message.id == int(result.assistant_message_id))
        content = row.content if row else ""
        citations = ((row.metadata or {}).get("citations") or []) if row else []
    return {
        "conversationId": turn.conversation_id,
        "content": content,
        "assistantMessageId": result.assistant_message_id,
        "status": result.status,
        "promptTokens": result.prompt_tokens,
        "completionTokens": result.completion_tokens,
        "toolCalls": result.tool_calls,
        "citations": citations,  # the knowledge passages the answer was given (see the stream's `citations` event)
    }
