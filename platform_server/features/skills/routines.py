"""Routines: recurring requests mined from the caller's own messages, and their promotion into skills."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from platform_server.config import Config
from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.models.errors import LlmFailure, failure_text
from platform_server.features.models.runtime import LlmRouter, resolve_targets
from platform_server.features.skills import frontmatter as fm
from platform_server.features.skills import service
from platform_server.features.skills.curator_models import RoutineCandidate
from platform_server.features.skills.models import Skill
from platform_server.features.skills.runtime import blocking
from platform_server.features.usage import meter
from platform_server.integrations.llm.types import ChatMessage, ChatRequest, LlmError
from platform_server.serialize import GIVEN, Fields, ident
from platform_server.serialize import when as iso_time
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    from platform_server.features.models.runtime import LlmRouter

STATUSES = ("open", "dismissed", "promoted")
MAX_MESSAGES = 5_000  # the most recent user messages read by one mining pass
TEXT_CAP = 2_000  # characters of one message that are normalized
EXAMPLE_CAP = 300
MAX_EXAMPLES = 5
MIN_TOKENS = 2  # shorter requests ("hi", "thanks") are never routines
SKIPPED_SOURCES = ("cron",)  # scheduled prompts recur by design

_URL = re.compile(r"https?://\S+|www\.\S+")
_POSSESSIVE = re.compile(r"['\u2019]s\b")
_WORD = re.compile(r"[a-z]+|[\u3040-\u30ff\u3400-\u9fff]+")
_STOP = frozenset(
    "a an and are as at be been but by can could do does did for from get give had has have he her here him his "
    "how i if in into is it its just let me my no not now of on or our please she so some than thank thanks that "
    "the their them then there these they this to up us was we were what when where which who why will with "
    "would you your yours hi hello hey ok okay".split()
)

PROMOTE_SYSTEM = """You turn a request a user makes again and again into a reusable skill for an AI agent.
Write a SKILL.md file: a front matter block, then markdown instructions.

---
name: <short-kebab-case-name>
description: <one sentence: when to use this skill>
---

# <Title>

<Numbered steps and rules another agent can follow to handle this kind of request well every time.
Generalize from the examples; leave out one-off details, names and any secrets.>

