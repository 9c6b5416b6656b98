"""Facts: extraction from a conversation, contradictions, feedback, forgetting; MEMORY.md follows."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from platform_server.config import Config
from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.conversations import service as conversations
from platform_server.features.conversations.models import Message
from platform_server.features.memory import extraction, llm, store
from platform_server.features.memory.models import Contradiction, Fact
from platform_server.features.memory.store import Scope
from platform_server.features.models.errors import LlmFailure
from platform_server.serialize import Fields, flag, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter

MAX_FACTS_PER_CALL = 50
STATEMENT_MAX = 1000
TRANSCRIPT_CAP = 30_000
LIST_LIMIT = 1000


fact_vo = Fields(
    id=ident("id"),
    agentId=ident("agent_id"),
    endUserId=lambda f: f.end_user_id or None,
    key="key",
    statement="statement",
    confidence=lambda f: round(float(f.confidence), 4),
    status="status",
    source="source",
    sourceConversationId="source_conversation_id",
    mentions="mentions",
    helpfulCount="helpful_count",
    unhelpfulCount="unhelpful_count",
    userEdited=flag("user_edited"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
    forgottenTime=when("forgotten_time"),
)


contradiction_vo = Fields(
    id=ident("id"),
    agentId=ident("agent_id"),
    endUserId=lambda c: c.end_user_id or None,
    status="status",
    resolution="resolution",
    factA=lambda c: fact_vo(Fact.get_by_id(c.fact_a_id)),
    factB=lambda c: fact_vo(Fact.get_by_id(c.fact_b_id)),
    createTime=when("create_time"),
    resolveTime=when("resolve_time"),
)


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).rstrip(".") == " ".join(b.lower().split()).rstrip(".")


def active(scope: Scope) -> list[Fact]:
    return list(Fact.select().where(scope.where(Fact) & (Fact.status == "active")).order_by(Fact.id))


def get_fact(scope: Scope, fact_id: int) -> Fact:
    fact = Fact.get_or_none((Fact.id == fact_id) & scope.where(Fact))
    if fact is None:
        raise NotFound("Fact not found")
    return fact


def list_facts(scope: Scope, status: str | None, keyword: str | None) -> list[dict[str, Any]]:
    """The scope's facts (active by default; `all` or `forgotten`), newest first."""
    q = Fact.select().where(scope.where(Fact))
    if status in (None, "active"):  # an empty value is not "absent": not one of the documented enum's, a 400
        q = q.where(Fact.status == "active")
    elif status == "forgotten":
        q = q.where(Fact.status == "forgotten")
    elif status != "all":
        raise BadRequest("status: must be one of active, forgotten, all")
    if keyword:
        like = f"%{keyword.strip()}%"
        q = q.where(Fact.key**like | Fact.statement**like)
    return [fact_vo(f) for f in q.order_by(Fact.update_time.desc(), Fact.id.desc()).limit(LIST_LIMIT)]


def _close_contradictions_of(fact: Fact) -> None:
    """Open contradictions that lose a side resolve in favour of the side that stays."""
    for c in Contradiction.select().where(((Contradiction.fact_a == fact.id) | (Contradiction.fact_b == fact.id)) & (Contradiction.status == "open")):
        c.status, c.resolution, c.resolve_time = "resolved", ("KEEP_B" if c.fact_a_id == fact.id else "KEEP_A"), utcnow()
        c.save()


def forget_row(fact: Fact) -> None:
    fact.status, fact.forgotten_time, fact.update_time = "forgotten", utcnow(), utcnow()
    fact.save()
    _close_contradictions_of(fact)


