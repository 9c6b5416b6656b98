"""Request bodies of the wiki routes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

from platform_server.ids import NOT_BLANK_PATTERN, WHITESPACE
from platform_server.serialize import View
from platform_server.web.bodies import explained
from platform_server.web.openapi_events import SseEvents

MAX_TOP_K = 50  # the most hits one wiki search answers
# An id in a body: an integer SQLite holds (64 bits), as the document states it (a larger one reached a query as an overflow)
Id64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1, json_schema_extra={"format": "int64"})]


class KbCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    agentIds: list[Id64] | None = Field(default=None, max_length=100)


class KbUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    agentIds: list[Id64] | None = Field(default=None, max_length=100)


LANGUAGE_TAG = explained("^[A-Za-z0-9-]+$", "must be a language tag such as en-US, zh-CN or auto")


class KbConfigUpdate(BaseModel):
    chunkSize: int | None = Field(default=None, ge=200, le=8000)
    chunkOverlap: int | None = Field(default=None, ge=0, le=2000)
    embeddingModelId: Id64 | None = None
    generationModelProvider: str | None = Field(default=None, max_length=100)
    generationModelName: str | None = Field(default=None, max_length=200)
    # a language tag (BCP 47 is ASCII letters, digits and hyphens) or `auto`: the same rule in the document and here
    pageLanguage: str | None = Field(default=None, min_length=2, max_length=20, pattern=LANGUAGE_TAG)
    autoProcess: bool | None = None
    maxChunksPerCall: int | None = Field(default=None, ge=1, le=50)
    pageWriting: Literal["auto", "notes"] | None = None  # "notes": one page per material as it is, no LLM digest


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
    # one of them at least (pages.rename): stated so a client sends only renames that say something
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["newSlug"], "properties": {"newSlug": {"type": "string"}}},
                {"required": ["newTitle"], "properties": {"newTitle": {"type": "string"}}},
            ]
        }
    )

    newSlug: str | None = Field(default=None, min_length=1, max_length=120)
    newTitle: str | None = Field(default=None, min_length=1, max_length=200)


class BatchDelete(BaseModel):
    # at least one slug or id (pages.batch_delete)
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["slugs"], "properties": {"slugs": {"minItems": 1}}},
                {"required": ["ids"], "properties": {"ids": {"minItems": 1}}},
            ]
        }
    )

    # a blank slug is refused rather than dropped: `["", ""]` would otherwise be a valid body that names nothing
    slugs: list[str] = Field(default_factory=list, max_length=200, json_schema_extra={"items": {"type": "string", "minLength": 1}})
    ids: list[Id64] = Field(default_factory=list, max_length=200)

    @field_validator("slugs")
    @classmethod
    def _slugs(cls, v: list[str]) -> list[str]:
        if any(not s for s in v):
            raise ValueError("must not be blank")
        return v


class PermissionRule(BaseModel):
    pageType: str = Field(min_length=1, max_length=40)
    read: Literal["allow", "deny"] = "allow"
    write: Literal["allow", "deny", "approval_required"] = "allow"


# A pipeline's steps as pipelines.CATALOGUE knows them: each kind with its parameters (integers in range, true/false,
# an id) and nothing else. Their order and relations (extract first, each once, a step after the one it needs, chunk
# with embed, an overlap under half the size, a transformation of this KB) are pipelines.validate_definition's.
class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExtractStep(_Step):
    type: Literal["extract"]


class ChunkStep(_Step):
    type: Literal["chunk"]
    size: StrictInt = Field(default=1200, ge=200, le=8000)
    overlap: StrictInt = Field(default=150, ge=0, le=2000)


class EmbedStep(_Step):
    type: Literal["embed"]


class SynthesizeStep(_Step):
    type: Literal["synthesize"]
    maxChunksPerCall: StrictInt = Field(default=8, ge=1, le=50)


class LinkStep(_Step):
    type: Literal["link"]


class TransformStep(_Step):
    type: Literal["transform"]
    transformationId: Annotated[str, Field(pattern=r"^[0-9]+$")] | Annotated[StrictInt, Field(ge=0)]
    saveAsPage: StrictBool = False


PipelineStep = Annotated[ExtractStep | ChunkStep | EmbedStep | SynthesizeStep | LinkStep | TransformStep, Field(discriminator="type")]


class PipelineDraft(BaseModel):
    """Any object to check: the answer lists everything wrong with it (`valid: false`), nothing is refused but a body
    that is no JSON object. A valid one is a PipelineBody."""

    name: Any = None
    description: Any = None
    enabled: Any = None
    steps: Any = None
    yaml: Any = None


class PipelineBody(BaseModel):
    """A definition as JSON (name and steps) or as `yaml` text; no other field (pipelines.validate_definition, which
    lists every error, is what checks it: this model states its rules for the document)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"anyOf": [{"required": ["yaml"], "properties": {"yaml": {"type": "string"}}}, {"required": ["name", "steps"]}]},
    )

    name: str | None = Field(default=None, max_length=100, pattern=explained(NOT_BLANK_PATTERN, "must not be blank"))
    description: str | None = Field(default=None, max_length=2000)
    enabled: StrictBool = True
    steps: list[PipelineStep] | None = Field(default=None, min_length=1, max_length=12)
    yaml: str | None = Field(default=None, max_length=100_000)  # the whole definition as YAML instead


