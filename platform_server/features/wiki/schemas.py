"""Request bodies of the wiki routes."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

MAX_TOP_K = 50  # the most hits one wiki search answers


class KbCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    agentIds: list[int] | None = Field(default=None, max_length=100)


class KbUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    agentIds: list[int] | None = Field(default=None, max_length=100)


class KbConfigUpdate(BaseModel):
    chunkSize: int | None = Field(default=None, ge=200, le=8000)
    chunkOverlap: int | None = Field(default=None, ge=0, le=2000)
    embeddingModelId: int | None = None
    generationModelProvider: str | None = Field(default=None, max_length=100)
    generationModelName: str | None = Field(default=None, max_length=200)
    pageLanguage: str | None = Field(default=None, min_length=2, max_length=20)
    autoProcess: bool | None = None
    maxChunksPerCall: int | None = Field(default=None, ge=1, le=50)
    pageWriting: Literal["auto", "notes"] | None = None  # "notes": one page per material as it is, no LLM digest

    @field_validator("pageLanguage")
    @classmethod
    def _lang(cls, v: str | None) -> str | None:
        if v is not None and not all(c.isalnum() or c == "-" for c in v):
            raise ValueError("must be a language tag such as en-US, zh-CN or auto")
        return v


class EnrichRequest(BaseModel):
    instructions: str = Field(default="", max_length=2000)


MAX_MARKDOWN = 200_000


class PageEdit(BaseModel):
    markdown: str = Field(max_length=MAX_MARKDOWN)
    title: str | None = Field(default=None, min_length=1, max_length=200)
    pageType: str | None = Field(default=None, min_length=1, max_length=40)

    @model_validator(mode="before")
    @classmethod
    def _content(cls, data: Any) -> Any:
        # the original console sends the page text as `content` (its name for `markdown`)
        if isinstance(data, dict) and "markdown" not in data and "content" in data:
            data = {**{k: v for k, v in data.items() if k != "content"}, "markdown": data["content"]}
        return data


class RenameRequest(BaseModel):
    newSlug: str | None = Field(default=None, min_length=1, max_length=120)
    newTitle: str | None = Field(default=None, min_length=1, max_length=200)


class BatchDelete(BaseModel):
    slugs: list[str] = Field(default_factory=list, max_length=200)
    ids: list[int] = Field(default_factory=list, max_length=200)

    @field_validator("slugs")
    @classmethod
    def _slugs(cls, v: list[str]) -> list[str]:
        return [s for s in v if s]


class PermissionRule(BaseModel):
    pageType: str = Field(min_length=1, max_length=40)
    read: Literal["allow", "deny"] = "allow"
    write: Literal["allow", "deny", "approval_required"] = "allow"


class PipelineBody(BaseModel):
    name: str | None = Field(default=None, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    enabled: bool | None = None
    steps: Any = None
    yaml: str | None = Field(default=None, max_length=100_000)  # the whole definition as YAML instead


class RawText(BaseModel):
    title: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1)


class ResearchStart(BaseModel):
    kbId: int
    question: str = Field(min_length=3, max_length=2000)
    rounds: int = Field(default=2, ge=1, le=5)
    saveAsPage: bool = False


class SourceDirectoryRequest(BaseModel):
    path: str | None = Field(default=None, max_length=4096)
    watch: bool = True  # false: linked but paused (scans only on request)


class TransformationBody(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    prompt: str = Field(min_length=1, max_length=20_000)
    kbId: int | None = None


class TransformationUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    prompt: str | None = Field(default=None, min_length=1, max_length=20_000)


class ApplyRequest(BaseModel):
    kbId: int
    rawId: int | None = None
    slug: str | None = Field(default=None, min_length=1, max_length=120)


class AggregateRequest(BaseModel):
    kbId: int


class SaveAsPage(BaseModel):
    slug: str | None = Field(default=None, min_length=1, max_length=120)
    title: str | None = Field(default=None, min_length=1, max_length=200)


_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")


class PageTypeSpec(BaseModel):
    name: str
    description: str = Field(default="", max_length=500)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("must be lower-case letters, digits, '-' or '_' (at most 40, starting with a letter)")
        return v


class PageTypeProfile(BaseModel):
    defaultType: str
    pageTypes: list[PageTypeSpec] = Field(min_length=1, max_length=50)

    @model_validator(mode="after")
    def _consistent(self) -> "PageTypeProfile":
        names = [t.name for t in self.pageTypes]
        if len(set(names)) != len(names):
            raise ValueError("pageTypes: names must be unique")
        if self.defaultType not in names:
            raise ValueError("defaultType: must be one of the pageTypes")
        return self


class SearchPreview(BaseModel):
    query: str = Field(min_length=1, max_length=1000)
    topK: int = Field(default=5, ge=1, le=MAX_TOP_K)
    includeArchived: bool = False
