"""Agent routes: CRUD, skill and tool bindings, provider preferences, capabilities, prompt files.

The chat, execute and state routes of `/api/v1/agents/{id}` live with the chat runtime; the
workspace file and memory routes are in `workspace_handlers.py`.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from platform_server.blocking import run_blocking
from platform_server.features.agents import generate, service
from platform_server.features.agents.schemas import (
    AgentCapabilitiesView,
    AgentCreate,
    AgentDraftView,
    AgentPromptFilesView,
    AgentProviderPreferenceView,
    AgentSkillBindingView,
    AgentToolBindingView,
    AgentUpdate,
    AgentView,
    GenerateRequest,
    PromptFiles,
    ProviderPreferences,
    SkillBindings,
    ToolBindings,
)
from platform_server.features.agents.workspace_handlers import (
    FileHandler,
    FilesHandler,
    MemoryExportHandler,
    MemoryImportHandler,
    MemoryImportPreviewHandler,
    PersonalFileHandler,
    PersonalFilesHandler,
)
from platform_server.features.models import LLM
from platform_server.features.tools import TOOLS
from platform_server.web.base import ApiHandler
from platform_server.web.bodies import validated
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route

TAGS = ("Agents",)
M = TypeVar("M", bound=BaseModel)


class AgentsHandler(ApiHandler):
    answers = {"GET": list_of(AgentView), "POST": one(AgentView)}
    access = {"GET": "viewer", "POST": "member"}
    body_models = {"POST": AgentCreate}
    query_params = {"GET": [{"name": "enabled", "in": "query", "required": False, "schema": {"type": "boolean"}}]}
    tags = TAGS

    def get(self) -> None:
        """List the workspace's agents (`?enabled=true|false` filters)."""
        self.ok(service.list_agents(self.require_caller(), self.query_bool("enabled")))

    def post(self) -> None:
        """Create an agent, and its workspace folder; `workspaceId` and `creatorUserId` come from the caller."""
        req = self.body(AgentCreate)
        agent = service.create(self.require_caller(), req)
        service.agent_dir(self.config, int(agent["id"]))  # there from the start, for files put in by hand
        self.ok(agent)


class AgentHandler(ApiHandler):
    answers = {"GET": one(AgentView), "PUT": one(AgentView), "DELETE": NOTHING}
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    body_models = {"PUT": AgentUpdate}
    tags = TAGS

    def get(self, id: int) -> None:
        """One agent of the workspace."""
        self.ok(service.to_dict(service.get_agent(self.require_caller(), id)))

    def put(self, id: int) -> None:
        """Sparse update of an agent."""
        req = self.body(AgentUpdate)
        self.ok(service.update(self.require_caller(), id, req))

    async def delete(self, id: int) -> None:
        """Delete an agent (global admin, workspace admin or above, or its creator)."""
        service.delete(self.require_caller(), id)
        await run_blocking(service.remove_files, self.config, id)
        self.ok(None)


class CapabilitiesHandler(ApiHandler):
    answers = {"GET": one(AgentCapabilitiesView)}
    access = {"GET": "viewer"}
    tags = TAGS

    def get(self, id: int) -> None:
        """The modality set of the agent's model and the sidecar configuration."""
        self.ok(service.capabilities(self.require_caller(), id))


class GenerateHandler(ApiHandler):
    answers = {"POST": one(AgentDraftView)}
    access = {"POST": "member"}
    body_models = {"POST": GenerateRequest}
    tags = TAGS

    async def post(self) -> None:
        """Draft an agent from a one-sentence requirement with the default model; returned, not saved."""
        req = self.body(GenerateRequest)
        self.ok(await generate.generate(self.platform.runtime(LLM), self.require_caller(), req.requirement))


def _bindings(handler: ApiHandler, model: type[M], field: str) -> M:
    """The body as `model`; a bare JSON array (as the original console sends it) stands for `{field: [...]}`."""
    data = handler.json_body()
    if isinstance(data, list):
        data = {field: data}
    if not isinstance(data, dict):
        raise BadRequest("Request body must be a JSON object")
    return validated(model, data)


class SkillsHandler(ApiHandler):
    answers = {"GET": list_of(AgentSkillBindingView), "PUT": list_of(AgentSkillBindingView)}
    access = {"GET": "viewer", "PUT": "member"}
    body_models = {"PUT": SkillBindings}
    tags = TAGS

    def get(self, agentId: int) -> None:
        """The skills bound to the agent, as rows `[{agentId, skillId, enabled}]`."""
        self.ok(service.skills(self.require_caller(), agentId))

    def put(self, agentId: int) -> None:
        """Replace the skill bindings (`{skillIds: [...]}` or a bare array)."""
        req = _bindings(self, SkillBindings, "skillIds")
        self.ok(service.set_skills(self.require_caller(), agentId, req.skillIds))


