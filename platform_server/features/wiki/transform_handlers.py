"""LLM Wiki transformation routes: templates, applying them, runs (cancel, delete, save as page), aggregates."""

from __future__ import annotations

from platform_server.features.wiki import WIKI, transform, views
from platform_server.features.wiki.schemas import AggregateRequest, ApplyRequest, SaveAsPage, TransformationBody, TransformationUpdate
from platform_server.features.wiki.transform import Transformer
from platform_server.web.base import ApiHandler
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route

TAGS = ("LLM Wiki",)
T = "/api/v1/wiki/transformations"


class TransformHandler(ApiHandler):
    tags = TAGS

    @property
    def transformer(self) -> Transformer:
        return self.platform.runtime(WIKI).transformer


class TransformationsHandler(TransformHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(views.WikiTransformationView), "POST": one(views.WikiTransformationView)}
    body_models = {"POST": TransformationBody}

    def get(self) -> None:
        """Templates of the workspace; `?kbId=` keeps those available to that KB."""
        self.ok(transform.list_for(self.require_caller(), self.query_long("kbId")))

    def post(self) -> None:
        """Create a template `{name, description?, prompt, kbId?}` (`{{content}}` and `{{title}}` are filled in)."""
        self.ok(transform.create(self.require_caller(), self.body(TransformationBody)))


class TransformationHandler(TransformHandler):
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    answers = {"GET": one(views.WikiTransformationView), "PUT": one(views.WikiTransformationView), "DELETE": NOTHING}
    body_models = {"PUT": TransformationUpdate}

    def get(self, id: int) -> None:
        """One template."""
        self.ok(transform.to_dict(transform.get(self.require_caller(), id)))

    def put(self, id: int) -> None:
        """Update name, description or prompt."""
        self.ok(transform.update(self.require_caller(), id, self.body(TransformationUpdate)))

    def delete(self, id: int) -> None:
        """Delete a template with its runs (running ones are stopped)."""
        for run_id in transform.delete(self.require_caller(), id):
            self.transformer.cancel(run_id)
        self.ok(None)


class ApplyHandler(TransformHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiTransformationRunView)}
    body_models = {"POST": ApplyRequest}

    def post(self, id: int) -> None:
        """Run the template on a material (`rawId`) or a page (`slug`) of `kbId`; answers the `running` run."""
        run, prompt = transform.start_apply(self.require_caller(), id, self.body(ApplyRequest))
        self.transformer.launch(run, prompt)
        self.ok(transform.run_dict(run))


class AggregateHandler(TransformHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiTransformationRunView)}
    body_models = {"POST": AggregateRequest}

    def post(self, id: int) -> None:
        """Combine every completed run of the template in `kbId` into one KB-level synthesis page (a run)."""
        req = self.body(AggregateRequest)
        run, prompt = transform.start_aggregate(self.require_caller(), id, req.kbId)
        self.transformer.launch(run, prompt)
        self.ok(transform.run_dict(run))


class RunsHandler(TransformHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(views.WikiTransformationRunView)}

    def get(self) -> None:
        """Runs of the workspace, newest first (`transformationId`, `kbId`, `status` filter)."""
        self.ok(
            transform.list_runs(
                self.require_caller(),
                self.query_long("transformationId"),
                self.query_long("kbId"),
                self.get_query_argument("status", None, strip=False),
            )
        )


class RunHandler(TransformHandler):
    access = {"GET": "viewer", "DELETE": "member"}
    answers = {"GET": one(views.WikiTransformationRunView), "DELETE": NOTHING}

    def get(self, runId: int) -> None:
        """One run with its output."""
        self.ok(transform.run_dict(transform.get_run(self.require_caller(), runId)))

    def delete(self, runId: int) -> None:
        """Delete a run (a running one is stopped first)."""
        transform.delete_run(self.require_caller(), runId)
        self.transformer.cancel(runId)
        self.ok(None)


class CancelHandler(TransformHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiTransformationRunView)}

    def post(self, runId: int) -> None:
        """Cancel a running run: its model call is stopped and nothing is saved."""
        run = transform.mark_cancelled(self.require_caller(), runId)
        self.transformer.cancel(runId)
        self.ok(transform.run_dict(run))


class SaveHandler(TransformHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiSavedRunView)}
    body_models = {"POST": SaveAsPage}

    def post(self, runId: int) -> None:
        """Save a completed run's output as a synthesis page (`slug`, `title` optional)."""
        caller = self.require_caller()
        req = self.body(SaveAsPage)
        self.ok(transform.save_as_page(caller, transform.get_run(caller, runId), req.slug, req.title))


ROUTES = [
    route(T, TransformationsHandler),
    route(f"{T}/runs", RunsHandler),
    route(f"{T}/runs/{{runId}}", RunHandler),
    route(f"{T}/runs/{{runId}}/cancel", CancelHandler),
    route(f"{T}/runs/{{runId}}/save-as-page", SaveHandler),
    route(f"{T}/{{id}}", TransformationHandler),
    route(f"{T}/{{id}}/apply", ApplyHandler),
    route(f"{T}/{{id}}/aggregate", AggregateHandler),
]
