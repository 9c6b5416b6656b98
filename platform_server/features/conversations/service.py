"""Conversations per user: lookup with ownership, views, history, housekeeping."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Iterable

import peewee

from platform_server.db import database, first_where, iso, parse_iso, stored_time, utcnow
from platform_server.features.agents.models import Agent
from platform_server.features.audit import service as audit
from platform_server.features.auth.models import User
from platform_server.features.conversations.models import MESSAGE_FTS, MESSAGE_FTS_PENDING, TITLE_FTS, Conversation, Message
from platform_server.ids import CONVERSATION_ID_RE, CONVERSATION_ID_RULE
from platform_server.memo import memo_on
from platform_server.web.context import Caller
from platform_server.web.encode import JsonText, encoded
from platform_server.web.errors import BadRequest, Conflict, Forbidden, NotFound
from platform_server.web.pagination import PageRequest, page_of

ACTIVE_WINDOW = dt.timedelta(hours=24)
BATCH_DELETE_MAX = 200
TITLE_LENGTH = 50
DEFAULT_ID = "default"


def key_for(user_id: int, conversation_id: str) -> str:
    """Storage key: conversation ids are global, except `default`, which is per user."""
    return f"{DEFAULT_ID}@{user_id}" if conversation_id == DEFAULT_ID else conversation_id


def validate_id(conversation_id: str) -> str:
    """The id as given when it follows ids.CONVERSATION_ID_PATTERN (the document's rule), else the 400."""
    if not CONVERSATION_ID_RE.fullmatch(conversation_id):
        raise BadRequest(CONVERSATION_ID_RULE)
    return conversation_id


def find(user_id: int, conversation_id: str) -> Conversation | None:
    return first_where(Conversation, key=key_for(user_id, conversation_id))


def owned(caller: Caller, conversation_id: str) -> Conversation:
    """The caller's conversation; 404 when unknown, 403 when another user's."""
    conv = find(caller.user_id, conversation_id)
    if conv is None:
        raise NotFound("Conversation not found")
    if conv.user_id != caller.user_id:
        raise Forbidden("Not the owner of this conversation")
    return conv


def check_owner(user_id: int, conversation_id: str) -> Conversation | None:
    """The conversation when it is the user's or new; Forbidden when it belongs to someone else."""
    conv = find(user_id, conversation_id)
    if conv is not None and conv.user_id != user_id:
        raise Forbidden("Not the owner of this conversation")
    return conv


def _agents(ids: Iterable[int | None]) -> dict[int, Any]:
    """The name and icon of each agent, all a conversation's view shows: a whole agent row (its prompt, its
    JSON settings decoded) cost a fifth of a keyword page's time."""
    wanted = {i for i in ids if i}
    if not wanted:
        return {}
    return {a.id: a for a in Agent.select(Agent.id, Agent.name, Agent.icon).where(Agent.id.in_(list(wanted)))}


def _usernames(ids: Iterable[int]) -> dict[int, str]:
    wanted = list(set(ids))
    return {u.id: u.username for u in User.select(User.id, User.username).where(User.id.in_(wanted or [0]))}


def to_vo(conv: Conversation, agents: dict[int, Any], usernames: dict[int, str]) -> dict[str, Any]:
    agent = agents.get(conv.agent_id) if conv.agent_id else None
    active = conv.last_active_time and utcnow() - conv.last_active_time <= ACTIVE_WINDOW
    return {
        "conversationId": conv.conversation_id,
        "title": conv.title,
        "agentId": None if conv.agent_id is None else str(conv.agent_id),
        "agentName": getattr(agent, "name", None),
        "agentIcon": getattr(agent, "icon", None),
        "username": usernames.get(conv.user_id),
        "messageCount": conv.message_count,
        "lastMessage": conv.last_message,
        "lastActiveTime": iso(conv.last_active_time),
        "updateTime": iso(conv.last_active_time),  # the original console's Sessions "Last active" reads this name
        "pinned": bool(conv.pinned),
        "archived": bool(conv.archived),
        "modelProvider": conv.model_provider,
        "modelName": conv.model_name,
        "status": "active" if active else "closed",
        "streamStatus": conv.stream_status,
        "source": conv.source,
        "endUserId": conv.end_user_id,
        "workspaceId": str(conv.workspace_id),
        "createTime": iso(conv.create_time),
    }


def _vos(rows: list[Conversation]) -> list[dict[str, Any]]:
    agents = _agents(r.agent_id for r in rows)
    names = _usernames(r.user_id for r in rows)
    return [to_vo(r, agents, names) for r in rows]


def vo(conv: Conversation) -> dict[str, Any]:
    return _vos([conv])[0]


def _mine(caller: Caller, page_index: bool = True) -> peewee.ModelSelect[Conversation]:
    """The caller's conversations, in the page's order. `page_index=False` (a keyword answered by the trigram
    indexes) keeps the caller's filter off the page index (`+ 0`), whose walk would test every conversation of the
    user: the matches drive instead, each looked up by id, so the cost follows the matches, not the user's total."""
    user, workspace = (Conversation.user_id, Conversation.workspace_id) if page_index else (Conversation.user_id + 0, Conversation.workspace_id + 0)
    return (
        Conversation.select()
        .where((user == caller.user_id) & (workspace == caller.workspace_id))
        .order_by(Conversation.pinned.desc(), Conversation.last_active_time.desc(), Conversation.id.desc())
    )


def list_for(caller: Caller) -> list[dict[str, Any]]:
    return _vos(list(_mine(caller)))


def page_for(caller: Caller, req: PageRequest, keyword: str | None) -> dict[str, Any] | JsonText:
    """A page of the caller's conversations; keyword matches the title or any message."""
    if not keyword:
        return _plain_page(caller.user_id, caller.workspace_id, req.page, req.size).json
    q = _mine(caller, page_index=not _indexed(keyword)).where(conversations_matching(keyword))
    if req.offset >= 2**63:  # past any last page and beyond SQLite's 64-bit OFFSET: only the total is asked
        return page_of([], q.count(), req)
    # The page and its total in one statement: a window count over the matches the page sorts anyway, so
    # the trigram scans and their union run once (a separate COUNT ran them twice: at a million messages
    # most of the route's time). The sort carries ids only; the page's rows are read after it. Past the
    # last match no row carries the total: only then is it counted.
    ids = (
        q.select(Conversation.id.alias("cid"), peewee.fn.COUNT(peewee.SQL("*")).over().alias("match_total"))
        .offset(req.offset)
        .limit(req.size)
        .alias("matched")
    )
    rows = list(
        Conversation.select(Conversation, ids.c.match_total.alias("match_total"))
        .join(ids, on=(Conversation.id == ids.c.cid))
        .order_by(Conversation.pinned.desc(), Conversation.last_active_time.desc(), Conversation.id.desc())
        .objects()  # match_total on each row
    )
    total = int(rows[0].match_total) if rows else (q.count() if req.offset else 0)
    return page_of(_vos(rows), total, req)


# The trigram index needs three characters: a shorter keyword falls back to reading every message.
TRIGRAM = 3


def _indexed(keyword: str) -> bool:
    """Whether the trigram indexes can answer `keyword` (SQLite, three characters or more, no NUL: FTS5 query
    text ends at a NUL)."""
    return not isinstance(database.obj, peewee.PostgresqlDatabase) and len(keyword) >= TRIGRAM and "\x00" not in keyword


def _phrase(keyword: str) -> str:
    """A quoted FTS5 phrase: it matches the same substrings as LIKE '%keyword%' in a trigram index."""
    return '"' + keyword.replace('"', '""') + '"'


def conversations_matching(keyword: str) -> peewee.Expression:
    """Conversations whose title or any message contains `keyword` (case-insensitive). Indexed, the union of the
    two trigram matches drives the query (its cost follows the matches, not the user's conversations); an OR of
    `title LIKE` with the message match would test every conversation of the user, for the count and the page."""
    if not _indexed(keyword):
        return Conversation.title.contains(keyword) | Conversation.id.in_(messages_containing(keyword))
    phrase = _phrase(keyword)
    union = peewee.SQL(
        f"(SELECT rowid FROM {TITLE_FTS} WHERE {TITLE_FTS} MATCH ? UNION SELECT conversation_id FROM message WHERE id IN ({_MESSAGE_IDS_MATCHING}))",
        [phrase, phrase, keyword],
    )
    return Conversation.id.in_(union)


# The indexed messages that match (the trigram index), and those still queued for it (a few seconds' worth at
# most: read one by one, with the index's case folding), so a message is found as soon as it is stored.
_MESSAGE_IDS_MATCHING = (
    f"SELECT rowid FROM {MESSAGE_FTS} WHERE {MESSAGE_FTS} MATCH ? UNION "
    f"SELECT m.id FROM {MESSAGE_FTS_PENDING} p CROSS JOIN message m ON m.id = p.id WHERE instr(fold(m.content), fold(?)) > 0"
)


def index_pending(limit: int) -> int:
    """Index queued messages (the `limit` oldest ids, in one transaction; about 6 us each) in the trigram index;
    returns how many."""
    if isinstance(database.obj, peewee.PostgresqlDatabase):
        return 0
    with database.atomic():
        row = database.execute_sql(f"SELECT max(id), count(*) FROM (SELECT id FROM {MESSAGE_FTS_PENDING} ORDER BY id LIMIT ?)", (limit,)).fetchone()
        upto, count = row[0], int(row[1])
        if not count:
            return 0
        database.execute_sql(
            f"INSERT INTO {MESSAGE_FTS}(rowid, content) SELECT m.id, m.content FROM {MESSAGE_FTS_PENDING} p "
            "CROSS JOIN message m ON m.id = p.id WHERE p.id <= ?",
            (upto,),
        )
        database.execute_sql(f"DELETE FROM {MESSAGE_FTS_PENDING} WHERE id <= ?", (upto,))
    return count


def messages_containing(keyword: str) -> peewee.ModelSelect[Message]:
    """Conversation ids of the messages whose text contains `keyword` (case-insensitive), through the
    message_fts trigram index: a quoted phrase matches the same substrings as LIKE '%keyword%'."""
    if not _indexed(keyword):  # on PostgreSQL, ILIKE answered from pg_trgm's index; else a scan
        return Message.select(Message.conversation).where(Message.content.contains(keyword))
    matching = peewee.SQL(f"({_MESSAGE_IDS_MATCHING})", [_phrase(keyword), keyword])
    return Message.select(Message.conversation).where(Message.id.in_(matching))


_PAGE_SQL = (
    "SELECT c.conversation_id, c.title, c.agent_id, a.name, a.icon, u.username, c.message_count, c.last_message, "
    "c.last_active_time, c.pinned, c.archived, c.model_provider, c.model_name, c.stream_status, c.source, "
    "c.end_user_id, c.workspace_id, c.create_time "
    'FROM conversation c LEFT JOIN agent a ON a.id = c.agent_id LEFT JOIN "user" u ON u.id = c.user_id '
    "WHERE c.user_id = ? AND c.workspace_id = ? "
    "ORDER BY c.pinned DESC, c.last_active_time DESC, c.id DESC LIMIT ? OFFSET ?"
)
_COUNT_SQL = "SELECT COUNT(*) FROM conversation WHERE user_id = ? AND workspace_id = ?"


@dataclass(frozen=True)
class _Page:
    json: JsonText
    closes_at: str | None  # the earliest `lastActiveTime` shown as active: the page ages when it leaves the window


def _active_since() -> str:
    """Conversations active at or after this stored time count as 'active'."""
    return stored_time(utcnow() - ACTIVE_WINDOW)


def _page_current(page: _Page) -> bool:
    return page.closes_at is None or page.closes_at >= _active_since()


@memo_on(Conversation, Agent, User, fresh=_page_current)
def _plain_page(user_id: int, workspace_id: int, page: int, size: int) -> _Page:
    """The unfiltered page (the console's hot route): one count and one joined read, no model objects,
    encoded once and kept until a conversation, agent or user row changes or an active one ages.

    Same JSON as `to_vo`; stored times are fixed-width text, so 'active' is a text comparison.
    """
    req = PageRequest(page, size)
    args = (user_id, workspace_id)
    total = database.execute_sql(_COUNT_SQL, args).fetchone()[0]
    since = _active_since()
    records = []
    # past the last page SQLite is not asked: its OFFSET holds 64 bits (a documented page number times the size may not fit)
    rows = database.execute_sql(_PAGE_SQL, (*args, req.size, req.offset)) if req.offset < total else []
    for (
        cid,
        title,
        agent_id,
        agent_name,
        agent_icon,
        username,
        count,
        last,
        active_at,
        pinned,
        archived,
        provider,
        model,
        stream_status,
        source,
        end_user,
        workspace_id,
        created,
    ) in rows:
        records.append(
            {
                "conversationId": cid,
                "title": title,
                "agentId": None if agent_id is None else str(agent_id),
                "agentName": agent_name if agent_id else None,
                "agentIcon": agent_icon if agent_id else None,
                "username": username,
                "messageCount": count,
                "lastMessage": last,
                "lastActiveTime": iso(active_at),
                "updateTime": iso(active_at),  # the original console's name (Sessions "Last active")
                "pinned": bool(pinned),  # stored 0/1: the document says boolean
                "archived": bool(archived),
                "modelProvider": provider,
                "modelName": model,
                "status": "active" if active_at and active_at >= since else "closed",
                "streamStatus": stream_status,
                "source": source,
                "endUserId": end_user,
                "workspaceId": str(workspace_id),
                "createTime": iso(created),
            }
        )
    active = [r["lastActiveTime"] for r in records if r["status"] == "active"]
    closes_at = stored_time(parse_iso(min(active))) if active else None
    return _Page(encoded(page_of(records, total, req)), closes_at)


# ---- messages ------------------------------------------------------------------


def message_vo(m: Message, conversation_id: str) -> dict[str, Any]:
    return {
        "id": str(m.id),
        "conversationId": conversation_id,
        "role": m.role,
        "content": m.content,
        "toolName": m.tool_name,
        "status": m.status,
        "createTime": iso(m.create_time),
        "metadata": m.metadata or {},
        "contentParts": m.content_parts,
        "promptTokens": m.prompt_tokens,
        "completionTokens": m.completion_tokens,
        "runtimeModel": m.runtime_model,
        "runtimeProvider": m.runtime_provider,
    }


def rate_message(caller: Caller, conv: Conversation, message_id: int, rating: str | None) -> dict[str, Any]:
    """Thumbs up/down (or none) on one of the conversation's assistant answers, kept in its `metadata.rating`."""
    with database.atomic():
        m = Message.get_or_none((Message.id == message_id) & (Message.conversation == conv.id))
        if m is None:
            raise NotFound("Message not found in this conversation")
        if m.role != "assistant":
            raise Conflict("messageId: only an assistant answer can be rated")  # the stored message decides: a 409
        metadata = {k: v for k, v in (m.metadata or {}).items() if k != "rating"}
        if rating:
            metadata["rating"] = rating
        Message.update(metadata=metadata or None).where(Message.id == m.id).execute()
        audit.record(caller, "UPDATE", "CONVERSATION", conv.conversation_id, f"message {m.id} rated {rating or 'none'}", conv.workspace_id)
    m.metadata = metadata or None
    return message_vo(m, conv.conversation_id)


def messages(conv: Conversation, limit: int | None, before_id: int | None) -> Any:
    """All messages (before `beforeId`, if given) oldest first; or `{messages, hasMore}` for the `limit` just before
    `beforeId` (or the latest)."""
    base = Message.select().where(Message.conversation == conv.id)
    if before_id is not None:
        base = base.where(Message.id < before_id)
    if limit is None:
        return [message_vo(m, conv.conversation_id) for m in base.order_by(Message.id)]
    if not 1 <= limit <= 500:
        raise BadRequest("limit: must be between 1 and 500")
    rows = list(base.order_by(Message.id.desc()).limit(limit + 1))
    has_more = len(rows) > limit
    rows = rows[:limit][::-1]
    return {"messages": [message_vo(m, conv.conversation_id) for m in rows], "hasMore": has_more}


def for_original_console(answer: Any) -> Any:
    """The history as the original console reads it: the running answer's status is `generating` (the spec's
    `streaming`); a reload mid-answer reattaches the stream to the bubble marked so instead of adding one."""
    rows = answer["messages"] if isinstance(answer, dict) else answer
    for row in rows:
        if row["status"] == "streaming":
            row["status"] = "generating"
    return answer


def history(conv: Conversation) -> list[Message]:
    return list(Message.select().where(Message.conversation == conv.id).order_by(Message.id))


def trajectory(conv: Conversation) -> str:
    """Plain-text export: every segment in the order it was emitted."""
    lines = [f"# Conversation {conv.conversation_id}: {conv.title}", ""]
    for m in history(conv):
        stamp = iso(m.create_time)
        if m.role == "assistant":
            if m.metadata and m.metadata.get("reasoning"):
                lines.append(f"[{stamp}] thinking: {m.metadata['reasoning']}")
            if m.content:
                lines.append(f"[{stamp}] assistant ({m.status}): {m.content}")
            for call in (m.metadata or {}).get("toolCalls", []):
                lines.append(f"[{stamp}] tool_call {call.get('name')}: {call.get('arguments')}")
        elif m.role == "tool":
            ok = (m.metadata or {}).get("success", True)
            lines.append(f"[{stamp}] tool_result {m.tool_name} ({'ok' if ok else 'failed'}): {m.content}")
        else:
            lines.append(f"[{stamp}] {m.role}: {m.content}")
    return "\n".join(lines) + "\n"


# ---- changes -------------------------------------------------------------------


def rename(caller: Caller, conv: Conversation, title: str) -> dict[str, Any]:
    with database.atomic():
        Conversation.update(title=title, title_set=1, update_time=utcnow()).where(Conversation.id == conv.id).execute()
        audit.record(caller, "UPDATE", "CONVERSATION", conv.conversation_id, "renamed", conv.workspace_id)
    conv.title = title
    return vo(conv)


def pin(caller: Caller, conv: Conversation, pinned: bool) -> dict[str, Any]:
    with database.atomic():
        Conversation.update(pinned=int(pinned), update_time=utcnow()).where(Conversation.id == conv.id).execute()
        audit.record(caller, "UPDATE", "CONVERSATION", conv.conversation_id, f"pinned={int(pinned)}", conv.workspace_id)
    conv.pinned = int(pinned)
    return vo(conv)


def set_model(caller: Caller, conv: Conversation, provider: str | None, model_name: str | None) -> dict[str, Any]:
    if bool(provider) != bool(model_name):
        raise BadRequest("modelProvider: modelProvider and modelName come together")
    with database.atomic():
        Conversation.update(model_provider=provider or None, model_name=model_name or None, update_time=utcnow()).where(
            Conversation.id == conv.id
        ).execute()
        audit.record(caller, "UPDATE", "CONVERSATION", conv.conversation_id, f"model {provider}/{model_name}", conv.workspace_id)
    conv.model_provider, conv.model_name = provider or None, model_name or None
    return vo(conv)


def clear(caller: Caller, conv: Conversation) -> None:
    with database.atomic():
        Message.delete().where(Message.conversation == conv.id).execute()
        Conversation.update(message_count=0, last_message="", update_time=utcnow()).where(Conversation.id == conv.id).execute()
        audit.record(caller, "DELETE", "CONVERSATION_MESSAGES", conv.conversation_id, "messages cleared", conv.workspace_id)


def delete(caller: Caller, conv: Conversation) -> None:
    with database.atomic():
        conv.delete_instance(recursive=True)
        audit.record(caller, "DELETE", "CONVERSATION", conv.conversation_id, conv.title[:100], conv.workspace_id)


def batch_delete(caller: Caller, conversation_ids: list[str]) -> list[Conversation]:
    """Delete several of the caller's conversations; another user's id refuses the whole batch."""
    unique = list(dict.fromkeys(conversation_ids))
    if len(unique) > BATCH_DELETE_MAX:
        raise BadRequest(f"conversationIds: at most {BATCH_DELETE_MAX} unique ids")
    keys = [key_for(caller.user_id, c) for c in unique]
    rows = list(Conversation.select().where(Conversation.key.in_(keys))) if keys else []
    if any(r.user_id != caller.user_id for r in rows):
        raise Forbidden("Not the owner of every conversation")
    with database.atomic():
        for r in rows:
            r.delete_instance(recursive=True)
            audit.record(caller, "DELETE", "CONVERSATION", r.conversation_id, "batch delete", r.workspace_id)
    return rows


def reset_running(keep: frozenset[str] = frozenset()) -> int:
    """At start: no conversation stays running, no message stays streaming, except in the conversations
    `keep` (by key): another living process runs their turns (several processes, issue 31)."""
    with database.atomic():
        if not keep:
            Message.update(status="failed").where(Message.status == "streaming").execute()
            return Conversation.update(stream_status="idle").where(Conversation.stream_status == "running").execute()
        kept = Conversation.select(Conversation.id).where(Conversation.key.in_(list(keep)))
        Message.update(status="failed").where(Message.status == "streaming", Message.conversation.not_in(kept)).execute()
        return Conversation.update(stream_status="idle").where(Conversation.stream_status == "running", Conversation.key.not_in(list(keep))).execute()
