"""Workflows (workspace-scoped: viewer reads, member writes), their drafts, revisions and runs."""

from __future__ import annotations

import json
from typing import Any

from platform_server.features.models import LLM
from platform_server.features.workflows import WORKFLOWS, service
from platform_server.features.workflows.schemas import (
    DraftBody,
    GenerateRequest,
    ResumeRequest,
    RunRequest,
    WorkflowCompileView,
    WorkflowCreate,
    WorkflowDetailView,
    WorkflowGeneratedView,
    WorkflowPublishedView,
    WorkflowRunDetailView,
    WorkflowRunView,
    WorkflowTemplateView,
    WorkflowUpdate,
    WorkflowView,
)
from platform_server.platform import Flag
from platform_server.web.base import ApiHandler
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import gated, route

TAGS = ("Workflows",)
MAX_INPUT_BYTES = 64 * 1024


def _checked_input(value: Any) -> Any:
    if len(json.dumps(value, ensure_ascii=False)) > MAX_INPUT_BYTES:
        raise BadRequest(f"input: larger than {MAX_INPUT_BYTES} bytes")
    return value


class WorkflowsHandler(ApiHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(WorkflowView), "POST": one(WorkflowDetailView)}
    body_models = {"POST": WorkflowCreate}
    tags = TAGS

    def get(self) -> None:
        """Workflows of the workspace, newest first."""
        self.ok(service.list_workflows(self.require_caller()))

    def post(self) -> None:
        """Create a workflow; its draft starts empty."""
        req = self.body(WorkflowCreate)
        self.ok(service.create(self.require_caller(), req.name, req.description, req.enabled))


class WorkflowHandler(ApiHandler):
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    answers = {"GET": one(WorkflowDetailView), "PUT": one(WorkflowDetailView), "DELETE": NOTHING}
    body_models = {"PUT": WorkflowUpdate}
    tags = TAGS

    def get(self, id: int) -> None:
        """One workflow with its inline draft and latest published revision."""
        self.ok(service.get(self.require_caller(), id))

    def put(self, id: int) -> None:
        """Update name, description or enabled."""
        req = self.body(WorkflowUpdate)
        self.ok(service.update(self.require_caller(), id, req.model_dump()))

    def delete(self, id: int) -> None:
        """Soft-delete the workflow (its revisions and runs stay readable by id)."""
        service.delete(self.require_caller(), id)
        self.ok(None)


class DraftHandler(ApiHandler):
    access = {"PUT": "member"}
    answers = {"PUT": one(WorkflowDetailView)}
    body_models = {"PUT": DraftBody}
    tags = TAGS

    def put(self, id: int) -> None:
        """Save the inline draft graph without compiling it."""
        req = self.body(DraftBody)
        self.ok(service.save_draft(self.require_caller(), id, req.value()))


class CompileHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(WorkflowCompileView)}
    tags = TAGS

    def post(self, id: int) -> None:
        """Compile the saved draft and return diagnostics; nothing is stored."""
        self.ok(service.compile_saved(self.require_caller(), id))


class PublishHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(WorkflowPublishedView)}
    tags = TAGS

    def post(self, id: int) -> None:
        """Compile the draft and store it as a new immutable revision (400 when it has errors)."""
        self.ok(service.publish(self.require_caller(), id))


class PreviewCompileHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(WorkflowCompileView)}
    body_models = {"POST": DraftBody}
    tags = TAGS

    def post(self) -> None:
        """Compile any draft JSON (schema and ACL diagnostics) without storing it."""
        req = self.body(DraftBody)
        draft = req.value()
        service.check_draft_size(draft)
        self.ok(service.compile_draft(self.require_caller(), draft))


class TemplatesHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(WorkflowTemplateView)}
    tags = TAGS

    def get(self) -> None:
        """Canonical graph templates (agent nodes left for the user to fill in)."""
        self.ok(service.templates())


class GenerateHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(WorkflowGeneratedView)}
    body_models = {"POST": GenerateRequest}
    tags = TAGS

    async def post(self) -> None:
        """Draft a graph from a description with the default model; compiled, returned, not saved."""
        req = self.body(GenerateRequest)
        self.ok(await service.generate(self.require_caller(), self.platform.runtime(LLM), req.description))


class RunsHandler(ApiHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(WorkflowRunView), "POST": one(WorkflowRunView)}
    body_models = {"POST": RunRequest}
    tags = TAGS
    query_params = {"GET": [{"name": "limit", "in": "query", "required": False, "schema": {"type": "integer"}}]}

    def get(self, id: int) -> None:
        """The workflow's most recent runs (`limit`, default 20, at most 50)."""
        limit = self.query_long("limit")  # documented as an integer: empty is none (a 400)
        if limit is not None and limit < 1:
            raise BadRequest("limit: must be a positive integer")
        self.ok(service.runs_of(self.require_caller(), id, 20 if limit is None else limit))

    def post(self, id: int) -> None:
        """Start a run of the latest published revision with `{input}` (extension route)."""
        req = self.body(RunRequest)
        engine = self.platform.runtime(WORKFLOWS)
        self.ok(engine.start_run(self.require_caller(), id, _checked_input(req.input)))


class PausedRunsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(WorkflowRunView)}
    tags = TAGS

    def get(self) -> None:
        """Paused runs across the workspace, newest first."""
        self.ok(service.paused_runs(self.require_caller()))


class RunHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(WorkflowRunDetailView)}
    tags = TAGS

    def get(self, runId: int) -> None:
        """One run with its step rows."""
        self.ok(service.get_run(self.require_caller(), runId))


class ResumeHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(WorkflowRunView)}
    body_models = {"POST": ResumeRequest}
    tags = TAGS

    def post(self, runId: int) -> None:
        """Resume a paused run with an outcome (409 when it is not paused or the token is stale)."""
        req = self.body(ResumeRequest)
        engine = self.platform.runtime(WORKFLOWS)
        self.ok(engine.resume(self.require_caller(), runId, req.outcome, req.pauseToken, _checked_input(req.payload)))


ROUTES = gated(
    "workflows",
    [
        route("/api/v1/workflows", WorkflowsHandler),
        route("/api/v1/workflows/draft/generate", GenerateHandler),
        route("/api/v1/workflows/draft/preview-compile", PreviewCompileHandler),
        route("/api/v1/workflows/draft/templates", TemplatesHandler),
        route("/api/v1/workflows/runs/paused", PausedRunsHandler),
        route("/api/v1/workflows/runs/{runId}", RunHandler),
        route("/api/v1/workflows/runs/{runId}/resume", ResumeHandler),
        route("/api/v1/workflows/{id}", WorkflowHandler),
        route("/api/v1/workflows/{id}/compile", CompileHandler),
        route("/api/v1/workflows/{id}/draft", DraftHandler),
        route("/api/v1/workflows/{id}/publish", PublishHandler),
        route("/api/v1/workflows/{id}/runs", RunsHandler),
    ],
)

FLAGS = [Flag("workflows", True, "Workflow editor, runs and their approval timeouts")]
