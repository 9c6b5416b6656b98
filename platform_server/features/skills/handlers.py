"""The /api/v1/skills routes (except curator and routines) and /api/v1/skill-templates."""

from __future__ import annotations

from typing import Any

from platform_server.features.agents import files
from platform_server.features.agents import service as agents
from platform_server.features.models import LLM
from platform_server.features.skills import catalog, curator_handlers, secrets, service, storage
from platform_server.features.skills.install_handlers import (
    HubSearchHandler,
    InstallCancelHandler,
    InstallStartHandler,
    InstallStatusHandler,
    InstallUploadHandler,
    SkillsBase,
    UninstallHandler,
)
from platform_server.features.skills.models import SKILL_TYPES, Skill
from platform_server.features.skills.schemas import (
    ArchiveBody,
    ExportBody,
    FileText,
    InstantiateBody,
    PinBody,
    SecretBody,
    SkillCreate,
    SkillUpdate,
    SynthesizeBody,
    ToggleBody,
)
from platform_server.features.skills.synthesize import synthesize
from platform_server.features.skills.views import (
    SkillAgentRuntimeView,
    SkillBundleFileView,
    SkillCountsView,
    SkillDetailView,
    SkillEmployeeView,
    SkillExportView,
    SkillFolderView,
    SkillLessonsClearedView,
    SkillLessonsView,
    SkillPromptPreviewView,
    SkillRequirementsView,
    SkillRescanView,
    SkillRuntimeRefreshView,
    SkillRuntimeStatusView,
    SkillSecretView,
    SkillSecretWriteView,
    SkillSummaryView,
    SkillSyncedView,
    SkillSyncView,
    SkillTemplateDetailView,
    SkillTemplateView,
    SkillView,
)
from platform_server.platform import Flag
from platform_server.web.errors import Unprocessable
from platform_server.web.openapi_answers import NOTHING, list_of, one, page_of
from platform_server.web.pagination import page_request
from platform_server.web.routing import route

_LIST_PARAMS = [
    {"name": n, "in": "query", "required": False, "schema": {"type": t}, "description": d}
    for n, t, d in (
        ("page", "integer", "Page number (default 1)"),
        ("size", "integer", "Page size (default 20, at most 100)"),
        ("type", "string", "Skill type (also `skillType`)"),
        ("enabled", "boolean", "Only enabled (true) or disabled (false) skills"),
        ("archived", "boolean", "true: only archived skills; default: only skills that are not archived"),
        ("keyword", "string", "Matches name, display name and description"),
    )
]
_LIST_PARAMS[2]["schema"] = {"type": "string", "enum": list(SKILL_TYPES)}  # any other type is refused (service.list_skills)


def _bundle(files: dict[str, str] | None) -> dict[str, bytes] | None:
    if files is None:
        return None
    return service.check_bundle({k: v.encode("utf-8") for k, v in files.items()}, Unprocessable)


class SkillsHandler(SkillsBase):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": page_of(SkillView), "POST": one(SkillDetailView)}
    body_models = {"POST": SkillCreate}
    query_params = {"GET": _LIST_PARAMS}

    def get(self) -> None:
        """Paged list of the workspace's skills (filters: type, enabled, archived, keyword)."""
        req = page_request(self.get_query_argument("page", None), self.get_query_argument("size", None), self.config.max_page_size)
        # each as sent, when given: an empty or padded value is no type of the document's enum (a 400), not "every
        # type"; `skillType` (the original console's name) is checked even beside `type`, which wins
        kind, console_kind = self.query_choice("type", SKILL_TYPES), self.query_choice("skillType", SKILL_TYPES)
        skill_type = console_kind if kind is None else kind
        self.ok(
            service.page(
                self.require_caller(),
                req,
                skill_type,
                self.query_bool("enabled"),
                self.query_bool("archived"),
                self.get_query_argument("keyword", None),
            )
        )

    async def post(self) -> None:
        """Create a custom skill from `content` (SKILL.md) and/or name, description, files."""
        req = self.body(SkillCreate)
        values = service.prepare_new(req.content, req.name, req.displayName, req.description, req.version)
        skill = service.create_skill(self.require_caller(), values, "custom", "api", req.enabled, _bundle(req.files))
        await self.skills.sync_skill(skill)
        self.ok(service.to_dict(skill, full=True))


class CountsHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillCountsView)}

    def get(self) -> None:
        """Counts per type (non-archived) with total, enabled, archived and pinned."""
        self.ok(service.counts(self.require_caller()))


class EnabledHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(SkillView)}

    def get(self) -> None:
        """Enabled, non-archived skills."""
        self.ok(service.list_enabled(self.require_caller()))


class SummaryHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillSummaryView)}

    def get(self) -> None:
        """Enabled skills grouped by type: `{total, groups:[{skillType, count, skills}]}`."""
        self.ok(service.summary(self.require_caller()))


class ByTypeHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(SkillView)}
    path_schemas = {"skillType": {"type": "string", "enum": list(SKILL_TYPES)}}

    def get(self, skillType: str) -> None:
        """Non-archived skills of one type."""
        self.ok(service.list_by_type(self.require_caller(), skillType))


class SkillHandler(SkillsBase):
    access = {"GET": "viewer", "PUT": "member", "DELETE": "admin"}
    answers = {"GET": one(SkillDetailView), "PUT": one(SkillDetailView), "DELETE": NOTHING}
    body_models = {"PUT": SkillUpdate}

    def get(self, id: int) -> None:
        """One skill with its SKILL.md `content` and bundle `files`."""
        self.ok(service.to_dict(service.get_skill(self.require_caller(), id), full=True))

    async def put(self, id: int) -> None:
        """Sparse update; `content` re-parses the front matter, `files` replaces the bundle."""
        req = self.body(SkillUpdate)
        given = {k: getattr(req, k) for k in req.model_fields_set if k != "files"}
        skill, old_name = service.update(self.require_caller(), id, given, _bundle(req.files))
        if old_name != skill.name:
            await self.skills.remove_folder(skill.workspace_id, old_name)
        await self.skills.sync_skill(skill)
        self.ok(service.to_dict(skill, full=True))

    async def delete(self, id: int) -> None:
        """Hard delete (workspace admin): the skill, its files, secrets, bindings and cache folder."""
        skill = service.delete(self.require_caller(), id)
        await self.skills.remove_folder(skill.workspace_id, skill.name)
        self.ok(None)


class ToggleHandler(SkillsBase):
    access = {"PUT": "member"}
    answers = {"PUT": one(SkillView)}
    body_models = {"PUT": ToggleBody}

    def put(self, id: int) -> None:
        """Enable or disable (`{enabled}`; absent flips)."""
        self.ok(service.toggle(self.require_caller(), id, self.toggle_body(ToggleBody).enabled))


class PinHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillView)}
    body_models = {"POST": PinBody}

    def post(self, id: int) -> None:
        """Pin or unpin (`{pinned}`; absent flips); pinned skills are never auto-archived."""
        self.ok(service.pin(self.require_caller(), id, self.body(PinBody).pinned))


class ArchiveHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillView)}
    body_models = {"POST": ArchiveBody}
    confirms = True
    query_params = {"POST": [{"name": "force", "in": "query", "required": False, "schema": {"type": "boolean"}}]}

    def post(self, id: int) -> None:
        """Archive; bound to enabled agents it answers 409 `{code, message, boundAgents}` unless force=true."""
        body = self.body(ArchiveBody)  # checked even when the query already forces: a malformed body is a 400
        force = bool(self.query_bool("force")) or body.force
        self.ok(service.archive(self.require_caller(), id, force))


class RestoreHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillView)}

    def post(self, id: int) -> None:
        """Restore an archived skill."""
        self.ok(service.restore(self.require_caller(), id))


class EmployeesHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(SkillEmployeeView)}

    def get(self, id: int) -> None:
        """Agents that can use the skill (bound, enabled, skills not disabled)."""
        self.ok(service.employees(self.require_caller(), id))


class LessonsHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillLessonsView)}

    async def get(self, id: int) -> None:
        """The skill's LESSONS.md from its cache folder (`content` is "" when there is none)."""
        skill = service.get_skill(self.require_caller(), id)
        text = await self.blocking(storage.read_lessons, self.config, skill.workspace_id, skill.name)
        self.ok({"skillId": str(skill.id), "exists": text is not None, "content": text or "", "size": len((text or "").encode("utf-8"))})


class LessonsClearHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillLessonsClearedView)}

    async def post(self, id: int) -> None:
        """Clear all lessons (removes LESSONS.md)."""
        caller = self.require_caller()
        skill = service.get_skill(caller, id)
        cleared = await self.blocking(storage.clear_lessons, self.config, skill.workspace_id, skill.name)
        self.audit(caller, "UPDATE", skill, f"lessons of {skill.name} cleared")
        self.ok({"skillId": str(skill.id), "cleared": cleared})


class RequirementsHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillRequirementsView)}

    def get(self, id: int) -> None:
        """Pre-flight: each declared requirement (env var, binary, secret) with status ok or missing."""
        self.ok(service.requirements(self.require_caller(), id))


class RescanHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillRescanView)}

    async def post(self, id: int) -> None:
        """Re-read SKILL.md (adopting an edited cache-folder copy) and re-parse its front matter."""
        caller = self.require_caller()
        skill = service.get_skill(caller, id)
        folder = await self.blocking(
            storage.read_folder, self.config, skill.workspace_id, skill.name, service.MAX_FILE_BYTES, service.MAX_BUNDLE_BYTES
        )
        result = service.rescan(caller, id, folder)
        await self.skills.sync_skill(service.get_skill(caller, id))
        self.ok(result)


class WorkspaceInfoHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillFolderView)}

    async def get(self, id: int) -> None:
        """The cache folder: path (relative to the data dir), files with sizes, whether it is in sync."""
        skill = service.get_skill(self.require_caller(), id)
        info = await self.blocking(storage.folder_info, self.config, skill.workspace_id, skill.name, service.bundle_of(skill))
        self.ok({"skillId": str(skill.id), "name": skill.name, **info})


class SyncOneHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillSyncedView)}

    async def post(self, id: int) -> None:
        """Re-sync this skill's SKILL.md and bundle files from the database to its cache folder."""
        caller = self.require_caller()
        skill = service.get_skill(caller, id)
        await self.skills.sync_skill(skill)
        self.audit(caller, "UPDATE", skill, f"cache folder of {skill.name} re-synced")
        self.ok({"skillId": str(skill.id), "synced": True})


class SyncAllHandler(SkillsBase):
    access = {"POST": "admin"}
    answers = {"POST": one(SkillSyncView)}

    async def post(self) -> None:
        """Re-sync every skill of the workspace to the cache (workspace admin); stale folders are removed."""
        caller = self.require_caller()
        result = await self.skills.sync_workspace(caller.workspace_id)
        self.audit(caller, "UPDATE", None, f"skills cache re-synced: {result['synced']} skills")
        self.ok(result)


class ExportHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillExportView)}
    body_models = {"POST": ExportBody}

    async def post(self, id: int) -> None:
        """Copy the skill into an agent's workspace folder under `skills/<name>/`."""
        caller = self.require_caller()
        req = self.body(ExportBody)
        skill = service.get_skill(caller, id)
        agent = agents.get_agent(caller, req.agentId)
        listed = await self.blocking(storage.export_to_agent, self.config, agent.id, service.bundle_of(skill))
        self.audit(caller, "UPDATE", skill, f"skill {skill.name} exported to agent {agent.id}")
        self.ok({"skillId": str(skill.id), "agentId": str(agent.id), "path": f"skills/{skill.name}", "files": listed})


