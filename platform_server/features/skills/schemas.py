"""Request bodies of the skills routes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, RootModel, field_validator

from platform_server.features.skills import curator, secrets, snapshots
from platform_server.features.skills import frontmatter as fm
from platform_server.web.bodies import explained
from platform_server.web.secret_fields import secret

MAX_BUNDLE_FILES = 500
SLUG_PATTERN_HINT = "must be a slug of lowercase letters, digits, '-' and '_' (at most 64, starting alphanumeric)"
SLUG_PATTERN = explained(fm.SLUG_RE.pattern, SLUG_PATTERN_HINT)


def _blank_to_none(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value or None


class _SkillFields(BaseModel):
    displayName: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=4000)
    content: str | None = Field(default=None, max_length=256 * 1024, description="The SKILL.md text")
    version: str | None = Field(default=None, max_length=50)
    # OpenAPI 3.0 has no propertyNames: the keys' rule can only be said in words (service.check_bundle_path checks it)
    files: dict[str, str] | None = Field(
        default=None,
        json_schema_extra={"maxProperties": MAX_BUNDLE_FILES},  # service.check_bundle
        description="Bundle files (relative path -> text); on update, replaces all bundle files. Each key is a relative "
        "path: no backslash, control character, leading '/' or drive (C:), no '..' name, each name at most 255 bytes, the path at "
        "most 1024 bytes and 32 names, neither SKILL.md nor LESSONS.md (a 400 names the key)",
    )

    @field_validator("displayName", "version")
    @classmethod
    def _strip(cls, v: str | None) -> str | None:
        return _blank_to_none(v)

    @field_validator("files")
    @classmethod
    def _files(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        if v is not None and len(v) > MAX_BUNDLE_FILES:
            raise ValueError(f"at most {MAX_BUNDLE_FILES} files")
        return v


class SkillCreate(_SkillFields):
    name: str | None = Field(
        default=None,
        pattern=SLUG_PATTERN,
        description="Slug; default: the front matter's `name:` made a slug, else the displayName's, else `skill`",
    )
    skillType: Literal["custom"] | None = Field(default=None, description="Only custom skills are created here")
    enabled: bool = True


class SkillUpdate(_SkillFields):
    # a new name is a slug as on create (service.update checks it too); empty keeps the name
    name: str | None = Field(default=None, pattern=explained(f"^(|{fm.SLUG_RE.pattern[1:-1]})$", SLUG_PATTERN_HINT))
    enabled: bool | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        return _blank_to_none(v)


class ToggleBody(BaseModel):
    enabled: bool | None = Field(default=None, description="Absent: flip")


class PinBody(BaseModel):
    pinned: bool | None = Field(default=None, description="Absent: flip")


class ArchiveBody(BaseModel):
    force: bool = Field(default=False, description="Archive even when enabled agents are bound (also ?force=true)")


class ExportBody(BaseModel):
    agentId: int = Field(gt=0, lt=2**63)


class FileText(BaseModel):
    content: str = Field(max_length=1024 * 1024, description="The file's text")


class SecretBody(BaseModel):
    key: str = Field(pattern=explained(secrets.KEY_PATTERN, secrets.KEY_RULE))
    value: Annotated[str, secret(1, empty_means_remove=True)] = Field(default="", max_length=16 * 1024, description="Empty deletes the secret")


class InstallStart(BaseModel):
    url: str | None = Field(default=None, max_length=2048, description="http(s) URL of a skill ZIP")
    slug: str | None = Field(default=None, max_length=128, description="A skill of the configured hub")
    overwrite: bool = Field(default=False, description="Replace an installed skill of the same name")

    @field_validator("url", "slug")
    @classmethod
    def _strip(cls, v: str | None) -> str | None:
        return _blank_to_none(v)


class SynthesizeBody(BaseModel):
    conversationId: str = Field(min_length=1, max_length=128)
    name: str | None = Field(default=None, max_length=64)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        return _blank_to_none(v)


class InstantiateBody(BaseModel):
    # blank or absent: the template's own name (as the update's name rule says it)
    name: str | None = Field(default=None, max_length=64, pattern=explained(f"^(|{fm.SLUG_RE.pattern[1:-1]})$", SLUG_PATTERN_HINT))

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        return _blank_to_none(v)


class ActivateBody(BaseModel):
    active: bool = Field(description="true: scheduled scans really archive; false: they only preview")


class ConsolidateBody(BaseModel):
    enabled: bool = Field(description="Merge near-duplicates through the default chat model")


class SkillIds(RootModel[list[Annotated[str, Field(pattern=curator.SKILL_ID_PATTERN)]]]):
    """A JSON array of 1-500 skill ids (strings of digits; curator.parse_ids)."""

    root: list[Annotated[str, Field(pattern=curator.SKILL_ID_PATTERN)]] = Field(min_length=1, max_length=curator.MAX_BULK)


class SnapshotBody(BaseModel):
    reason: str | None = Field(default=None, max_length=snapshots.MAX_REASON)


class PromoteBody(BaseModel):
    name: str | None = Field(  # routines.promote checks it with fm.check_slug (empty: the model's)
        default=None,
        max_length=64,
        pattern=explained(f"^(|{fm.SLUG_RE.pattern[1:-1]})$", SLUG_PATTERN_HINT),
        description="Slug of the new skill; default: the model's",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        return (v or "").strip() or None
