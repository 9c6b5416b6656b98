"""A turn's database writes, in one place: its start, the messages it adds, its answers and its end.

An answer gets its id when it begins (so it sorts after what the turn stored before it, e.g. an
approved tool's result) and its row at its first save: the streamed text after PERSIST_EVERY_S, or
the final text with the turn's end commit (see `ChatService._finish`). A turn's start stores only the
user's message. The hot writes are plain SQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable

import peewee

from platform_server.db import database, insert_row, one_transaction, stored_time, update_row, utcnow
from platform_server.features.chat.models import ContextSummary, PendingInput
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.usage.meter import UsageAccount
from platform_server.ids import next_id
from platform_server.json_types import JsonObject
from platform_server.web.errors import BadRequest

# A stored message counted on its conversation (the hot write of every turn, as plain SQL).
_COUNT_MESSAGE = "UPDATE conversation SET message_count = message_count + 1, last_active_time = ?, update_time = ? WHERE id = ?"
_COUNT_MESSAGE_WITH_PREVIEW = (
    "UPDATE conversation SET message_count = message_count + 1, last_active_time = ?, update_time = ?, last_message = ? WHERE id = ?"
)
# A turn's start: the user's message counted, the conversation running (one statement)
START_SQL = (
    "UPDATE conversation SET message_count = message_count + 1, last_active_time = ?, update_time = ?, "
    "last_message = COALESCE(?, last_message), stream_status = 'running', agent_id = ?, workspace_id = ?, "
    "model_provider = ?, model_name = ? WHERE id = ?"
)
MESSAGES_OF = "SELECT COUNT(*) FROM message WHERE conversation_id = ?"

log = logging.getLogger(__name__)

END_SAVE_RETRY_S = (0.05, 0.2, 0.5)  # pauses before a turn's end commit is tried again (a full disk, an I/O error)
# while another connection holds the write lock (a wiki ingest's batch in an executor): tried for ~5 s
END_SAVE_BUSY_RETRY_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0)
MARK_IDLE_EVERY_S = 1.0
MARK_IDLE_TRIES = 600  # then the next start sets it idle

FaultNoter = Callable[[BaseException], object]  # StorageHealth.note_fault: "busy", "full", "io" or None


@dataclass
class Answer:
    """The assistant message being produced (kept so a stop or failure can save the partial text)."""

    row_id: int  # given when the answer begins; its row is written at its first save (`stored`)
    conversation_db_id: int
    # a save wrote its row (its commit may still have failed: a save that finds no row inserts it)
    stored: bool = False
    content: str = ""
    reasoning: str = ""
    tool_calls: list[JsonObject] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    runtime_model: str | None = None
    runtime_provider: str | None = None
    persisted_at: float = field(default_factory=time.monotonic)  # the loop's clock: first saved a period after it began
    unsaved: str | None = None  # the status to store it with when the turn ends (the final answer: one commit with the turn's end)
    announced: bool = False  # its message_complete event went out
    citations: list[JsonObject] = field(default_factory=list)  # knowledge passages it was given ([1], [2], ...)
    timing: JsonObject | None = None  # time to first token and tokens/s of its model call (react.timing_of)
    cut: bool = False  # the model stopped at its token limit (finish_reason "length"): stored as finishReason


def preview_of(text: str) -> str:
    """The conversation list's one-line preview of a message."""
    return text.strip().replace("\n", " ")[:200]


def mark_cited(citations: list[JsonObject], content: str) -> list[JsonObject]:
    """The passages an answer was given, each with `cited`: whether the answer refers to its `[n]`."""
    return [{**c, "cited": f"[{c['id']}]" in content} for c in citations]


def new_answer(conv: Conversation) -> Answer:
    """The turn's next assistant message: its id now, its row at its first save."""
    return Answer(row_id=next_id(), conversation_db_id=conv.id)


