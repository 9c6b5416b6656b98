"""Page-type profiles: which page types a KB uses (the generator is told them, edits are checked)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.wiki.kbs import get_kb
from platform_server.features.wiki.models import KnowledgeBase
from platform_server.features.wiki.schemas import PageTypeProfile
from platform_server.web.bodies import first_validation_error
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest

DEFAULT_PROFILE: dict[str, Any] = {
    "defaultType": "concept",
    "pageTypes": [
        {"name": "overview", "description": "What the knowledge base covers and how it is organised"},
        {"name": "entity", "description": "A person, organisation, product, place or thing"},
        {"name": "concept", "description": "An idea, method or term, explained"},
        {"name": "topic", "description": "A broader subject that ties several pages together"},
        {"name": "summary", "description": "A summary of one source material"},
        {"name": "source", "description": "Facts about a source: author, date, kind"},
        {"name": "synthesis", "description": "Conclusions drawn across several sources"},
        {"name": "howto", "description": "Steps to get something done"},
        {"name": "faq", "description": "Questions with their answers"},
        {"name": "log", "description": "A dated record of changes or events"},
    ],
}


def profile_of(kb: KnowledgeBase) -> dict[str, Any]:
    return (kb.config or {}).get("pageTypeProfile") or DEFAULT_PROFILE


def type_names(kb: KnowledgeBase) -> list[str]:
    return [t["name"] for t in profile_of(kb)["pageTypes"]]


def check_type(kb: KnowledgeBase, page_type: str) -> str:
    value = page_type.strip().lower()
    names = type_names(kb)
    if value not in names:
        raise BadRequest(f"pageType: must be one of {', '.join(names)}")
    return value


def _answer(kb: KnowledgeBase) -> dict[str, Any]:
    custom = (kb.config or {}).get("pageTypeProfile") is not None
    return {"kbId": str(kb.id), "builtin": not custom, **profile_of(kb)}


def get(caller: Caller, kb_id: int) -> dict[str, Any]:
    return _answer(get_kb(caller, kb_id))


def parse(data: Any) -> PageTypeProfile:
    if not isinstance(data, dict):
        raise BadRequest("Request body must be a JSON object")
    try:
        return PageTypeProfile.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(first_validation_error(exc).removeprefix("body: "))


def validate(caller: Caller, kb_id: int, data: Any) -> dict[str, Any]:
    """Check a profile without saving: `{valid, error}`."""
    get_kb(caller, kb_id)
    try:
        parse(data)
    except BadRequest as exc:
        return {"valid": False, "error": exc.msg}
    return {"valid": True, "error": None}


def _store(caller: Caller, kb_id: int, profile: dict[str, Any] | None, what: str) -> dict[str, Any]:
    with database.atomic():
        kb = get_kb(caller, kb_id)
        cfg = dict(kb.config or {})
        if profile is None:
            cfg.pop("pageTypeProfile", None)
        else:
            cfg["pageTypeProfile"] = profile
        kb.config, kb.update_time = cfg, utcnow()
        kb.save()
        audit.record(caller, "UPDATE", "WIKI_KB", kb.id, f"page-type profile of {kb.name}: {what}")
    return _answer(kb)


def save(caller: Caller, kb_id: int, data: Any) -> dict[str, Any]:
    profile = parse(data)
    return _store(caller, kb_id, profile.model_dump(), f"{len(profile.pageTypes)} types")


def reset(caller: Caller, kb_id: int) -> dict[str, Any]:
    return _store(caller, kb_id, None, "reset to the built-in default")
