"""What the LLM Wiki routes answer: the view models of the API document (web/openapi_answers.py).

They only document: the services keep building plain dicts (kbs.to_dict, pages.detail, raw.RAW_FIELDS, ...), and
the test suite checks every answer it receives against these models (tests/helpers/answers.py), so a field added
to a builder fails there until it is added here. Their own module because the wiki has many shapes and
schemas.py holds the request bodies; every name starts with `Wiki` to stay unique in the whole document.
"""

from __future__ import annotations

from pydantic import Field

from platform_server.serialize import View


class WikiKbView(View):
    """A knowledge base (`kbs.to_dict`)."""

    id: str
    workspaceId: str
    name: str
    description: str
    creatorUserId: str | None
    agentIds: list[str] = Field(description="the agents bound to it")
    rawCount: int
    pageCount: int = Field(description="pages not archived")
    sourceDirectory: str | None = Field(description="the folder it is synced from, if any")
    createTime: str | None
    updateTime: str | None


class WikiAgentKbView(WikiKbView):
    """A knowledge base of an agent, with how it is bound."""

    binding: str = Field(description="`primary` (the agent's primaryKbId) or `bound`")


class WikiKbConfigView(View):
    kbId: str
    chunkSize: int
    chunkOverlap: int
    embeddingModelId: str | None
    generationModelProvider: str | None
    generationModelName: str | None
    pageLanguage: str
    autoProcess: bool
    maxChunksPerCall: int
    pageWriting: str


class WikiRawView(View):
    """A raw material (`raw.RAW_FIELDS`); `processingStatus` and `errorMessage` repeat `status` and `error` under the
    original console's names."""

    id: str
    kbId: str
    title: str
    sourceType: str
    fileName: str | None
    contentType: str | None
    sizeBytes: int
    contentHash: str | None
    status: str
    processingStatus: str
    error: str | None
    errorMessage: str | None
    chunkCount: int
    pageCount: int
    sourcePath: str | None
    removed: bool
    textLength: int
    createTime: str | None
    updateTime: str | None
    processedTime: str | None


class WikiProcessView(View):
    kbId: str
    queued: int
    rawIds: list[str]
    force: bool


class WikiStatusCountsView(View):
    """Materials per processing status."""

    pending: int
    processing: int
    completed: int
    failed: int
    partial: int
    cancelled: int


class WikiMaterialStatusView(View):
    rawId: str
    title: str
    status: str
    queued: bool
    error: str | None
    step: str | None


class WikiReembedView(View):
    """The background re-embedding after the KB's embedding model changed."""

    state: str
    modelId: str | None
    done: int
    total: int
    error: str | None
    startTime: str | None
    endTime: str | None


class WikiProcessingStatusView(View):
    kbId: str
    idle: bool
    counts: WikiStatusCountsView
    total: int
    materials: list[WikiMaterialStatusView]
    reembed: WikiReembedView | None


class WikiJobStepView(View):
    """One step of a processing job, with the figures that step reports."""

    step: str
    status: str
    at: str | None
    pipelineRunId: str | None = None
    chars: int | None = None
    chunks: int | None = None
    batches: int | None = None
    failedBatches: int | None = None
    pages: int | None = None
    brokenLinks: int | None = None
    transformationRunId: str | None = None
    total: int | None = None
    batch: int | None = None
    reason: str | None = None


class WikiJobView(View):
    id: str
    kbId: str
    rawId: str | None
    kind: str
    status: str
    steps: list[WikiJobStepView]
    error: str | None
    pagesWritten: int
    createTime: str | None
    endTime: str | None


class WikiPageTypeView(View):
    name: str
    description: str


class WikiProfileView(View):
    kbId: str
    builtin: bool
    defaultType: str
    pageTypes: list[WikiPageTypeView]


class WikiProfileCheckView(View):
    valid: bool
    error: str | None


class WikiHotCacheView(View):
    kbId: str
    status: str
    content: str
    tokenCount: int
    pages: list[str]
    error: str | None
    generatedTime: str | None
    updateTime: str | None


class WikiSkippedFileView(View):
    path: str
    reason: str


class WikiFailedFileView(View):
    path: str
    error: str


class WikiScanView(View):
    """What one scan of the source directory did."""

    added: int
    updated: int
    removed: int
    restored: int
    unchanged: int
    skippedCount: int
    failedCount: int
    skipped: list[WikiSkippedFileView]
    failed: list[WikiFailedFileView]
    queued: int
    time: str | None
    reason: str


class WikiWatcherView(View):
    kbId: str
    path: str | None
    state: str
    error: str | None
    watching: bool
    scanning: bool
    pendingEvents: int
    lastScanTime: str | None
    lastScan: WikiScanView | None
    roots: list[str]


class WikiWatcherScanView(WikiWatcherView):
    scanQueued: bool


class WikiSourceKbView(WikiKbView):
    watcher: WikiWatcherView


class WikiPipelineStepView(View):
    """A step of the catalogue with its parameters (wiki/pipelines.py CATALOGUE)."""

    type: str
    size: int | None = None
    overlap: int | None = None
    maxChunksPerCall: int | None = None
    transformationId: str | None = None
    saveAsPage: bool | None = None


class WikiPipelineView(View):
    id: str
    kbId: str
    name: str
    description: str
    enabled: bool
    steps: list[WikiPipelineStepView]
    creatorUserId: str | None
    createTime: str | None
    updateTime: str | None


class WikiPipelineCheckView(View):
    valid: bool
    errors: list[str]


class WikiRunStepDetailView(View):
    chars: int | None = None
    chunks: int | None = None
    batches: int | None = None
    failedBatches: int | None = None
    pages: int | None = None
    brokenLinks: int | None = None
    transformationRunId: str | None = None
    pageSlug: str | None = None


class WikiRunStepView(View):
    type: str
    status: str
    startTime: str | None
    endTime: str | None
    durationMs: int | None
    error: str | None
    detail: WikiRunStepDetailView


class WikiPipelineRunView(View):
    id: str
    pipelineId: str
    kbId: str
    rawId: str | None
    status: str
    steps: list[WikiRunStepView]
    error: str | None
    createTime: str | None
    endTime: str | None


class WikiTransformationView(View):
    id: str
    workspaceId: str
    kbId: str | None
    name: str
    description: str
    prompt: str
    createTime: str | None
    updateTime: str | None


class WikiTransformationRunView(View):
    id: str
    transformationId: str
    kbId: str
    targetType: str
    targetId: str
    targetTitle: str
    status: str
    output: str | None
    error: str | None
    pageSlug: str | None
    createTime: str | None
    endTime: str | None


class WikiSavedPageView(View):
    slug: str
    title: str
    pageType: str


class WikiSavedRunView(WikiTransformationRunView):
    page: WikiSavedPageView


class WikiPermissionView(View):
    id: str
    kbId: str
    agentId: str
    pageType: str
    read: str
    write: str
    createTime: str | None
    updateTime: str | None


class WikiFailureView(View):
    """A material that failed, is partial, or completed without any page (`degraded`)."""

    rawId: str
    kbId: str
    kbName: str
    workspaceId: str
    title: str
    status: str
    error: str | None
    pageCount: int
    updateTime: str | None


class WikiBackfillView(View):
    chunks: int
    pages: int
    remaining: int


class WikiOverviewView(View):
    kbId: str
    created: list[str]
    pageCount: int
    materialCount: int
    pageTypes: dict[str, int]
    overviewSlug: str
    logSlug: str


class WikiResearchView(View):
    sessionId: str
    kbId: str
