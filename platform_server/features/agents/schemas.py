"""Request bodies of the agent routes (AgentEntity in, bindings, preferences, prompt files)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, JsonValue, field_validator

from platform_server.features.settings.schemas import SidecarView
from platform_server.ids import WHITESPACE
from platform_server.serialize import View
from platform_server.web.bodies import explained

AGENT_TYPES = ("react", "plan_execute")
THINKING_LEVELS = ("off", "low", "medium", "high", "max")
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
PROVIDER_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MAX_PROVIDER_SLUG = 200
MAX_BINDINGS = 500
MAX_PROMPT_FILES = 32

AgentType = Literal["react", "plan_execute"]
ThinkingLevel = Literal["off", "low", "medium", "high", "max"]


# An icon: empty, an emoji or a few characters of text (up to 16, no ':' or '/'), an http(s) URL with a host (no
# brackets: "http://[" is no URL) or a site-relative image URL; no control characters and no space at either end.
# One pattern, stated in the document and checked here, so a client knows the rule and the server takes exactly it.
ICON_PATTERN = (
    f"^(|[^:/{WHITESPACE}\\x00-\\x1f]([^:/\\x00-\\x1f]{{0,14}}[^:/{WHITESPACE}\\x00-\\x1f])?"
    f"|[Hh][Tt][Tt][Pp][Ss]?://[^{WHITESPACE}/?#\\[\\]\\x00-\\x1f]+([/?#][^{WHITESPACE}\\x00-\\x1f]*)?"
    f"|/([^/{WHITESPACE}\\x00-\\x1f][^{WHITESPACE}\\x00-\\x1f]*)?)$"
)
ICON_RE = re.compile(ICON_PATTERN)
MODEL_NAME_PATTERN = r"^[^\x00-\x1f]*$"  # no control characters
MODEL_PROVIDER_PATTERN = r"^([a-z0-9][a-z0-9._-]*)?$"  # PROVIDER_SLUG_RE, or empty (no provider: the default model)
# "" clears the level, as null does (the original console sends an empty select)
THINKING_CHOICES: list[JsonValue] = [*THINKING_LEVELS, "", None]


def _check_icon(value: str | None) -> str | None:
    if value is None:
        return None
    if not ICON_RE.fullmatch(value):
        raise ValueError("must be an emoji or an http(s) URL")
    return value


def _check_tags(value: str | None) -> str | None:
    if value is None:
        return None
    tags = [t.strip() for t in value.split(",")]
    return ",".join(t for t in tags if t)


def _check_kb_id(value: Any) -> int | None:
    if value is None or value == "":
        return None
    text = str(value).strip()
    if not (text.isascii() and text.isdigit()) or int(text) >= 2**63:
        raise ValueError("must be a Long id")
    return int(text)


def _check_provider(value: str | None) -> str | None:
    if value is None or value == "":  # empty clears, as null does (MODEL_PROVIDER_PATTERN)
        return None
    if len(value) > MAX_PROVIDER_SLUG or not PROVIDER_SLUG_RE.fullmatch(value):
        raise ValueError("must be a provider id such as 'openai' ([a-z0-9][a-z0-9._-]*)")
    return value


class _AgentFields(BaseModel):
    """Validators shared by create and update."""

    @field_validator("icon", check_fields=False)
    @classmethod
    def _icon(cls, v: str | None) -> str | None:
        return _check_icon(v)

    @field_validator("tags", check_fields=False)
    @classmethod
    def _tags(cls, v: str | None) -> str | None:
        return _check_tags(v)

    @field_validator("primaryKbId", mode="before", check_fields=False)
    @classmethod
    def _kb(cls, v: Any) -> int | None:
        return _check_kb_id(v)

    @field_validator("modelProvider", check_fields=False)
    @classmethod
    def _provider(cls, v: str | None) -> str | None:
        return _check_provider(v)

    @field_validator("modelName", check_fields=False)
    @classmethod
    def _model_name(cls, v: str | None) -> str | None:
        if v is None:
            return None
        if any(ord(c) < 0x20 for c in v):  # MODEL_NAME_PATTERN
            raise ValueError("must not contain control characters")
        return v.strip()

    @field_validator("defaultThinkingLevel", mode="before", check_fields=False)
    @classmethod
    def _thinking(cls, v: Any) -> Any:
        return None if v == "" else v


class AgentCreate(_AgentFields):
    """An AgentEntity; `id`, `workspaceId`, `creatorUserId` and times are ignored (set by the service)."""

    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    agentType: AgentType = "react"
    systemPrompt: str = Field(default="", max_length=100_000)
    modelProvider: str | None = Field(default=None, max_length=MAX_PROVIDER_SLUG, json_schema_extra={"pattern": MODEL_PROVIDER_PATTERN})
    modelName: str = Field(default="", max_length=200, json_schema_extra={"pattern": MODEL_NAME_PATTERN})
    maxIterations: int = Field(default=10, ge=1, le=100)
    enabled: bool = True
    icon: str = Field(default="", max_length=500, json_schema_extra={"pattern": ICON_PATTERN})
    tags: str = Field(default="", max_length=500)
    defaultThinkingLevel: ThinkingLevel | None = Field(default=None, json_schema_extra={"enum": THINKING_CHOICES})
    primaryKbId: int | None = Field(default=None, ge=0)  # a KB id (_check_kb_id: digits, below 2**63)
    skillsDisabled: bool = False
    toolsDisabled: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v.strip()


class AgentUpdate(_AgentFields):
    """Sparse update: absent fields stay; null clears only the nullable ones (modelProvider,
    defaultThinkingLevel, primaryKbId) and is ignored for the others."""

    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    agentType: AgentType | None = None
    systemPrompt: str | None = Field(default=None, max_length=100_000)
    modelProvider: str | None = Field(default=None, max_length=MAX_PROVIDER_SLUG, json_schema_extra={"pattern": MODEL_PROVIDER_PATTERN})
    modelName: str | None = Field(default=None, max_length=200, json_schema_extra={"pattern": MODEL_NAME_PATTERN})
    maxIterations: int | None = Field(default=None, ge=1, le=100)
    enabled: bool | None = None
    icon: str | None = Field(default=None, max_length=500, json_schema_extra={"pattern": ICON_PATTERN})
    tags: str | None = Field(default=None, max_length=500)
    defaultThinkingLevel: ThinkingLevel | None = Field(default=None, json_schema_extra={"enum": THINKING_CHOICES})
    primaryKbId: int | None = Field(default=None, ge=0)  # a KB id (_check_kb_id: digits, below 2**63)
    skillsDisabled: bool | None = None
    toolsDisabled: bool | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must not be blank")
        return None if v is None else v.strip()


class SkillBindings(BaseModel):
    skillIds: list[int] = Field(  # the document states the limits _positive checks
        max_length=MAX_BINDINGS, json_schema_extra={"items": {"type": "integer", "format": "int64", "minimum": 1}}
    )

    @field_validator("skillIds", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> Any:
        if not isinstance(v, list):
            return v
        return [_check_kb_id(x) if isinstance(x, str) else x for x in v]

    @field_validator("skillIds")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(x is None or x <= 0 or x >= 2**63 for x in v):
            raise ValueError("must be Long ids")
        return list(dict.fromkeys(v))


class ToolBindings(BaseModel):
    toolNames: list[str] = Field(max_length=MAX_BINDINGS, json_schema_extra={"items": {"type": "string", "pattern": TOOL_NAME_RE.pattern}})

    @field_validator("toolNames")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not TOOL_NAME_RE.match(name):
                raise ValueError(f"invalid tool name '{name[:64]}' (expected ^[A-Za-z0-9_.:-]{{1,128}}$)")
        return list(dict.fromkeys(v))


class ProviderPreferences(BaseModel):
    providerIds: list[str] = Field(
        max_length=50,
        json_schema_extra={"items": {"type": "string", "maxLength": MAX_PROVIDER_SLUG, "pattern": PROVIDER_SLUG_RE.pattern}},
    )

    @field_validator("providerIds", mode="before")
    @classmethod
    def _rows(cls, v: Any) -> Any:
        """The original console sends rows `{providerId, modelId}`; only whole providers are preferred here."""
        if not isinstance(v, list):
            return v
        out = []
        for item in v:
            if isinstance(item, dict):
                if item.get("modelId") is not None:
                    raise ValueError("a preference names a provider; modelId must be null")
                item = item.get("providerId")
            out.append(item)
        return out

    @field_validator("providerIds")
    @classmethod
    def _ids(cls, v: list[str]) -> list[str]:
        for pid in v:
            if len(pid) > MAX_PROVIDER_SLUG or not PROVIDER_SLUG_RE.match(pid):
                raise ValueError(f"invalid provider id '{pid[:64]}' (expected [a-z0-9][a-z0-9._-]*)")
        return list(dict.fromkeys(v))


# A workspace-relative file path that files.split_rel takes, in its plain form: an optional `./`, then 1-32 names
# joined by `/`, none of them `.` or `..`, no backslash nor control character, no drive (`C:`) in front. A name is at
# most 63 characters and the path at most 256, so neither passes the byte limits (255 a name, 1024 the path) even
# in 4-byte characters; the pattern is checked on the way in, so the document and the server say the same.
_NAME_CHAR = r"[^/\\\x00-\x1f\x7f]"
_NOT_DOT = r"[^./\\\x00-\x1f\x7f]"
_DOTTED = rf"\.{_NOT_DOT}{_NAME_CHAR}{{0,61}}|\.\.{_NAME_CHAR}{{1,61}}"  # `.x`, `...`: a name, unlike `.` and `..`
_NAME = rf"({_NOT_DOT}{_NAME_CHAR}{{0,62}}|{_DOTTED})"
_FIRST = rf"([^./A-Za-z\\\x00-\x1f\x7f]{_NAME_CHAR}{{0,62}}|[A-Za-z]([^:/\\\x00-\x1f\x7f]{_NAME_CHAR}{{0,61}})?|{_DOTTED})"
RELATIVE_FILE = explained(
    rf"^(\./)?{_FIRST}(/{_NAME}){{0,31}}$",
    "must name a file relative to the workspace: up to 32 names of at most 63 characters joined by '/' (no '.', '..', "
    "empty name, backslash, control character or leading '/')",
)
MAX_FILE_PATH = 256


class PromptFiles(BaseModel):
    files: list[Annotated[str, Field(max_length=MAX_FILE_PATH, pattern=RELATIVE_FILE)]] = Field(max_length=MAX_PROMPT_FILES)


class FileContent(BaseModel):
    content: str


class GenerateRequest(BaseModel):
    requirement: str = Field(min_length=1, max_length=4000)


class AgentView(View):
    """An agent as every agent route answers it (`service.agent_vo`); ids are strings."""

    id: str
    name: str
    description: str
    agentType: str
    systemPrompt: str
    modelProvider: str | None
    modelName: str
    maxIterations: int
    enabled: bool
    icon: str
    tags: str = Field(description="comma-separated")
    defaultThinkingLevel: str | None
    primaryKbId: str | None
    skillsDisabled: bool
    toolsDisabled: bool
    workspaceId: str
    creatorUserId: str | None
    templateId: str | None
    createTime: str | None
    updateTime: str | None


class AgentCapabilitiesModelView(View):
    """The model the runtime would use first for the agent (`resolved` false: the name as configured, unresolved)."""

    provider: str | None
    modelName: str | None
    resolved: bool


class AgentCapabilitiesView(View):
    agentId: str
    model: AgentCapabilitiesModelView
    modalities: list[str] = Field(description="always starts with `text`")
    vision: bool
    sidecar: SidecarView


class AgentDraftView(View):
    """An agent drafted by the default model from a requirement; not saved."""

    name: str
    icon: str
    description: str
    agentType: AgentType
    runtimeType: str
    systemPrompt: str
    role: str
    goal: str
    tags: list[str]
    recommendedQuestions: list[str]


class AgentSkillBindingView(View):
    agentId: str
    skillId: str
    enabled: bool


class AgentToolBindingView(View):
    agentId: str
    toolName: str
    enabled: bool


class AgentProviderPreferenceView(View):
    agentId: str
    providerId: str
    modelId: str | None = Field(description="always null: a preference names a provider")
    enabled: bool
    sortOrder: int


class AgentPromptFilesView(View):
    agentId: str
    files: list[str]


class AgentWorkspaceFileTextView(View):
    """A workspace file's text, answered when the client asks for JSON first (the original console)."""

    filename: str
    content: str
    fileSize: int


class AgentWorkspaceFileView(View):
    """A file of the agent's workspace (`size`/`modifiedTime` repeated as the original console's `fileSize`/`updateTime`)."""

    path: str
    size: int
    modifiedTime: str
    filename: str
    fileSize: int
    updateTime: str


class AgentPersonalFileView(AgentWorkspaceFileView):
    ownerKey: str
    scope: Literal["PERSONAL"]
    enabled: bool


class AgentPersonalFileContentView(View):
    filename: str
    ownerKey: str
    content: str


class AgentMemoryImportEntryView(View):
    path: str
    size: int
    action: Literal["create", "overwrite", "refused"]
    reason: str | None = Field(default=None, description="why an entry is refused; absent otherwise")


class AgentMemoryImportPlanView(View):
    """What a memory import creates, overwrites and refuses."""

    entries: list[AgentMemoryImportEntryView]
    createCount: int
    overwriteCount: int
    refusedCount: int
    totalBytes: int


class AgentMemoryImportView(AgentMemoryImportPlanView):
    imported: int = Field(description="files written")