class TurnStore:
    """Every write of a chat turn (one per process, handed to the chat service): a reader of a turn's
    storage finds it here, and the partial saves of one loop pass share one commit."""

    def __init__(self, note_fault: FaultNoter) -> None:
        self.note_fault = note_fault  # classifies a failed end commit: busy (retried longer) or a storage fault
        self._partial_due: dict[int, Answer] = {}
        self._partial_armed_on: asyncio.AbstractEventLoop | None = None  # the loop whose next pass stores them
        # Conversations this process created whose first turn runs: they have no summary yet, so a model call
        # skips reading one (the first read of a new chat's start). A compaction (`replace_summary`) or the
        # turn's end drops the id: a later turn may run on another process, which may compact.
        self.without_summary: set[int] = set()

    @staticmethod
    def transaction() -> contextlib.AbstractContextManager[object]:
        """One commit around writes of several steps (no await inside)."""
        return database.atomic()

    # ---- a turn's start ---------------------------------------------------------------------------

    @staticmethod
    def new_conversation(conv: Conversation) -> Conversation:
        """Store a conversation built by the caller (its defaults set on the instance: stored as it holds them)."""
        insert_row(Conversation, **conv.__data__)
        return conv

    @staticmethod
    def open_turn(conv: Conversation, text: str, parts: list[JsonObject] | None, metadata: JsonObject | None, now: datetime) -> int:
        """The user's message of a new turn, counted on its conversation, which is marked running with the turn's
        agent and model (call inside `transaction()`); returns the message's id."""
        user_message_id: int = insert_row(
            Message, conversation=conv.id, role="user", content=text, content_parts=parts, metadata=metadata, create_time=now
        )
        stamp, preview = stored_time(now), preview_of(text) or None
        database.execute_sql(START_SQL, (stamp, stamp, preview, conv.agent_id, conv.workspace_id, conv.model_provider, conv.model_name, conv.id))
        conv.message_count += 1
        conv.stream_status = "running"
        return user_message_id

    # ---- messages during a turn -------------------------------------------------------------------

    @staticmethod
    def add_message(
        conv: Conversation,
        role: str,
        content: str,
        *,
        content_parts: list[JsonObject] | None = None,
        metadata: JsonObject | None = None,
        tool_name: str | None = None,
    ) -> int:
        """Store a message and count it on its conversation; returns the message id (hot: plain SQL)."""
        now = utcnow()
        row_id: int = insert_row(
            Message,
            conversation=conv.id,
            role=role,
            content=content,
            create_time=now,
            content_parts=content_parts,
            metadata=metadata,
            tool_name=tool_name,
        )
        preview = preview_of(content)
        stamp = stored_time(now)
        if preview:
            database.execute_sql(_COUNT_MESSAGE_WITH_PREVIEW, (stamp, stamp, preview, conv.id))
        else:
            database.execute_sql(_COUNT_MESSAGE, (stamp, stamp, conv.id))
        conv.message_count += 1
        return row_id

    @staticmethod
    def queue_input(conversation_db_id: int, text: str, parts: list[JsonObject] | None) -> int:
        """A follow-up accepted for the running turn, stored until the turn takes it (its own commit); its row id."""
        with database.atomic():
            row_id: int = insert_row(PendingInput, conversation=conversation_db_id, content=text, content_parts=parts, create_time=utcnow())
        return row_id

    def add_user_input(
        self, conv: Conversation, text: str, parts: list[JsonObject] | None, metadata: JsonObject | None = None, queued_row: int | None = None
    ) -> int:
        """A queued follow-up stored as the conversation's next user message (its own commit, which also deletes
        its stored queue row `queued_row`)."""
        with database.atomic():
            if queued_row is not None:
                PendingInput.delete().where(PendingInput.id == queued_row).execute()
            return self.add_message(conv, "user", text, content_parts=parts, metadata=metadata)

    def add_tool_result(self, conv: Conversation, call_id: str, name: str, arguments: str, success: bool, result: str) -> None:
        """A tool call's result, in its own commit."""
        with database.atomic():
            metadata: JsonObject = {"toolCallId": call_id, "arguments": arguments, "success": success}
            self.add_message(conv, "tool", result, tool_name=name, metadata=metadata)

    @staticmethod
    def describe_image(message_id: int, url: str, text: str) -> None:
        """Keep the vision sidecar's description of an image in its message's metadata."""
        with database.atomic():
            row = Message.get_by_id(message_id)
            metadata = dict(row.metadata or {})
            metadata["imageDescriptions"] = {**(metadata.get("imageDescriptions") or {}), url: text}
            Message.update(metadata=metadata).where(Message.id == message_id).execute()

    def replace_summary(self, conversation_db_id: int, upto_message_id: int, summary: str, messages: int) -> None:
        """The conversation's compacted history (one per conversation)."""
        self.without_summary.discard(conversation_db_id)
        with database.atomic():
            ContextSummary.delete().where(ContextSummary.conversation == conversation_db_id).execute()
            insert_row(ContextSummary, conversation=conversation_db_id, upto_message_id=upto_message_id, summary=summary, messages=messages)

    # ---- answers ----------------------------------------------------------------------------------

    def save_answer(self, answer: Answer, status: str, *, message_count: int | None = None, **conversation: object) -> bool:
        """Store the answer as it stands (one commit; its row written at the first save) with the conversation's
        preview, and `conversation`'s other columns in the same statement (`message_count` as given, plus one
        when this save wrote the row). Returns whether it wrote the row (rather than updating it)."""
        metadata: JsonObject = {}
        if answer.tool_calls:
            metadata["toolCalls"] = answer.tool_calls
        if answer.reasoning:
            metadata["reasoning"] = answer.reasoning
        if answer.citations:
            metadata["citations"] = answer.citations
        if answer.timing:
            metadata["timing"] = answer.timing
        if answer.cut:
            metadata["finishReason"] = "length"
        preview = preview_of(answer.content)
        fields: JsonObject = {
            "content": answer.content,
            "status": status,
            "metadata": metadata or None,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
            "runtime_model": answer.runtime_model,
            "runtime_provider": answer.runtime_provider,
        }
        with one_transaction():  # one commit (the caller's, inside its transaction)
            # a row an earlier save wrote in a commit that then failed is not there: written now
            inserted = not (answer.stored and update_row(Message, answer.row_id, **fields))
            if inserted:
                self._insert(answer, fields, counted=message_count is None)
                if message_count is not None:
                    message_count += 1
            if message_count is not None:
                conversation["message_count"] = message_count
            if preview:
                conversation.update(last_message=preview, last_active_time=utcnow())
            if conversation:
                update_row(Conversation, answer.conversation_db_id, **conversation)
        answer.unsaved = None  # (kept when the save failed: the turn's end stores it then)
        return inserted

    async def commit_turn_end(
        self, conversation_id: str, conv_db_id: int, final: Answer | None, last_event_id: int, usage: UsageAccount
    ) -> int | None:
        """A turn's end commit (the final answer, usage, the conversation idle), tried again after the pauses
        of `END_SAVE_RETRY_S` (or, while the write lock is busy, `END_SAVE_BUSY_RETRY_S`), which leave the
        loop serving; returns the conversation's message count, or None when it could not be stored (the
        conversation is then set idle as soon as it can be written)."""
        status = (final.unsaved or "completed") if final is not None else None  # (a save clears `unsaved`; a retry keeps it)
        tries, busy_tries = 0, 0
        while True:
            try:
                with database.atomic():
                    count = self.message_count(conv_db_id)
                    if final is not None:  # the conversation's row written once (counting the answer if this wrote its row)
                        assert status is not None
                        count += self.save_answer(final, status, message_count=count, stream_status="idle", last_event_id=last_event_id)
                    else:
                        update_row(Conversation, conv_db_id, stream_status="idle", last_event_id=last_event_id, message_count=count)
                    usage.flush()  # the turn's model calls, in the same commit
                return count
            except Exception as exc:  # noqa: BLE001 - a database error of any kind: tried again, then reported
                if self.note_fault(exc) == "busy" and busy_tries < len(END_SAVE_BUSY_RETRY_S):
                    pause, busy_tries = END_SAVE_BUSY_RETRY_S[busy_tries], busy_tries + 1
                elif tries < len(END_SAVE_RETRY_S):
                    pause, tries = END_SAVE_RETRY_S[tries], tries + 1
                    log.warning("storing the end of the turn in %s failed: %s", conversation_id, exc)
                else:
                    log.warning("storing the end of the turn in %s failed: %s (given up)", conversation_id, exc)
                    break
                await asyncio.sleep(pause)  # the loop serves meanwhile
        self.mark_idle(conversation_id, conv_db_id)
        return None

    @staticmethod
    def message_count(conv_db_id: int) -> int:
        count: int = database.execute_sql(MESSAGES_OF, (conv_db_id,)).fetchone()[0]
        return count

    @staticmethod
    def set_idle(conv_db_id: int) -> None:
        """A recycled turn's conversation is free again."""
        Conversation.update(stream_status="idle").where(Conversation.id == conv_db_id).execute()

    def mark_idle(self, conversation_id: str, conv_db_id: int, tries_left: int = MARK_IDLE_TRIES) -> None:
        """Set a conversation whose turn ended unsaved idle; on a full disk, tried again every second."""
        try:
            with database.atomic():
                update_row(Conversation, conv_db_id, stream_status="idle")
        except Exception as exc:  # noqa: BLE001 - tried again until space returns
            if tries_left == MARK_IDLE_TRIES:
                log.warning("conversation %s stays marked running until it can be written: %s", conversation_id, exc)
            if tries_left > 1:
                asyncio.get_running_loop().call_later(MARK_IDLE_EVERY_S, self.mark_idle, conversation_id, conv_db_id, tries_left - 1)

    # ---- partial answers --------------------------------------------------------------------------

    def save_partial(self, answer: Answer) -> None:
        """Keep the text streamed so far, so that a crash keeps it: stored at the end of this pass of the loop,
        in one commit with the other streams' partial saves of the same pass (streams that began together
        reach their save together; a commit each would hold up every stream's next event)."""
        loop = asyncio.get_running_loop()
        if self._partial_armed_on is not loop:  # the pass's first request (what a loop closed before its pass left is dropped)
            self._partial_due = {}
            self._partial_armed_on = loop
            loop.call_soon(self._store_partials)
        self._partial_due[answer.row_id] = answer

    def _store_partials(self) -> None:
        self._partial_armed_on = None
        due, self._partial_due = self._partial_due, {}
        try:
            with database.atomic():
                for answer in due.values():
                    try:
                        with database.atomic():  # a savepoint: one row that cannot be stored spoils none of the others
                            self._store_partial(answer)
                    except peewee.DatabaseError:
                        log.warning("could not keep the partial text of message %s", answer.row_id, exc_info=True)
        except peewee.DatabaseError:
            log.warning("could not keep %d partial answers (the next save tries again)", len(due), exc_info=True)

    def _store_partial(self, answer: Answer) -> None:
        if not (answer.stored and update_row(Message, answer.row_id, content=answer.content)):
            self._insert(answer, {"content": answer.content, "status": "streaming"}, counted=True)  # first save, or its commit failed

    @staticmethod
    def _insert(answer: Answer, fields: JsonObject, counted: bool) -> None:
        now = utcnow()
        insert_row(Message, id=answer.row_id, conversation=answer.conversation_db_id, role="assistant", create_time=now, **fields)
        answer.stored = True
        if counted:
            stamp = stored_time(now)
            database.execute_sql(_COUNT_MESSAGE, (stamp, stamp, answer.conversation_db_id))

    @staticmethod
    def check_continuable(conv: Conversation) -> None:
        """A continuation needs an answer to go on with: the conversation's last message is the assistant's."""
        last = Message.select(Message.role).where(Message.conversation == conv.id).order_by(Message.id.desc()).first()
        if last is None or last.role != "assistant":
            raise BadRequest("continueAnswer: the conversation's last message is not an answer to continue")

    @staticmethod
    def retire_exchange(conv: Conversation, from_id: int | None = None) -> int:
        """Keep a question (the last one, or `from_id`) and every live message after it as an earlier version
        (`metadata.retired`, hidden from the model's view; GET messages still lists it) for a regenerated or
        edited question (call inside `transaction()`). The later exchanges belong to that old version, as in
        ChatGPT: `metadata.branch` (the retired question's id) keeps them together. Returns the exchange's
        version group: the id of its first question."""
        q = Message.select().where(Message.conversation == conv.id).order_by(Message.id.desc())
        rows = list(q.where(Message.id >= from_id) if from_id is not None else q.limit(500))
        live = [m for m in rows if not (m.metadata or {}).get("retired")]
        questions = [m for m in live if m.role == "user" and not any((m.metadata or {}).get(k) for k in ("command", "continuation"))]
        if from_id is not None:
            question = next((m for m in questions if m.id == from_id), None)
            if question is None:
                raise BadRequest("regenerateFrom: not a question of this conversation's current version")
        else:
            question = questions[0] if questions else None
            if question is None:
                raise BadRequest("regenerate: this conversation has no question to answer again")
        group = int((question.metadata or {}).get("versionOf") or question.id)
        for m in live:
            if m.id >= question.id:
                meta = {**(m.metadata or {}), "retired": True, "branch": question.id}
                meta.setdefault("versionOf", group)  # a later exchange keeps its own group (its own pager)
                Message.update(metadata=meta).where(Message.id == m.id).execute()
        return group

    # ---- reads of a turn --------------------------------------------------------------------------

    @staticmethod
    def last_question(conversation_db_id: int) -> str:
        """The conversation's latest user message that is not an approval command (or held for one)."""
        q = Message.select(Message.content, Message.metadata).where((Message.conversation == conversation_db_id) & (Message.role == "user"))
        for row in q.order_by(Message.id.desc()).limit(20):
            meta = row.metadata or {}
            if not any(meta.get(k) for k in ("command", "heldForApproval", "retired", "continuation")):
                return str(row.content or "")
        return ""


