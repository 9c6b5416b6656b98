"""LLM Wiki pipeline routes: definitions (save, validate, list, delete) and their runs."""

from __future__ import annotations

from platform_server.features.wiki import pipelines, views
from platform_server.features.wiki.schemas import PipelineBody, PipelineDraft
from platform_server.web.base import ApiHandler
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route

TAGS = ("LLM Wiki",)
KB = "/api/v1/wiki/knowledge-bases/{kbId}"


class PipelinesHandler(ApiHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(views.WikiPipelineView), "POST": one(views.WikiPipelineView)}
    body_models = {"POST": PipelineBody}
    tags = TAGS

    def get(self, kbId: int) -> None:
        """The KB's pipeline definitions."""
        self.ok(pipelines.list_pipelines(self.require_caller(), kbId))

    def post(self, kbId: int) -> None:
        """Save `{name, description?, enabled?, steps: [{type, ...}]}` (or `{yaml}`); same name updates."""
        self.body(PipelineBody)  # what the document states (400); what it cannot (the steps' order...): 422 with every error
        self.ok(pipelines.save(self.require_caller(), kbId, self.json_body()))


class ValidateHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(views.WikiPipelineCheckView)}
    body_models = {"POST": PipelineDraft}
    tags = TAGS

    def post(self, kbId: int) -> None:
        """Check a definition without saving: `{valid, errors: [every problem]}`."""
        self.body(PipelineDraft)  # any JSON object (else 400): what is wrong with it is the answer
        self.ok(pipelines.validate(self.require_caller(), kbId, self.json_body()))


class PipelineHandler(ApiHandler):
    access = {"DELETE": "member"}
    answers = {"DELETE": NOTHING}
    tags = TAGS

    def delete(self, kbId: int, id: int) -> None:
        """Delete a pipeline with its runs (the built-in steps process the KB again when none is enabled)."""
        pipelines.delete(self.require_caller(), kbId, id)
        self.ok(None)


class RunsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(views.WikiPipelineRunView)}
    tags = TAGS

    def get(self, kbId: int, id: int) -> None:
        """The pipeline's runs, newest first (`limit` up to 500)."""
        limit = self.query_long("limit")
        limit = 100 if limit is None else limit  # 0 is out of range, not the default
        if not 1 <= limit <= 500:
            raise BadRequest("limit: must be between 1 and 500")
        self.ok(pipelines.runs(self.require_caller(), kbId, id, limit))


class RunHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(views.WikiPipelineRunView)}
    tags = TAGS

    def get(self, kbId: int, runId: int) -> None:
        """One run with each step's status, start, end, duration, error and detail."""
        self.ok(pipelines.get_run(self.require_caller(), kbId, runId))


ROUTES = [
    route(f"{KB}/pipelines", PipelinesHandler),
    route(f"{KB}/pipelines/validate", ValidateHandler),
    route(f"{KB}/pipelines/{{id}}", PipelineHandler),
    route(f"{KB}/pipelines/{{id}}/runs", RunsHandler),
    route(f"{KB}/pipeline-runs/{{runId}}", RunHandler),
]