class SkillHandler(ApiHandler):
    answers = {"POST": list_of(AgentSkillBindingView), "DELETE": list_of(AgentSkillBindingView)}
    access = {"POST": "member", "DELETE": "member"}
    tags = TAGS
    path_schemas = {"skillId": {"type": "string", "pattern": "^0{0,17}[1-9][0-9]{0,17}$"}}  # a positive Long (service.bind_skill)

    def post(self, agentId: int, skillId: int) -> None:
        """Bind one skill to the agent."""
        self.ok(service.bind_skill(self.require_caller(), agentId, skillId))

    def delete(self, agentId: int, skillId: int) -> None:
        """Unbind one skill from the agent."""
        self.ok(service.unbind_skill(self.require_caller(), agentId, skillId))


class ToolsHandler(ApiHandler):
    answers = {"GET": list_of(AgentToolBindingView), "PUT": list_of(AgentToolBindingView)}
    access = {"GET": "viewer", "PUT": "member"}
    body_models = {"PUT": ToolBindings}
    tags = TAGS

    def get(self, agentId: int) -> None:
        """The tools bound to the agent in order, as rows `[{agentId, toolName, enabled}]`."""
        self.ok(service.tools(self.require_caller(), agentId))

    def put(self, agentId: int) -> None:
        """Replace the tool bindings (`{toolNames: [...]}` or a bare array)."""
        req = _bindings(self, ToolBindings, "toolNames")
        host = self.platform.runtime(TOOLS).host_kinds(req.toolNames)
        self.ok(service.set_tools(self.require_caller(), agentId, req.toolNames, host))


class ProviderPreferencesHandler(ApiHandler):
    answers = {"GET": list_of(AgentProviderPreferenceView), "PUT": list_of(AgentProviderPreferenceView)}
    access = {"GET": "viewer", "PUT": "member"}
    body_models = {"PUT": ProviderPreferences}
    tags = TAGS

    def get(self, agentId: int) -> None:
        """Preferred provider order as rows `[{providerId, modelId: null, enabled, sortOrder}]`."""
        self.ok(service.preferences(self.require_caller(), agentId))

    def put(self, agentId: int) -> None:
        """Replace the preferred provider order (`{providerIds}`, or a bare array of ids or of rows)."""
        req = _bindings(self, ProviderPreferences, "providerIds")
        self.ok(service.set_preferences(self.require_caller(), agentId, req.providerIds))


class PromptFilesHandler(ApiHandler):
    answers = {"GET": one(AgentPromptFilesView), "PUT": one(AgentPromptFilesView)}
    access = {"GET": "viewer", "PUT": "member"}
    body_models = {"PUT": PromptFiles}
    tags = TAGS

    def get(self, agentId: int) -> None:
        """Workspace files appended to the system prompt, in order (`{files: [...]}`)."""
        self.ok(service.prompt_files(self.require_caller(), agentId))

    def put(self, agentId: int) -> None:
        """Set the prompt-file list (`{files: ["AGENTS.md", ...]}`)."""
        req = self.body(PromptFiles)
        self.ok(service.set_prompt_files(self.require_caller(), agentId, req.files))


ROUTES = [
    route("/api/v1/agents", AgentsHandler),
    route("/api/v1/agents/generate", GenerateHandler),
    route("/api/v1/agents/{id}", AgentHandler),
    route("/api/v1/agents/{id}/capabilities", CapabilitiesHandler),
    route("/api/v1/agents/{agentId}/skills", SkillsHandler),
    route("/api/v1/agents/{agentId}/skills/{skillId}", SkillHandler),
    route("/api/v1/agents/{agentId}/tools", ToolsHandler),
    route("/api/v1/agents/{agentId}/provider-preferences", ProviderPreferencesHandler),
    route("/api/v1/agents/{agentId}/workspace/prompt-files", PromptFilesHandler),
    route("/api/v1/agents/{agentId}/workspace/files", FilesHandler),
    route("/api/v1/agents/{agentId}/workspace/files/**", FileHandler),
    route("/api/v1/agents/{agentId}/workspace/memory/export", MemoryExportHandler),
    route("/api/v1/agents/{agentId}/workspace/memory/personal-files", PersonalFilesHandler),
    route("/api/v1/agents/{agentId}/workspace/memory/personal-file", PersonalFileHandler),
    route("/api/v1/agents/{agentId}/workspace/memory/import", MemoryImportHandler),
    route("/api/v1/agents/{agentId}/workspace/memory/import/preview", MemoryImportPreviewHandler),
]