def remember(
    scope: Scope, actor: Caller | None, key: str, statement: str, confidence: float, source: str, conversation_id: str | None
) -> tuple[Fact, str, Contradiction | None]:
    """Store one fact (inside a transaction): `created`, `reinforced` or `contradicts` an active one."""
    existing = [f for f in active(scope) if f.key == key]
    same = next((f for f in existing if _same(f.statement, statement)), None)
    if same is not None:
        if same.source_conversation_id != conversation_id or conversation_id is None:
            same.mentions += 1
        same.confidence = max(float(same.confidence), confidence)
        same.update_time = utcnow()
        same.save()
        audit.record(actor, "UPDATE", "MEMORY_FACT", same.id, f"reinforced {key}", workspace_id=scope.workspace_id)
        return same, "reinforced", None
    fact = Fact.create(
        workspace_id=scope.workspace_id,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        end_user_id=scope.end_user_id,
        key=key,
        statement=statement,
        confidence=confidence,
        source=source,
        source_conversation_id=conversation_id,
    )
    audit.record(actor, "CREATE", "MEMORY_FACT", fact.id, f"{key}", workspace_id=scope.workspace_id)
    if not existing:
        return fact, "created", None
    other = max(existing, key=lambda f: f.id)
    c = Contradiction.create(
        workspace_id=scope.workspace_id,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        end_user_id=scope.end_user_id,
        fact_a=other.id,
        fact_b=fact.id,
    )
    audit.record(actor, "CREATE", "MEMORY_CONTRADICTION", c.id, f"{key}: {other.id} vs {fact.id}", workspace_id=scope.workspace_id)
    return fact, "contradicts", c


def _transcript(rows: list[Message]) -> str:
    lines = [f"{m.role}: {m.content.strip()}" for m in rows if m.role in ("user", "assistant") and (m.content or "").strip()]
    text = "\n".join(lines)
    return text[-TRANSCRIPT_CAP:]


def _extracted(value: Any) -> list[tuple[str, str, float]]:
    items = value.get("facts") if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise llm.UnreadableAnswer("The memory model did not answer a JSON list of facts")
    out: list[tuple[str, str, float]] = []
    for item in items[:MAX_FACTS_PER_CALL]:
        if not isinstance(item, dict):
            continue
        key = store.clean_key(item.get("key"))
        statement = item.get("statement")
        if key is None or not isinstance(statement, str) or not statement.strip():
            continue
        out.append((key, " ".join(statement.split())[:STATEMENT_MAX], store.clean_confidence(item.get("confidence", 0.7))))
    return out


async def summarize(router: LlmRouter, config: Config, caller: Caller, agent: Any, conversation_id: str) -> dict[str, Any]:
    """Extract durable facts from the caller's conversation with the agent; note them in today's daily note."""
    conv = conversations.owned(caller, conversations.validate_id(conversation_id))
    if conv.agent_id != agent.id:
        raise Conflict("conversationId: the conversation is with another agent")
    rows = conversations.history(conv)
    if not _transcript(rows):
        raise Conflict("The conversation has no messages to summarize")  # its stored state refuses it: a 409
    result = await extract(router, config, caller, agent, conv, rows)
    extraction.mark(conv.id, rows[-1].id)
    return result


async def extract(
    router: LlmRouter, config: Config, actor: Caller | None, agent: Any, conv: Any, rows: list[Message], heading: str = "conversation"
) -> dict[str, Any]:
    """The extractor behind summarize and the idle loop: facts from these messages of the conversation,
    deduplicated against the known ones (contradictions flagged), noted in today's daily note."""
    scope = Scope(agent.workspace_id, conv.user_id, agent.id, conv.end_user_id or "")
    transcript = _transcript(rows)
    targets = llm.targets_for(agent)
    known = [{"key": f.key, "statement": f.statement} for f in active(scope)][:200]
    prompt = json.dumps({"knownFacts": known, "conversation": transcript}, ensure_ascii=False)
    value, model = await llm.ask_json(router, targets, llm.EXTRACT_SYSTEM, prompt, scope=scope)
    extracted = _extracted(value)
    results: list[tuple[Fact, str, Contradiction | None]] = []
    with database.atomic():
        for key, statement, confidence in extracted:
            results.append(remember(scope, actor, key, statement, confidence, "conversation", conv.conversation_id))
    note = None
    if results:
        now = store.local_now(config)
        lines = [f"\n## {now.strftime('%H:%M')} {heading} {conv.conversation_id}"]
        lines += [f"- {f.key}: {f.statement} (confidence {f.confidence:.2f}, {outcome})" for f, outcome, _ in results]
        note = store.append(config, scope, store.daily_name(now.date()), "\n".join(lines) + "\n")
        store.write_projection(config, scope)
    return {
        "conversationId": conv.conversation_id,
        "endUserId": scope.end_user_id or None,
        "model": model,
        "extracted": len(results),
        "facts": [fact_vo(Fact.get_by_id(f.id)) | {"outcome": outcome} for f, outcome, _ in results],
        "contradictions": [contradiction_vo(c) for _, _, c in results if c is not None],
        "dailyNote": note,
    }


