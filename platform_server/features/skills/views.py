"""What the skills, skill-template, install, routine and curator routes answer: the API document's view models.

They only document (web/openapi_answers.py): the routes keep building plain dicts (`service.to_dict`, the curator's
report builders, ...), and the test suite checks every answer against these models. Ids are strings.
"""

from __future__ import annotations

from pydantic import Field

from platform_server.serialize import View


class SkillRequiresView(View):
    """What a skill's front matter declares it needs (`requires`)."""

    env: list[str]
    bins: list[str]
    secrets: list[str]


class SkillView(View):
    """A skill as the list and state routes answer it (`service.SKILL_FIELDS`)."""

    id: str
    workspaceId: str
    name: str
    displayName: str
    description: str
    skillType: str = Field(description="builtin, custom, installed, synthesized or template")
    enabled: bool
    archived: int = Field(description="1 when archived, else 0 (the console's own encoding)")
    pinned: int = Field(description="1 when pinned, else 0")
    version: str
    source: str
    requires: SkillRequiresView
    creatorUserId: str | None
    createTime: str | None
    updateTime: str | None
    archivedAt: str | None
    lastUsedAt: str | None
    useCount: int


class SkillFileEntryView(View):
    """One bundle file of a skill: path relative to the skill and size in bytes."""

    path: str
    size: int


class SkillDetailView(SkillView):
    """A skill with its SKILL.md `content` and bundle file list (`service.to_dict(full=True)`)."""

    content: str
    files: list[SkillFileEntryView]


class InstalledSkillView(SkillDetailView):
    """An uploaded skill; `replaced` when it overwrote an installed skill of the same name."""

    replaced: bool


class SkillTypeCountsView(View):
    builtin: int
    custom: int
    installed: int
    synthesized: int
    template: int


class SkillCountsView(SkillTypeCountsView):
    """Non-archived skills per type plus totals; the per-type counts also flat (the console's tab counters)."""

    total: int
    enabled: int
    archived: int
    pinned: int
    byType: SkillTypeCountsView
    all: int


class SkillGroupView(View):
    skillType: str
    count: int
    skills: list[SkillView]


class SkillSummaryView(View):
    """Enabled skills grouped by type."""

    total: int
    groups: list[SkillGroupView]


class SkillPromptPreviewView(View):
    """The skills section the runtime appends to an agent's system prompt."""

    agentId: str
    skillsDisabled: bool
    skills: list[str] = Field(description="names of the skills in the section")
    prompt: str
    length: int


class SkillSyncView(View):
    """A cache re-sync: skills written and stale folders removed."""

    synced: int
    removed: int


class SkillRuntimeRefreshView(SkillSyncView):
    rescanned: int
    builtinsSynced: list[str]


class SkillRefView(View):
    """A skill named by id, name and display name."""

    id: str
    name: str
    displayName: str


class SkillAgentRuntimeView(View):
    """An agent with the skills it gets now."""

    agentId: str
    agentName: str
    enabled: bool
    skillsDisabled: bool
    skills: list[SkillRefView]


class SkillMissingView(View):
    kind: str = Field(description="env, bins or secrets")
    name: str


class SkillRuntimeStatusView(View):
    """A skill's resolution status: ready, disabled, archived or requirements_missing."""

    id: str
    name: str
    skillType: str
    enabled: bool
    archived: int
    status: str
    missing: list[SkillMissingView]
    boundAgentCount: int
    activeAgentCount: int
    runtimeAvailable: bool
    resolutionError: str | None


class SkillEmployeeView(View):
    """An agent that can use the skill."""

    id: str
    name: str
    description: str
    icon: str


class SkillLessonsView(View):
    skillId: str
    exists: bool
    content: str = Field(description='LESSONS.md, "" when there is none')
    size: int


class SkillLessonsClearedView(View):
    skillId: str
    cleared: bool


class SkillRequirementView(View):
    kind: str
    name: str
    status: str = Field(description="ok or missing")
    source: str | None


class SkillRequirementsView(View):
    skillId: str
    name: str
    satisfied: bool
    requirements: list[SkillRequirementView]


class SkillRescanView(View):
    skill: SkillDetailView
    adoptedFromFolder: bool
    requires: SkillRequiresView


class SkillFolderFileView(View):
    """A file of a skill's cache folder (also under the console's names `filename`, `fileSize`, `updateTime`)."""

    path: str
    size: int
    modifiedTime: str
    filename: str
    fileSize: int
    updateTime: str


class SkillFolderView(View):
    """A skill's cache folder: path relative to the data dir, its files, whether it matches the database."""

    skillId: str
    name: str
    path: str
    exists: bool
    files: list[SkillFolderFileView]
    fileCount: int
    totalBytes: int
    inSync: bool


class SkillSyncedView(View):
    skillId: str
    synced: bool


class SkillExportView(View):
    """A skill copied into an agent's workspace folder."""

    skillId: str
    agentId: str
    path: str
    files: list[SkillFolderFileView]


class SkillBundleFileView(View):
    """One bundle file as text."""

    skillId: str
    path: str
    size: int
    content: str


class SkillSecretView(View):
    """A secret's key with a masked preview (values are never returned)."""

    key: str
    preview: str
    createTime: str | None
    updateTime: str | None


class SkillSecretWriteView(View):
    """An upserted secret; an empty value deletes it (then `preview` is null and `deleted` says whether it existed)."""

    key: str
    preview: str | None
    createTime: str | None = None
    updateTime: str | None = None
    deleted: bool