class RawText(BaseModel):
    title: str = Field(min_length=1, max_length=200)
    # no NUL (a NUL makes it binary: text.extract_text refuses it) and not blank (RawTextHandler), one pattern
    text: str = Field(min_length=1, pattern=explained(f"^[^\\x00]*[^\\x00{WHITESPACE}][^\\x00]*$", "must not be blank nor hold a NUL"))


class ResearchStart(BaseModel):
    kbId: Id64
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
    kbId: Id64 | None = None


class TransformationUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    prompt: str | None = Field(default=None, min_length=1, max_length=20_000)


class ApplyRequest(BaseModel):
    # exactly one of rawId or slug (transform.start_apply); a null one is an absent one
    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"required": ["rawId"], "properties": {"rawId": {"type": "integer"}}},
                {"required": ["slug"], "properties": {"slug": {"type": "string"}}},
            ]
        }
    )

    kbId: Id64
    rawId: Id64 | None = None
    slug: str | None = Field(default=None, min_length=1, max_length=120)


class AggregateRequest(BaseModel):
    kbId: Id64


class SaveAsPage(BaseModel):
    slug: str | None = Field(default=None, min_length=1, max_length=120)
    title: str | None = Field(default=None, min_length=1, max_length=200)


PAGE_TYPE_PATTERN = explained(r"^[a-z][a-z0-9_-]{0,39}$", "must be lower-case letters, digits, '-' or '_' (at most 40, starting with a letter)")


class PageTypeSpec(BaseModel):
    name: str = Field(pattern=PAGE_TYPE_PATTERN)
    description: str = Field(default="", max_length=500)


class ProfileDraft(BaseModel):
    """A page-type profile to check without saving it: any JSON object. The answer's `valid` and `error` say whether
    PUT .../page-type-profile (a PageTypeProfile) would take it, so a profile that breaks that schema is a 200 too."""

    model_config = ConfigDict(extra="allow")


class PageTypeProfile(BaseModel):
    # The two rules between values (a default among the types, each type once) are not JSON Schema's to state, so the
    # profile reads them the forgiving way, as the field descriptions say, instead of refusing what the document allows
    defaultType: str = Field(pattern=PAGE_TYPE_PATTERN, description="A page type; one not in pageTypes is added to them")
    pageTypes: list[PageTypeSpec] = Field(min_length=1, max_length=50, description="A name listed twice counts once (the first)")

    @model_validator(mode="after")
    def _consistent(self) -> "PageTypeProfile":
        seen: dict[str, PageTypeSpec] = {}
        for spec in self.pageTypes:
            seen.setdefault(spec.name, spec)
        if self.defaultType not in seen:
            seen[self.defaultType] = PageTypeSpec(name=self.defaultType)
        self.pageTypes = list(seen.values())
        return self


class SearchPreview(BaseModel):
    query: str = Field(min_length=1, max_length=1000)
    topK: int = Field(default=5, ge=1, le=MAX_TOP_K)
    includeArchived: bool = False


# ---- the wiki's SSE events: processing progress (engine.py, reembed.py, watcher.py; GET /wiki/kbs/{kbId}/progress)
# and a research session (research.py; GET /wiki/research/stream/{sessionId}). Documentation only
# (web/openapi_events.py); the streams publish dicts.


class SseWikiMaterialState(View):
    rawId: str
    title: str | None
    status: str
    queued: bool
    error: str | None
    step: str | None = Field(description="the step a processing material is at")


