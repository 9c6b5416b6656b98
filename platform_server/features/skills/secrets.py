"""Per-skill secrets: AES-GCM at rest with a key kept in the data dir; only masked previews go out."""

from __future__ import annotations

import base64
import os
import re
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.skills.models import Skill, SkillSecret
from platform_server.sealed import KEY_FILE, load_key  # noqa: F401 - one key scheme for every secret at rest
from platform_server.serialize import Fields, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, NotFound
from platform_server.web.ownership import require_creator_or_admin

KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}$"  # the document states it (schemas.SecretBody)
KEY_RE = re.compile(KEY_PATTERN)
KEY_RULE = "letters, digits, '_', '.', '-' (at most 128), starting with a letter or '_'"
MAX_VALUE = 16 * 1024
MAX_PER_SKILL = 100


def _aad(skill_id: int, key: str) -> bytes:
    return f"skill:{skill_id}:{key}".encode()


def encrypt(master: bytes, skill_id: int, key: str, value: str) -> str:
    nonce = os.urandom(12)
    sealed = AESGCM(master).encrypt(nonce, value.encode("utf-8"), _aad(skill_id, key))
    return base64.b64encode(nonce + sealed).decode("ascii")


def decrypt(master: bytes, skill_id: int, key: str, stored: str) -> str:
    """The plaintext of one secret (for runtimes that inject it; never for an HTTP answer)."""
    raw = base64.b64decode(stored)
    return AESGCM(master).decrypt(raw[:12], raw[12:], _aad(skill_id, key)).decode("utf-8")


def mask(value: str) -> str:
    """`…abcd` (the last 4 characters) for long values; short ones reveal nothing."""
    if len(value) >= 12:
        return f"…{value[-4:]}"
    return "••••"


_to_dict = Fields(
    key="key",
    preview="preview",
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


def list_secrets(skill: Skill) -> list[dict[str, Any]]:
    rows = SkillSecret.select().where(SkillSecret.skill == skill.id).order_by(SkillSecret.key)
    return [_to_dict(r) for r in rows]


def keys_by_skill(skill_ids: list[int]) -> dict[int, set[str]]:
    """Secret keys set per skill (values are not read)."""
    out: dict[int, set[str]] = {sid: set() for sid in skill_ids}
    if skill_ids:
        q = SkillSecret.select(SkillSecret.skill, SkillSecret.key).where(SkillSecret.skill.in_(skill_ids))
        for row in q:
            out.setdefault(row.skill_id, set()).add(row.key)
    return out


def check_key(key: str) -> str:
    if not KEY_RE.fullmatch(key or ""):  # fullmatch: `$` alone would take a trailing newline
        raise BadRequest(f"key: {KEY_RULE}")
    return key


def upsert(caller: Caller, master: bytes, skill: Skill, key: str, value: str) -> dict[str, Any]:
    """Set a secret, or delete it when value is empty; answers the key's masked state."""
    check_key(key)
    require_creator_or_admin(caller, skill.creator_user_id, "skill")
    if len(value) > MAX_VALUE:
        raise BadRequest(f"value: at most {MAX_VALUE} characters")
    with database.atomic():
        row = SkillSecret.get_or_none((SkillSecret.skill == skill.id) & (SkillSecret.key == key))
        if value == "":
            if row is not None:
                row.delete_instance()
                audit.record(caller, "DELETE", "SKILL_SECRET", skill.id, f"secret {key} of skill {skill.name}")
            return {"key": key, "preview": None, "deleted": row is not None}
        sealed = encrypt(master, skill.id, key, value)
        if row is None:
            if SkillSecret.select().where(SkillSecret.skill == skill.id).count() >= MAX_PER_SKILL:
                raise Conflict(f"A skill holds at most {MAX_PER_SKILL} secrets")  # the stored ones decide: a 409
            row = SkillSecret.create(skill=skill.id, key=key, value=sealed, preview=mask(value))
            audit.record(caller, "CREATE", "SKILL_SECRET", skill.id, f"secret {key} of skill {skill.name}")
        else:
            row.value, row.preview, row.update_time = sealed, mask(value), utcnow()
            row.save()
            audit.record(caller, "UPDATE", "SKILL_SECRET", skill.id, f"secret {key} of skill {skill.name}")
    return {**_to_dict(row), "deleted": False}


def delete(caller: Caller, skill: Skill, key: str) -> None:
    require_creator_or_admin(caller, skill.creator_user_id, "skill")
    with database.atomic():
        deleted = SkillSecret.delete().where((SkillSecret.skill == skill.id) & (SkillSecret.key == key)).execute()
        if not deleted:
            raise NotFound("Secret not found")
        audit.record(caller, "DELETE", "SKILL_SECRET", skill.id, f"secret {key} of skill {skill.name}")


def values_for(master: bytes, skill_id: int) -> dict[str, str]:
    """Decrypted secrets of one skill, for a runtime that injects them into tool environments."""
    rows = SkillSecret.select().where(SkillSecret.skill == skill_id)
    return {r.key: decrypt(master, skill_id, r.key, r.value) for r in rows}


def env_for(master: bytes, skills: list[Skill]) -> dict[str, str]:
    """The decrypted secrets of these skills as environment variables (for tool executions only)."""
    env: dict[str, str] = {}
    if not skills:
        return env
    rows = SkillSecret.select().where(SkillSecret.skill.in_([s.id for s in skills])).order_by(SkillSecret.id)
    for row in rows:
        try:
            env[row.key] = decrypt(master, row.skill_id, row.key, row.value)
        except Exception:  # noqa: BLE001 - a secret sealed with another key is skipped, never shown
            continue
    return env