class SkillTemplateView(View):
    id: str
    name: str
    displayName: str
    description: str
    category: str
    builtin: bool


class SkillTemplateDetailView(SkillTemplateView):
    content: str


class SkillInstallTaskView(View):
    """A skill install task (started from a URL or the hub), polled until `finished`."""

    taskId: str
    status: str
    message: str
    source: str
    skillId: str | None
    skillName: str | None
    replaced: bool
    createTime: str
    updateTime: str
    finished: bool


class SkillHubItemView(View):
    slug: str
    name: str
    description: str
    version: str
    author: str
    tags: list[str]
    downloadUrl: str
    installed: bool


class SkillHubSearchView(View):
    hubUrl: str
    total: int
    items: list[SkillHubItemView]


class SkillRoutineView(View):
    """A routine the miner found in a user's messages: a candidate for a skill."""

    id: str
    workspaceId: str
    userId: str
    pattern: str
    examples: list[str]
    occurrences: int
    distinctDays: int
    ready: bool
    status: str
    skillId: str | None
    firstSeen: str | None
    lastSeen: str | None
    createTime: str | None
    updateTime: str | None


class SkillRoutineMineView(View):
    scannedMessages: int
    created: int
    updated: int
    candidates: list[SkillRoutineView]


class SkillRoutinePromotedView(View):
    candidate: SkillRoutineView
    skill: SkillDetailView


class CuratorSummaryView(View):
    """What a curator run found and did, counted."""

    scanned: int
    archive: int
    merge: int
    keep: int
    proposed: int
    applied: int
    skipped: int
    failed: int
    unused: int
    duplicates: int
    brokenRequirements: int


class CuratorCountsView(View):
    managed: int
    managedArchived: int
    managedPinned: int
    unmanaged: int
    reports: int
    active: int
    archived: int
    pinned: int


class CuratorConfigView(View):
    """The curator settings grouped the way the original console reads them."""

    enabled: bool
    cron: str
    staleAfterDays: int
    archiveAfterDays: int
    scope: str


class CuratorControlView(View):
    """The curator state grouped the way the original console reads it."""

    activated: bool
    paused: bool
    consolidate: bool
    lastRunAt: str | None
    lastDryRunAt: str | None
    lastObservedAt: str | None
    nextScheduledRun: str | None


class CuratorReportLinkView(View):
    id: str
    url: str


class CuratorStatusView(View):
    """The workspace's curator: active or preview, paused, consolidation, last and next run, counts."""

    workspaceId: str
    active: bool
    paused: bool
    consolidate: bool
    mode: str = Field(description="archive (active) or preview")
    intervalHours: float
    unusedDays: int
    similarity: float
    lastRunAt: str | None
    lastRunId: str | None
    lastScheduledAt: str | None
    nextRunAt: str | None
    lastSummary: CuratorSummaryView | None
    counts: CuratorCountsView
    config: CuratorConfigView
    control: CuratorControlView
    lastReport: CuratorReportLinkView | None


class CuratorSettingsView(View):
    unusedDays: int
    similarity: float


class CuratorSkillRefView(View):
    """A skill (or an agent bound to one) named by id and name."""

    id: str
    name: str


class CuratorActionView(View):
    """The curator's verdict on one skill: keep, archive or merge, with its reasons."""

    skillId: str
    skillName: str
    pinned: int
    action: str = Field(description="keep, archive or merge")
    flags: list[str] = Field(description="unused, broken_requirements, duplicate")
    reasons: list[str]
    outcome: str = Field(description="kept, proposed, applied, skipped or failed")
    boundAgents: list[CuratorSkillRefView] | None = Field(None, description="the enabled agents that kept it (skipped)")
    note: str | None = None
    duplicates: list[CuratorSkillRefView] | None = Field(None, description="the near-duplicates this skill is kept over")
    duplicateOf: CuratorSkillRefView | None = None
    similarity: float | None = None
    mergeInto: CuratorSkillRefView | None = None


class CuratorRunView(View):
    """A curator run (dry run or applied), without its per-skill actions."""

    id: str
    workspaceId: str
    trigger: str
    dryRun: bool
    applied: bool
    consolidate: bool
    triggeredBy: str | None
    snapshotId: str | None
    settings: CuratorSettingsView
    summary: CuratorSummaryView
    startedAt: str | None
    finishedAt: str | None


class CuratorReportView(CuratorRunView):
    """A curator run with its per-skill actions."""

    actions: list[CuratorActionView]


class CuratedSkillView(SkillView):
    """A skill with whether the curator manages it."""

    managed: bool
    adoptedAt: str | None


class CuratorAdoptView(View):
    adopted: list[str]
    alreadyManaged: list[str]
    managedCount: int


class CuratorReleaseView(View):
    released: list[str]
    notManaged: list[str]
    managedCount: int


class CuratorSnapshotView(View):
    """A restore point of the skill library (metadata only)."""

    id: str
    workspaceId: str
    trigger: str
    reason: str
    creatorUserId: str | None
    skillCount: int
    sizeBytes: int
    filesOmitted: list[str] = Field(description="skills whose bundle files were too large to capture")
    createTime: str | None


class CuratorRenameView(View):
    """A skill renamed on restore because its name was taken."""

    id: str
    from_: str = Field(alias="from")
    to: str


class CuratorRestoreView(View):
    snapshotId: str
    preRestoreSnapshotId: str
    updated: list[str]
    recreated: list[str]
    archived: list[str]
    renamed: list[CuratorRenameView]
    unchanged: int