class SseWikiReembedJob(View):
    state: str = Field(description="running | completed | failed | superseded")
    modelId: str
    done: int
    total: int
    error: str | None
    startTime: str | None
    endTime: str | None


class SseWikiSnapshot(View):
    """`snapshot`, the first frame: every material's state."""

    kbId: str
    idle: bool
    counts: dict[str, int]
    total: int
    materials: list[SseWikiMaterialState]
    reembed: SseWikiReembedJob | None


class SseWikiIdle(View):
    """`idle`, the last frame: nothing is processing or queued."""

    type: Literal["idle"]
    kbId: str


class SseWikiMaterial(View):
    """`material`: a material's processing started, ended or was cancelled."""

    type: Literal["material"]
    kbId: str
    rawId: str
    title: str | None
    status: str
    jobId: str | None = None
    pagesWritten: int | None = None
    pagesArchived: int | None = None
    error: str | None = None


class SseWikiStep(View):
    """`step`: one step of a material's processing job (extract, chunk, embed, note, generate, unchanged)."""

    type: Literal["step"]
    kbId: str
    rawId: str
    jobId: str
    step: str
    status: str = Field(description="started | completed | failed")
    at: str
    chars: int | None = None
    chunks: int | None = None
    total: int | None = None
    batch: int | None = None
    pages: int | None = None
    reason: str | None = None
    error: str | None = None
    # a pipeline's step (pipeline_exec.py): its run and what the step reports
    pipelineRunId: str | None = None
    unchanged: bool | None = None
    batches: int | None = None
    failedBatches: int | None = None
    brokenLinks: int | None = None
    transformationRunId: str | None = None
    pageSlug: str | None = None


class SseWikiReembed(SseWikiReembedJob):
    """`reembed`: the knowledge base is re-embedded with a new model."""

    type: Literal["reembed"]
    kbId: str


class SseWikiScan(View):
    """`scan`: a scan of the linked source directory removed or cancelled materials."""

    type: Literal["scan"]
    kbId: str
    added: int
    updated: int
    removed: int
    restored: int
    unchanged: int
    skippedCount: int
    failedCount: int
    skipped: list[dict[str, str]]
    failed: list[dict[str, str]]
    queued: int
    time: str | None


PROGRESS_EVENTS = SseEvents(
    "SseWikiProgress",
    {
        "snapshot": SseWikiSnapshot,
        "material": SseWikiMaterial,
        "step": SseWikiStep,
        "reembed": SseWikiReembed,
        "scan": SseWikiScan,
        "idle": SseWikiIdle,
    },
)


class SseResearchPlan(View):
    """`plan`: the queries the first round searches."""

    sessionId: str
    question: str
    queries: list[str]
    rounds: int


class SseResearchPageHit(View):
    slug: str
    title: str
    score: float


class SseResearchChunkHit(View):
    chunkId: str
    rawTitle: str
    score: float


class SseResearchPage(View):
    slug: str
    title: str


class SseResearchChunk(View):
    chunkId: str
    rawId: str
    rawTitle: str
    label: str = Field(description="how the report cites it (`c1`, `c2`, ...)")


class SseResearchSearch(View):
    """`search`: what one query found."""

    sessionId: str
    round: int
    query: str
    pages: list[SseResearchPageHit]
    chunks: list[SseResearchChunkHit]


class SseResearchFinding(View):
    """`finding`: one finding of a round, with the labels of its sources."""

    sessionId: str
    round: int
    text: str
    sources: list[str]


class SseResearchReport(View):
    """`report`: the written report with what it cites (`pageSlug`: the saved page, when asked)."""

    sessionId: str
    markdown: str
    pages: list[SseResearchPage]
    chunks: list[SseResearchChunk]
    pageSlug: str | None


class SseResearchDone(View):
    """`done`, the last frame."""

    sessionId: str
    pageSlug: str | None
    findings: int


class SseResearchError(View):
    """`error`, the last frame: the research failed or was stopped (`sessionId`), or the request was refused (`code`)."""

    message: str
    sessionId: str | None = None
    code: int | None = None
    errorId: str | None = None


RESEARCH_EVENTS = SseEvents(
    "SseWikiResearch",
    {
        "error": SseResearchError,
        "plan": SseResearchPlan,
        "search": SseResearchSearch,
        "finding": SseResearchFinding,
        "report": SseResearchReport,
        "done": SseResearchDone,
    },
)