def feedback(scope: Scope, caller: Caller, fact_id: int, value: str) -> dict[str, Any]:
    """Count a HELPFUL or UNHELPFUL vote; the recall score follows."""
    with database.atomic():
        fact = get_fact(scope, fact_id)
        if value == "HELPFUL":
            fact.helpful_count += 1
        else:
            fact.unhelpful_count += 1
        fact.save()
        audit.record(caller, "UPDATE", "MEMORY_FACT", fact.id, f"feedback {value}", workspace_id=scope.workspace_id)
    return fact_vo(fact)


def forget(config: Config, scope: Scope, caller: Caller, fact_id: int) -> dict[str, Any]:
    """Mark a fact forgotten and rebuild MEMORY.md from the facts still active."""
    with database.atomic():
        fact = get_fact(scope, fact_id)
        if fact.status != "forgotten":
            forget_row(fact)
            audit.record(caller, "DELETE", "MEMORY_FACT", fact.id, f"forgot {fact.key}", workspace_id=scope.workspace_id)
    store.write_projection(config, scope)
    return fact_vo(fact)


def edit(config: Config, scope: Scope, caller: Caller, fact_id: int, statement: str) -> dict[str, Any]:
    """Rewrite an active fact's statement (marked user-edited) and rebuild MEMORY.md."""
    with database.atomic():
        fact = get_fact(scope, fact_id)
        if fact.status != "active":
            raise Conflict("Only an active fact can be edited")
        fact.statement, fact.user_edited, fact.update_time = statement.strip(), True, utcnow()
        fact.save()
        audit.record(caller, "UPDATE", "MEMORY_FACT", fact.id, f"edited {fact.key}", workspace_id=scope.workspace_id)
    store.write_projection(config, scope)
    return fact_vo(fact)


def contradictions(scope: Scope) -> list[dict[str, Any]]:
    """Open contradictions of the scope, oldest first."""
    q = Contradiction.select().where(scope.where(Contradiction) & (Contradiction.status == "open"))
    return [contradiction_vo(c) for c in q.order_by(Contradiction.id)]


async def resolve(
    router: LlmRouter, config: Config, scope: Scope, caller: Caller, agent: Any, contradiction_id: int, resolution: str, statement: str | None
) -> dict[str, Any]:
    """Settle a contradiction: keep one side, merge both into fact A, or keep both (IGNORE)."""
    c = Contradiction.get_or_none((Contradiction.id == contradiction_id) & scope.where(Contradiction))
    if c is None:
        raise NotFound("Contradiction not found")
    if c.status != "open":
        raise Conflict("The contradiction is already resolved")
    merged = None
    if resolution == "MERGE":
        a, b = Fact.get_by_id(c.fact_a_id), Fact.get_by_id(c.fact_b_id)
        if statement:
            merged = statement
        else:
            text, _ = await llm.ask(
                router,
                llm.targets_for(agent),
                llm.MERGE_SYSTEM,
                json.dumps({"key": a.key, "older": a.statement, "newer": b.statement}),
                500,
                scope=scope,
            )
            merged = " ".join(text.strip().strip('"').split())[:STATEMENT_MAX]
            if not merged:
                raise LlmFailure("The memory model answered an empty merge")
    with database.atomic():
        c = Contradiction.get_by_id(c.id)
        if c.status != "open":
            raise Conflict("The contradiction is already resolved")
        a, b = Fact.get_by_id(c.fact_a_id), Fact.get_by_id(c.fact_b_id)
        if resolution in ("KEEP_A", "MERGE"):
            forget_row(b)
        elif resolution == "KEEP_B":
            forget_row(a)
        if merged is not None:
            a.statement, a.source, a.update_time = merged, "merge", utcnow()
            a.mentions += b.mentions
            a.confidence = max(float(a.confidence), float(b.confidence))
            a.save()
        c.status, c.resolution, c.resolve_time = "resolved", resolution, utcnow()
        c.save()
        audit.record(caller, "UPDATE", "MEMORY_CONTRADICTION", c.id, f"resolved {resolution}", workspace_id=scope.workspace_id)
    store.write_projection(config, scope)
    return contradiction_vo(c)


def candidates(scope: Scope, limit: int) -> list[dict[str, Any]]:
    """Active facts ranked by recall score, with the score's parts."""
    return [{"fact": fact_vo(f), "key": f.key, "statement": f.statement, **detail} for f, detail in store.ranked(active(scope))[:limit]]
