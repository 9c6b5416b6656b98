"""Memory files of one scope (user, agent, endUserId): the MEMORY.md projection, daily notes, DREAMS.md.

Layout inside the agent's private folder `agents/<agentId>/private` (outside the shared workspace, so no
files route, tool, export or prompt file reaches it; all writes go through the confined file helpers):
`memory/people/<userId>/` for the user's own memory of the agent and
`memory/people/<userId>/users/<endUserKey>/` for one end user, each holding `MEMORY.md`,
`daily/YYYY-MM-DD.md` and `DREAMS.md`. The shared, hand-written `MEMORY.md` at the workspace root
(and `memory/users/<key>/MEMORY.md`) of the workspace stay the agent's own notes; the chat runtime sends both.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from platform_server.config import Config
from platform_server.db import utcnow
from platform_server.features.agents import files
from platform_server.features.agents import service as agents
from platform_server.features.memory.models import Fact
from platform_server.web.errors import ApiError, BadRequest, Conflict, NotFound

PROJECTION = "MEMORY.md"
DIARY = "DREAMS.md"
PROJECTION_MAX_LINES = 300
PROMPT_CAP = 16_000
NOTE_CAP = 256 * 1024  # bytes of one daily note or the diary read back
_COMMENT = re.compile(r"<!--.*?-->", re.S)


@dataclass(frozen=True)
class Scope:
    """Whose memory of which agent: facts, files and reports are keyed by it."""

    workspace_id: int
    user_id: int
    agent_id: int
    end_user_id: str = ""  # "" = the user's own memory, no end user

    def where(self, model: Any) -> Any:
        """A peewee condition selecting the scope's rows of a model with the scope columns."""
        return (
            (model.user_id == self.user_id)
            & (model.agent_id == self.agent_id)
            & (model.end_user_id == self.end_user_id)
            & (model.workspace_id == self.workspace_id)
        )

    def folder(self) -> str:
        """The scope's folder relative to the agent's workspace."""
        rel = f"memory/people/{int(self.user_id)}"
        if self.end_user_id:
            rel += "/users/" + agents.end_user_key(self.end_user_id)
        return rel

    def path(self, name: str) -> str:
        return f"{self.folder()}/{name}"


def zone(name: str) -> dt.tzinfo:
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return dt.timezone.utc


def local_now(config: Config, now: dt.datetime | None = None) -> dt.datetime:
    """Now (aware) in the dreaming timezone."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.astimezone(zone(config.dreaming_timezone or config.timezone))


# ---- scores -----------------------------------------------------------------------


def score_detail(fact: Fact, now: dt.datetime | None = None) -> dict[str, float]:
    """Recall score of a fact: recency (14-day half-life), frequency, helpfulness, confidence."""
    now = now or utcnow()
    age_days = max(0.0, (now - fact.update_time).total_seconds() / 86400)
    recency = 0.5 ** (age_days / 14)
    frequency = 1 - 1 / (1 + max(1, fact.mentions))
    helpfulness = (fact.helpful_count + 1) / (fact.helpful_count + fact.unhelpful_count + 2)
    confidence = min(1.0, max(0.0, float(fact.confidence)))
    score = 0.35 * recency + 0.25 * frequency + 0.25 * helpfulness + 0.15 * confidence
    return {
        "score": round(score, 4),
        "recency": round(recency, 4),
        "frequency": round(frequency, 4),
        "helpfulness": round(helpfulness, 4),
        "confidence": round(confidence, 4),
    }


def ranked(facts: Iterable[Fact], now: dt.datetime | None = None) -> list[tuple[Fact, dict[str, float]]]:
    """Facts with their score detail, best first (ties by key)."""
    rows = [(f, score_detail(f, now)) for f in facts]
    return sorted(rows, key=lambda r: (-r[1]["score"], r[0].key, r[0].id))


# ---- the projection ---------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render(scope: Scope, facts: list[Fact]) -> str:
    """MEMORY.md from active facts: one line per fact, metadata in an HTML comment."""
    by_key: dict[str, int] = {}
    for f in facts:
        by_key[f.key] = by_key.get(f.key, 0) + 1
    lines = [
        "# Memory",
        "",
        "<!-- Generated from remembered facts. Change entries through the memory API (edit a dream "
        "report entry, forget a fact); direct edits are replaced when the memory is rebuilt. -->",
        "",
    ]
    for f, detail in ranked(facts)[:PROJECTION_MAX_LINES]:
        meta = [f"id={f.id}", f"confidence={f.confidence:.2f}", f"score={detail['score']:.2f}"]
        if f.user_edited:
            meta.append("user-edited")
        disputed = " (disputed)" if by_key[f.key] > 1 else ""
        lines.append(f"- **{f.key}**: {_one_line(f.statement)}{disputed} <!-- {' '.join(meta)} -->")
    return "\n".join(lines) + "\n"


def write_projection(config: Config, scope: Scope) -> int:
    """Rebuild the scope's MEMORY.md from its active facts; returns how many facts it holds."""
    facts = list(Fact.select().where(scope.where(Fact) & (Fact.status == "active")))
    root = agents.private_dir(config, scope.agent_id)
    if not facts:
        try:
            files.delete_path(root, scope.path(PROJECTION))
        except ApiError:
            pass  # nothing to remove
        return 0
    files.write_bytes(root, scope.path(PROJECTION), render(scope, facts).encode("utf-8"))
    return len(facts)