class FileHandler(SkillsBase):
    access = {"GET": "viewer", "PUT": "member"}
    answers = {"GET": one(SkillBundleFileView), "PUT": one(SkillBundleFileView)}
    body_models = {"PUT": FileText}
    path_schemas = {"path": files.route_path_schema(service.BUNDLE_PATH_PATTERN)}  # checked as stated

    def get(self, id: int, path: str) -> None:
        """One bundle file as text: `{path, size, content}` (409 for a binary file)."""
        service.check_bundle_route_path(path)
        skill = service.get_skill(self.require_caller(), id)
        self.ok(service.bundle_file(skill, path))

    async def put(self, id: int, path: str) -> None:
        """Create or replace one bundle file from `{content}`; the other files stay as they are."""
        service.check_bundle_route_path(path)
        caller = self.require_caller()
        skill = service.write_bundle_file(caller, id, path, self.body(FileText).content)
        await self.skills.sync_skill(skill)
        self.ok(service.bundle_file(skill, path))


class SecretsHandler(SkillsBase):
    access = {"GET": "member", "POST": "member"}
    answers = {"GET": list_of(SkillSecretView), "POST": one(SkillSecretWriteView)}
    body_models = {"POST": SecretBody}

    def get(self, skillId: int) -> None:
        """Secret keys with masked previews (values are never returned)."""
        self.ok(secrets.list_secrets(service.get_skill(self.require_caller(), skillId)))

    def post(self, skillId: int) -> None:
        """Upsert a secret `{key, value}`; an empty value deletes it."""
        req = self.body(SecretBody)
        caller = self.require_caller()
        skill = service.get_skill(caller, skillId)
        self.ok(secrets.upsert(caller, self.skills.key, skill, req.key, req.value))


class SecretHandler(SkillsBase):
    access = {"DELETE": "member"}
    answers = {"DELETE": NOTHING}

    def delete(self, skillId: int, key: str) -> None:
        """Delete one secret by key."""
        caller = self.require_caller()
        secrets.delete(caller, service.get_skill(caller, skillId), key)
        self.ok(None)


class PromptPreviewHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillPromptPreviewView)}
    query_params = {"GET": [{"name": "agentId", "in": "query", "required": True, "schema": {"type": "string"}}]}

    def get(self) -> None:
        """The exact skills section the agent runtime appends to the agent's system prompt."""
        agent_id = self.query_long("agentId", required=True)
        assert agent_id is not None
        self.ok(service.prompt_preview(self.config, self.require_caller(), agent_id))


class RuntimeActiveHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(SkillAgentRuntimeView)}

    def get(self) -> None:
        """Each agent of the workspace with the skills it gets now."""
        self.ok(service.runtime_active(self.require_caller()))


class RuntimeStatusHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(SkillRuntimeStatusView)}

    def get(self) -> None:
        """Every skill's resolution status: ready, disabled, archived or requirements_missing."""
        self.ok(service.runtime_status(self.require_caller()))


class RuntimeRefreshHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillRuntimeRefreshView)}
    query_params = {"POST": [{"name": "resync", "in": "query", "required": False, "schema": {"type": "boolean"}}]}

    async def post(self) -> None:
        """Re-parse every skill's front matter and re-sync the cache; `resync=true` also re-syncs built-ins."""
        caller = self.require_caller()
        builtins = catalog.seed_builtins(caller.workspace_id, refresh=True) if self.query_bool("resync") else []
        rescanned = 0
        for skill in service.workspace_skills(caller.workspace_id):
            service.rescan(caller, skill.id, None)
            rescanned += 1
        result = await self.skills.sync_workspace(caller.workspace_id)
        self.ok({"rescanned": rescanned, "builtinsSynced": builtins, **result})


class SynthesizeHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillDetailView)}
    body_models = {"POST": SynthesizeBody}

    async def post(self) -> None:
        """Draft a skill from one of the caller's conversations with the default model (created disabled)."""
        req = self.body(SynthesizeBody)
        skill = await synthesize(self.platform.runtime(LLM), self.require_caller(), req.conversationId, req.name)
        await self.skills.sync_skill(skill)
        self.ok(service.to_dict(skill, full=True))


class TemplatesHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(SkillTemplateView)}
    tags = ("Skill templates",)

    def get(self) -> None:
        """The skill templates."""
        self.ok(catalog.list_templates())


class TemplateHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillTemplateDetailView)}
    tags = ("Skill templates",)

    def get(self, id: int) -> None:
        """One template with its SKILL.md content."""
        self.ok(catalog.template_dict(catalog.get_template(id), full=True))


class InstantiateHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillDetailView)}
    body_models = {"POST": InstantiateBody}
    tags = ("Skill templates",)

    async def post(self, id: int) -> None:
        """Create a `template` skill from a template (optional `{name}`)."""
        req = self.body(InstantiateBody)
        skill: Skill = catalog.instantiate(self.require_caller(), id, req.name)
        await self.skills.sync_skill(skill)
        self.ok(service.to_dict(skill, full=True))


ROUTES: list[Any] = [
    route("/api/v1/skills", SkillsHandler),
    route("/api/v1/skills/counts", CountsHandler),
    route("/api/v1/skills/enabled", EnabledHandler),
    route("/api/v1/skills/summary", SummaryHandler),
    route("/api/v1/skills/type/{skillType}", ByTypeHandler),
    route("/api/v1/skills/prompt-preview", PromptPreviewHandler),
    route("/api/v1/skills/runtime/active", RuntimeActiveHandler),
    route("/api/v1/skills/runtime/status", RuntimeStatusHandler),
    route("/api/v1/skills/runtime/refresh", RuntimeRefreshHandler),
    route("/api/v1/skills/sync-files", SyncAllHandler),
    route("/api/v1/skills/synthesize-from-conversation", SynthesizeHandler),
    route("/api/v1/skills/install/upload", InstallUploadHandler),
    route("/api/v1/skills/install/start", InstallStartHandler),
    route("/api/v1/skills/install/status/{taskId:str}", InstallStatusHandler),
    route("/api/v1/skills/install/cancel/{taskId:str}", InstallCancelHandler),
    route("/api/v1/skills/install/hub/search", HubSearchHandler),
    route("/api/v1/skills/install/{skillName}", UninstallHandler),
    route("/api/v1/skills/{id}", SkillHandler),
    route("/api/v1/skills/{id}/toggle", ToggleHandler),
    route("/api/v1/skills/{id}/pin", PinHandler),
    route("/api/v1/skills/{id}/archive", ArchiveHandler),
    route("/api/v1/skills/{id}/restore", RestoreHandler),
    route("/api/v1/skills/{id}/employees", EmployeesHandler),
    route("/api/v1/skills/{id}/lessons", LessonsHandler),
    route("/api/v1/skills/{id}/lessons/clear", LessonsClearHandler),
    route("/api/v1/skills/{id}/requirements", RequirementsHandler),
    route("/api/v1/skills/{id}/rescan", RescanHandler),
    route("/api/v1/skills/{id}/workspace", WorkspaceInfoHandler),
    route("/api/v1/skills/{id}/sync-files", SyncOneHandler),
    route("/api/v1/skills/{id}/export-workspace", ExportHandler),
    route("/api/v1/skills/{id}/files/**", FileHandler),
    route("/api/v1/skills/{skillId}/secrets", SecretsHandler),
    route("/api/v1/skills/{skillId}/secrets/{key}", SecretHandler),
    route("/api/v1/skill-templates", TemplatesHandler),
    route("/api/v1/skill-templates/{id}", TemplateHandler),
    route("/api/v1/skill-templates/{id}/instantiate", InstantiateHandler),
    *curator_handlers.ROUTES,
]

FLAGS = [Flag("skills_curator", True, "Skill curation (curator routes and its scheduled scans)")]