def free_abandoned(keys: list[str]) -> int:
    """Conversations whose turn nobody runs any more: idle, their half-written answers failed."""
    if not keys:
        return 0
    with database.atomic():
        ids = [c.id for c in Conversation.select(Conversation.id).where(Conversation.key.in_(keys), Conversation.stream_status == "running")]
        if not ids:
            return 0
        Message.update(status="failed").where(Message.conversation.in_(ids), Message.status == "streaming").execute()
        count = int(Conversation.update(stream_status="idle").where(Conversation.id.in_(ids)).execute())
        keep_queued(ids)
        return count


def keep_queued(conversation_ids: list[int] | None = None) -> int:
    """Follow-ups queued for turns that ended without taking them (their process died): kept as the conversations'
    user messages, in the order they came, as a paused turn keeps its queue (accepted messages are never lost).
    None: those of every conversation no turn runs (at start, after `reset_running`). Returns how many."""
    with database.atomic():
        q = PendingInput.select()
        if conversation_ids is None:
            idle = Conversation.select(Conversation.id).where(Conversation.stream_status != "running")
            q = q.where(PendingInput.conversation.in_(idle))
        elif conversation_ids:
            q = q.where(PendingInput.conversation.in_(conversation_ids))
        else:
            return 0
        rows = list(q.order_by(PendingInput.id))
        if not rows:
            return 0
        convs = {c.id: c for c in Conversation.select().where(Conversation.id.in_({r.conversation_id for r in rows}))}
        for row in rows:
            conv = convs[row.conversation_id]
            TurnStore.add_message(conv, "user", row.content, content_parts=row.content_parts, metadata={"queuedWhenStopped": True})
        PendingInput.delete().where(PendingInput.id.in_([r.id for r in rows])).execute()
    log.warning("kept %d message(s) queued for turns that ended without them", len(rows))
    return len(rows)