def read(config: Config, scope: Scope, name: str) -> str:
    """A memory file of the scope as text ("" when absent)."""
    root = agents.private_dir(config, scope.agent_id)
    return files.read_text_capped(root, scope.path(name), NOTE_CAP) or ""


def prompt_text(config: Config, agent_id: int, user_id: int, end_user_id: str | None) -> str:
    """The user's memory of the agent as the chat runtime sends it (comments stripped)."""
    root = agents.agent_root(config, agent_id) / "private"
    if not root.is_dir():
        return ""
    scope = Scope(0, user_id, agent_id, end_user_id or "")
    text = files.read_text_capped(root, scope.path(PROJECTION), PROMPT_CAP) or ""
    text = _COMMENT.sub("", text)
    body = "\n".join(line.rstrip() for line in text.splitlines() if line.strip() and line.strip() != "# Memory")
    return body.strip()


def append(config: Config, scope: Scope, rel_name: str, text: str) -> str:
    """Append text to a memory file of the scope (created when missing); returns its relative path."""
    root = agents.private_dir(config, scope.agent_id)
    rel = scope.path(rel_name)
    current = files.read_text_capped(root, rel, NOTE_CAP * 4) or ""
    if current and not current.endswith("\n"):
        current += "\n"
    files.write_bytes(root, rel, (current + text).encode("utf-8"))
    return rel


def daily_name(day: dt.date) -> str:
    return f"daily/{day.isoformat()}.md"


def daily_notes(config: Config, scope: Scope, since: dt.date | None, cap: int = 24_000) -> str:
    """The scope's daily notes from `since` on (the last 7 days at most), newest kept within cap."""
    root = agents.private_dir(config, scope.agent_id)
    folder: Path = root.joinpath(*scope.path("daily").split("/"))
    if not folder.is_dir():
        return ""
    today = local_now(config).date()
    oldest = today - dt.timedelta(days=7)
    if since is not None and since > oldest:
        oldest = since
    parts: list[str] = []
    for rel, _ in files.walk_files(root, scope.path("daily")):
        stem = rel.rsplit("/", 1)[-1].removesuffix(".md")
        try:
            day = dt.date.fromisoformat(stem)
        except ValueError:
            continue
        if day >= oldest:
            text = files.read_text_capped(root, rel, NOTE_CAP) or ""
            parts.append(f"### {stem}\n{text.strip()}")
    joined = "\n\n".join(sorted(parts))
    return joined[-cap:] if len(joined) > cap else joined


def daily_count(config: Config, scope: Scope) -> int:
    root = agents.agent_root(config, scope.agent_id) / "private"
    if not (root / scope.folder() / "daily").is_dir():
        return 0
    return sum(1 for _ in files.walk_files(root, scope.path("daily")))


def clean_key(raw: Any) -> str | None:
    """A fact key: lower-case words joined by `_` (letters, digits, `_.-`), at most 100 characters."""
    if not isinstance(raw, str):
        return None
    key = re.sub(r"[^\w.-]+", "_", raw.strip().lower(), flags=re.UNICODE).strip("_.-")
    return key[:100] or None


def clean_confidence(raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return 0.7
    return 0.7 if math.isnan(value) else min(1.0, max(0.0, value))


# ---- the scope's files for their owner (the console's memory files) ------------------------


def _scope_rel(scope: Scope, rel: str) -> str:
    """A path inside the scope's folder (never into an end user's sub-folder from the user's own scope)."""
    clean = "/".join(files.split_rel(rel))
    if not scope.end_user_id and (clean == "users" or clean.startswith("users/")):  # not in this scope: there is no such file
        raise NotFound("path: end users' memory is read with endUserId")
    return clean


def list_files(config: Config, scope: Scope) -> list[dict[str, Any]]:
    """The scope's memory files (MEMORY.md, daily notes, DREAMS.md), paths relative to the scope folder."""
    root = agents.private_dir(config, scope.agent_id)
    prefix = scope.folder() + "/"
    out = []
    for rel, st in files.walk_files(root, scope.folder()):
        name = rel[len(prefix) :]
        if not scope.end_user_id and name.startswith("users/"):
            continue
        out.append({**files.file_info(name, st), "editable": name != PROJECTION})
    return sorted(out, key=lambda f: f["path"])


def read_file(config: Config, scope: Scope, rel: str) -> dict[str, Any]:
    name = _scope_rel(scope, rel)
    data = files.read_bytes(agents.private_dir(config, scope.agent_id), scope.path(name), NOTE_CAP)
    return {"path": name, "content": data.decode("utf-8", "replace"), "editable": name != PROJECTION}


def write_file(config: Config, scope: Scope, rel: str, text: str) -> dict[str, Any]:
    """Replace a daily note or DREAMS.md; MEMORY.md is rebuilt from the facts, so it is not written here."""
    name = _scope_rel(scope, rel)
    if name == PROJECTION:  # a well-formed path, but the file is the facts' projection: a conflict, not bad input
        raise Conflict("path: MEMORY.md is rebuilt from the facts; confirm, edit or forget a fact instead")
    if not name.endswith(".md"):
        raise BadRequest("path: memory files are Markdown (.md)")
    data = text.encode("utf-8")
    if len(data) > NOTE_CAP:
        raise BadRequest(f"content: at most {NOTE_CAP} bytes")
    files.write_bytes(agents.private_dir(config, scope.agent_id), scope.path(name), data)
    return {"path": name, "size": len(data), "editable": True}