Answer with the SKILL.md content only."""


@dataclass(frozen=True)
class Gates:
    window_days: int
    similarity: float
    min_occurrences: int
    min_days: int

    @classmethod
    def of(cls, config: Config) -> "Gates":
        return cls(
            max(1, config.skills_routines_window_days),
            min(1.0, max(0.0, config.skills_routines_similarity)),
            max(2, config.skills_routines_min_occurrences),
            max(1, config.skills_routines_min_days),
        )


def normalize(text: str, stem: bool = True) -> list[str]:
    """Meaningful words of a request in order: lower case, no URLs, numbers, possessives, plurals or stop words.

    CJK runs become character bigrams (they have no spaces between words).
    """
    words: list[str] = []
    clean = _POSSESSIVE.sub("", _URL.sub(" ", text[:TEXT_CAP].lower()))
    for token in _WORD.findall(clean):
        if token[0] >= "\u3040":
            words.extend(token[i : i + 2] for i in range(max(1, len(token) - 1)))
        elif token not in _STOP and len(token) > 1:
            plural = stem and len(token) > 4 and token.endswith("s") and not token.endswith("ss")
            words.append(token[:-1] if plural else token)
    return words


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


@dataclass
class _Cluster:
    tokens: frozenset[str]
    pattern: str
    texts: list[tuple[dt.datetime, str]]

    @property
    def days(self) -> set[dt.date]:
        return {t.date() for t, _ in self.texts}


def _user_messages(caller: Caller, since: dt.datetime) -> list[tuple[dt.datetime, str]]:
    q = (
        Message.select(Message.content, Message.create_time)
        .join(Conversation, on=(Message.conversation == Conversation.id))
        .where(
            (Conversation.workspace_id == caller.workspace_id)
            & (Conversation.user_id == caller.user_id)
            & (Conversation.source.not_in(SKIPPED_SOURCES))
            & (Message.role == "user")
            & (Message.create_time >= since)
        )
        .order_by(Message.create_time.desc(), Message.id.desc())
        .limit(MAX_MESSAGES)
    )
    return [(m.create_time, m.content or "") for m in q]


def _clusters(messages: list[tuple[dt.datetime, str]], threshold: float) -> list[_Cluster]:
    """Group requests whose word sets are similar (each joins the closest cluster at or above the threshold)."""
    clusters: list[_Cluster] = []
    postings: dict[str, list[int]] = {}  # word -> clusters whose first request has it (only those can match)
    for when, text in sorted(messages, key=lambda m: m[0]):
        if text.lstrip().startswith("/"):
            continue  # chat commands such as /approve
        toks = frozenset(normalize(text))
        if len(toks) < MIN_TOKENS:
            continue
        best, score = None, 0.0
        for i in sorted({i for t in toks for i in postings.get(t, ())}):
            s = _jaccard(toks, clusters[i].tokens)
            if s >= threshold and s > score:
                best, score = clusters[i], s
        if best is None:
            for t in toks:
                postings.setdefault(t, []).append(len(clusters))
            clusters.append(_Cluster(toks, " ".join(dict.fromkeys(normalize(text, stem=False))), [(when, text)]))
        else:
            best.texts.append((when, text))
    return [c for c in clusters if len(c.texts) >= 2]


def _examples(texts: list[tuple[dt.datetime, str]]) -> list[str]:
    out: list[str] = []
    for _, text in sorted(texts, key=lambda t: t[0], reverse=True):
        clean = " ".join(text.split())[:EXAMPLE_CAP]
        if clean and clean not in out:
            out.append(clean)
        if len(out) == MAX_EXAMPLES:
            break
    return out


ROUTINE_FIELDS = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    userId=ident("user_id"),
    pattern="pattern",
    examples="examples",
    occurrences="occurrences",
    distinctDays="distinct_days",
    ready=GIVEN,
    status="status",
    skillId=ident("skill_id"),
    firstSeen=iso_time("first_seen"),
    lastSeen=iso_time("last_seen"),
    createTime=iso_time("create_time"),
    updateTime=iso_time("update_time"),
)


def to_dict(c: RoutineCandidate, gates: Gates) -> dict[str, Any]:
    return ROUTINE_FIELDS(c, ready=c.occurrences >= gates.min_occurrences and c.distinct_days >= gates.min_days)


def _mine_q(caller: Caller) -> Any:
    return RoutineCandidate.select().where((RoutineCandidate.workspace_id == caller.workspace_id) & (RoutineCandidate.user_id == caller.user_id))


async def mine(caller: Caller, gates: Gates, now: dt.datetime | None = None) -> dict[str, Any]:
    """Group the caller's recent requests in this workspace; new groups become open candidates, known ones are refreshed."""
    now = now or utcnow()
    messages = _user_messages(caller, now - dt.timedelta(days=gates.window_days))
    clusters = await blocking(_clusters, messages, gates.similarity)  # CPU work, off the IOLoop
    created = updated = 0
    with database.atomic():
        existing = list(_mine_q(caller))
        for c in clusters:
            match, score = None, 0.0
            for cand in existing:
                s = _jaccard(c.tokens, frozenset(cand.tokens or []))
                if s >= gates.similarity and s > score:
                    match, score = cand, s
            times = [t for t, _ in c.texts]
            values = {
                "occurrences": len(c.texts),
                "distinct_days": len(c.days),
                "examples": _examples(c.texts),
                "first_seen": min(times),
                "last_seen": max(times),
            }
            if match is None:
                cand = RoutineCandidate.create(
                    workspace_id=caller.workspace_id, user_id=caller.user_id, pattern=c.pattern, tokens=sorted(c.tokens), **values
                )
                existing.append(cand)
                created += 1
            else:
                RoutineCandidate.update(update_time=utcnow(), **values).where(RoutineCandidate.id == match.id).execute()
                updated += 1
        audit.record(
            caller, "UPDATE", "SKILL_ROUTINE", None, f"routines mined: {len(messages)} requests, {created} new, {updated} refreshed candidates"
        )
    rows = list(_mine_q(caller).order_by(RoutineCandidate.occurrences.desc(), RoutineCandidate.id))
    return {
        "scannedMessages": len(messages),
        "created": created,
        "updated": updated,
        "candidates": [to_dict(r, gates) for r in rows if r.status == "open"],
    }


