"""Skills that learn: after a turn that used a skill and failed, or whose answer the user corrected,
a lesson is appended to the skill's LESSONS.md (bounded, deduplicated); the skill's prompt section
carries its lessons. Only a turn that used a skill counts a use of it (`useCount`, `lastUsedAt`).

A skill is *used* in a turn when one of the turn's tool calls names it: its folder (`skills/<name>/`),
or its name as a whole word in the call's arguments.
"""

from __future__ import annotations

import re
from typing import Any

from platform_server.config import Config
from platform_server.features.agents import files
from platform_server.features.conversations.models import Message
from platform_server.features.skills import service, storage
from platform_server.features.skills.storage import LESSONS_FILE, MAX_LESSONS_BYTES

MAX_LESSONS = 30  # the oldest go first
LESSON_CHARS = 300
PROMPT_LESSONS_CAP = 2000
CORRECTION = re.compile(
    r"^\s*(no\b|nope\b|wrong\b|incorrect\b|that'?s (not|wrong|incorrect)|that is (not|wrong|incorrect)|"
    r"not (quite|right|what)|you (were|are) wrong|(that|it) (didn'?t|did not|doesn'?t|does not) work|actually\b)",
    re.IGNORECASE,
)


def is_correction(text: str) -> bool:
    return bool(CORRECTION.match(text or ""))


def _mentions(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text or "") is not None


def calls_of(rows: list[Any]) -> list[dict[str, Any]]:
    """The tool calls stored on the assistant messages of a turn (each with `result` and `success`)."""
    return [c for m in rows if m.role == "assistant" for c in (m.metadata or {}).get("toolCalls", []) or []]


def used_skills(names: list[str], calls: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Skill name -> the calls that used it, for the skills the turn's calls name."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        hits = [c for c in calls if _mentions(name, str(c.get("arguments") or ""))]
        if hits:
            out[name] = hits
    return out


def _normal(line: str) -> str:
    return " ".join(line.lower().split())


def _line(text: str) -> str:
    text = " ".join(text.split())
    return "- " + (text if len(text) <= LESSON_CHARS else text[:LESSON_CHARS].rstrip() + "...")


def failure_lesson(name: str, call: dict[str, Any]) -> str:
    lines = [ln.strip() for ln in str(call.get("result") or "").splitlines() if ln.strip()]
    said = [ln for ln in lines if not ln.startswith("exit code:")]
    return _line(f"Using {name}, `{call.get('name')}` failed: {(said or lines or ['no output'])[-1]}")


def correction_lesson(name: str, user_text: str) -> str:
    return _line(f'An answer that used {name} was corrected by the user: "{user_text.strip()}"')


def append(config: Config, workspace_id: int, name: str, lines: list[str]) -> int:
    """Add lessons not already there, keeping the last MAX_LESSONS (blocking); returns how many were added."""
    root = storage.skill_dir(config, workspace_id, name)
    current = files.read_text_capped(root, LESSONS_FILE, MAX_LESSONS_BYTES) or ""
    kept = [ln for ln in current.splitlines() if ln.strip()]
    known = {_normal(ln) for ln in kept}
    added = 0
    for line in lines:
        if _normal(line) not in known:
            kept.append(line)
            known.add(_normal(line))
            added += 1
    if added:
        files.write_bytes(root, LESSONS_FILE, ("\n".join(kept[-MAX_LESSONS:]) + "\n").encode("utf-8"))
    return added


def prompt_text(config: Config, workspace_id: int, name: str) -> str:
    """The lessons for the skill's prompt section ("" when there are none); the newest are kept."""
    text = (storage.read_lessons(config, workspace_id, name) or "").strip()
    if not text:
        return ""
    if len(text) > PROMPT_LESSONS_CAP:
        text = text[-PROMPT_LESSONS_CAP:].split("\n", 1)[-1]
    return "Lessons learned with this skill (avoid repeating these mistakes):\n" + text


def after_turn(config: Config, agent: Any, conversation_db_id: int) -> dict[str, list[str]]:
    """Count the uses of the skills the last turn used and record its lessons (blocking).

    Returns skill name -> lessons added (for the caller's audit or logs).
    """
    active = {s.name: s for s in service.active_skills(agent)}
    if not active:
        return {}
    rows = list(Message.select().where(Message.conversation == conversation_db_id).order_by(Message.id.desc()).limit(200))
    rows.reverse()
    users = [i for i, m in enumerate(rows) if m.role == "user" and not (m.metadata or {}).get("command")]
    if not users:
        return {}
    last = users[-1]
    turn_rows = rows[last + 1 :]
    used = used_skills(list(active), calls_of(turn_rows))
    lessons: dict[str, list[str]] = {}
    for name, calls in used.items():
        failed = [c for c in calls if c.get("success") is False]
        if failed:
            lessons.setdefault(name, []).append(failure_lesson(name, failed[-1]))
    user_text = rows[last].content or ""
    if len(users) >= 2 and is_correction(user_text):
        previous = rows[users[-2] + 1 : last]
        for name in used_skills(list(active), calls_of(previous)):
            lessons.setdefault(name, []).append(correction_lesson(name, user_text))
    if used:
        service.mark_used(list(used), agent.workspace_id)
    added: dict[str, list[str]] = {}
    for name, lines in lessons.items():
        if append(config, agent.workspace_id, name, lines):
            added[name] = lines
    return added
