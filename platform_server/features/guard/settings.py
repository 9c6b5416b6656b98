"""Global guard settings: on/off with default decisions per severity, and the file guard's protected paths."""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from typing import Any, Mapping

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.guard.models import GuardSetting
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest

SEVERITIES = ("low", "medium", "high", "critical")
SEVERITY_RANK = {s: i for i, s in enumerate(SEVERITIES)}
DECISIONS = ("allow", "ask", "deny")
DECISION_RANK = {d: i for i, d in enumerate(DECISIONS)}  # more restrictive is higher
FILE_TOOLS = frozenset({"read_file", "write_file", "list_files"})

DEFAULT_CONFIG: dict[str, Any] = {
    "enabled": True,
    "defaultDecisions": {"low": "allow", "medium": "allow", "high": "ask", "critical": "ask"},
}
DEFAULT_FILE_PATTERNS = [
    ".env",
    "**/.env",
    "**/.env.*",
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/id_rsa*",
    "**/id_ed25519*",
    "**/.ssh/**",
    "**/.aws/**",
    "**/.git/**",
    "**/secrets/**",
    "**/credentials*",
    "**/*.keystore",
]
DEFAULT_FILE_GUARD: dict[str, Any] = {"enabled": True, "patterns": DEFAULT_FILE_PATTERNS}
MAX_PATTERNS = 200
MAX_PATTERN_LENGTH = 200


def _load(key: str, default: dict[str, Any]) -> dict[str, Any]:
    row = GuardSetting.get_or_none(GuardSetting.key == key)
    value = dict(default)
    if row is not None and isinstance(row.value, dict):
        value.update(row.value)
    return value


def _save(key: str, value: dict[str, Any]) -> None:
    GuardSetting.insert(key=key, value=value, update_time=utcnow()).on_conflict(
        conflict_target=[GuardSetting.key], update={GuardSetting.value: value, GuardSetting.update_time: utcnow()}
    ).execute()


def get_config() -> dict[str, Any]:
    """`{enabled, defaultDecisions: {low, medium, high, critical}}`."""
    value = _load("config", DEFAULT_CONFIG)
    decisions = dict(DEFAULT_CONFIG["defaultDecisions"])
    decisions.update(value.get("defaultDecisions") or {})
    return {"enabled": bool(value.get("enabled", True)), "defaultDecisions": decisions}


def put_config(caller: Caller, enabled: bool | None, default_decisions: Mapping[str, str] | None) -> dict[str, Any]:
    """Sparse update of the guard config; critical can never default to allow."""
    current = get_config()
    decisions = dict(current["defaultDecisions"])
    for sev, decision in (default_decisions or {}).items():
        if sev not in SEVERITIES:
            raise BadRequest(f"defaultDecisions.{sev}: unknown severity (low, medium, high, critical)")
        if decision not in DECISIONS:
            raise BadRequest(f"defaultDecisions.{sev}: must be one of allow, ask, deny")
        decisions[sev] = decision
    if decisions["critical"] == "allow":
        raise BadRequest("defaultDecisions.critical: critical can never be allow")
    value = {"enabled": current["enabled"] if enabled is None else enabled, "defaultDecisions": decisions}
    with database.atomic():
        _save("config", value)
        audit.record(caller, "UPDATE", "GUARD_CONFIG", "config", f"enabled={value['enabled']} defaults={decisions}")
    return value


def get_file_guard() -> dict[str, Any]:
    """`{enabled, patterns}`: paths the file tools may never read, write or list."""
    value = _load("file_guard", DEFAULT_FILE_GUARD)
    return {"enabled": bool(value.get("enabled", True)), "patterns": list(value.get("patterns") or [])}


def put_file_guard(caller: Caller, enabled: bool | None, patterns: list[str] | None) -> dict[str, Any]:
    """Sparse update of the file guard; patterns are globs (`**` spans directories)."""
    current = get_file_guard()
    if patterns is not None:
        patterns = [validate_pattern(i, p) for i, p in enumerate(patterns)]
        if len(patterns) > MAX_PATTERNS:
            raise BadRequest(f"patterns: at most {MAX_PATTERNS} patterns")
    value: dict[str, Any] = {
        "enabled": current["enabled"] if enabled is None else enabled,
        "patterns": current["patterns"] if patterns is None else list(dict.fromkeys(patterns)),
    }
    with database.atomic():
        _save("file_guard", value)
        audit.record(caller, "UPDATE", "GUARD_FILE_CONFIG", "file-guard", f"enabled={value['enabled']} patterns={len(value['patterns'])}")
    return value


def validate_pattern(index: int, pattern: Any) -> str:
    if not isinstance(pattern, str) or not pattern.strip():
        raise BadRequest(f"patterns[{index}]: must be a non-empty string")
    text = pattern.strip().replace("\\", "/")
    if len(text) > MAX_PATTERN_LENGTH or any(ord(c) < 32 for c in text):
        raise BadRequest(f"patterns[{index}]: at most {MAX_PATTERN_LENGTH} printable characters")
    return text.lstrip("/")


@lru_cache(maxsize=512)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """`**/` spans zero or more directories, `**` anything, `*` and `?` stay inside one segment."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("/**", i) and i + 3 == len(pattern):
            out += "(?:/.*)?"
            i += 3
        elif pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out, re.IGNORECASE | re.DOTALL)


def normalize_path(path: str) -> str:
    """A workspace-relative path as the file tools resolve it (`a/../.env` is `.env`)."""
    text = path.replace("\\", "/").strip()
    text = posixpath.normpath("/" + text).lstrip("/")
    return "" if text == "." else text


def protected_by(path: str, patterns: list[str]) -> str | None:
    """The first pattern that protects the path (the path itself or a directory above it), or None."""
    norm = normalize_path(path)
    if not norm:
        return None
    parts = norm.split("/")
    candidates = ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]
    for pattern in patterns:
        regex = glob_regex(pattern)
        if any(regex.fullmatch(c) for c in candidates):
            return pattern
    return None