def listing(caller: Caller, gates: Gates, status: str | None) -> list[dict[str, Any]]:
    """The caller's candidates in this workspace, most frequent first; `status` filters."""
    q = _mine_q(caller)
    if status == "observing":  # the original console's name for open candidates
        status = "open"
    if status is not None:  # an empty value is none of the documented enum's: a 400, not "all"
        if status not in STATUSES:
            raise BadRequest(f"status: must be one of {', '.join(STATUSES)}")
        q = q.where(RoutineCandidate.status == status)
    return [to_dict(c, gates) for c in q.order_by(RoutineCandidate.occurrences.desc(), RoutineCandidate.last_seen.desc())]


def get(caller: Caller, candidate_id: int) -> RoutineCandidate:
    cand = _mine_q(caller).where(RoutineCandidate.id == candidate_id).first()
    if cand is None:
        raise NotFound("Routine candidate not found")
    return cand


def transition(caller: Caller, candidate_id: int, to: str, gates: Gates) -> dict[str, Any]:
    """Dismiss an open candidate, or reopen a dismissed one; audited."""
    allowed_from = {"dismissed": "open", "open": "dismissed"}[to]
    with database.atomic():
        cand = get(caller, candidate_id)
        if cand.status == to:
            return to_dict(cand, gates)
        if cand.status != allowed_from:
            raise Conflict(
                f"Routine candidate is {cand.status}; only {allowed_from} candidates can be {'dismissed' if to == 'dismissed' else 'reopened'}"
            )
        cand.status = to
        cand.update_time = utcnow()
        cand.save()
        audit.record(caller, "UPDATE", "SKILL_ROUTINE", cand.id, f"routine candidate {'dismissed' if to == 'dismissed' else 'reopened'}")
    return to_dict(cand, gates)


def _draft(text: str, fallback: str, description: str, name: str | None) -> dict[str, Any]:
    body = fm.strip_fences(text)
    try:
        doc = fm.parse(body)
    except ApiError:
        doc = fm.SkillDoc({}, body, False)
    if not doc.has_front_matter:
        body = fm.compose({}, body)
    slug = name or fm.slugify(doc.text("name") or fallback) or "routine"
    return service.prepare_new(body, slug, description=doc.text("description") or description)


async def promote(router: LlmRouter, caller: Caller, candidate_id: int, name: str | None, gates: Gates) -> dict[str, Any]:
    """Draft a skill from an open candidate with the default model (no frequency gates); created disabled."""

    cand = get(caller, candidate_id)
    if cand.status != "open":
        raise Conflict(f"Routine candidate is {cand.status}; only open candidates can be promoted")
    if name:
        fm.check_slug(name)
        if service.get_by_name(caller, name) is not None:
            raise Conflict(f"A skill named '{name}' already exists in this workspace")
    examples = "\n".join(f"- {e}" for e in cand.examples) or f"- {cand.pattern}"
    prompt = (
        f"The user asked this {cand.occurrences} times on {cand.distinct_days} different days.\nCommon words: {cand.pattern}\n\nExamples:\n{examples}"
    )
    request = ChatRequest(model="", messages=[ChatMessage("system", PROMOTE_SYSTEM), ChatMessage("user", prompt)], max_tokens=2000, temperature=0.2)
    try:
        with meter.scope("skill_synthesis", caller.workspace_id, caller.user_id):
            _, result = await router.chat(resolve_targets(None, None, []), request)
    except LlmError as exc:
        raise LlmFailure(failure_text(exc, "routine synthesis"))
    if not (result.content or "").strip():
        raise LlmFailure("The model returned no skill")
    fallback = "routine-" + "-".join(cand.pattern.split()[:4])
    values = _draft(result.content, fallback, f"Handles a recurring request: {cand.pattern}"[:4000], name)
    if not name:
        values = service.prepare_new(values["content"], service.free_name(caller, values["name"]))
    with database.atomic():
        cand = get(caller, candidate_id)  # re-read: the model call took a while
        if cand.status != "open":
            raise Conflict(f"Routine candidate is {cand.status}; only open candidates can be promoted")
        skill: Skill = service.create_skill(caller, values, "synthesized", f"routine:{cand.id}", False)
        cand.status = "promoted"
        cand.skill_id = skill.id
        cand.update_time = utcnow()
        cand.save()
        audit.record(caller, "UPDATE", "SKILL_ROUTINE", cand.id, f"routine candidate promoted to skill {skill.name}")
    return {"candidate": to_dict(cand, gates), "skill": service.to_dict(skill, full=True)}
