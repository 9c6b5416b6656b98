"""Cron jobs, triggers and the cron-run dashboard routes (reads: viewer; writes: member)."""

from __future__ import annotations

from platform_server.db import utcnow
from platform_server.features.cron import CRON, schedule, service, triggers
from platform_server.features.cron.runner import CronScheduler
from platform_server.features.cron.schemas import CronJobCreate, CronJobUpdate, EventEnvelope, ToggleRequest, TriggerCreate, TriggerUpdate
from platform_server.features.cron.view_models import (
    CronJobView,
    CronPreviewView,
    TriggerFiringView,
    TriggerView,
)
from platform_server.web.base import ApiHandler
from platform_server.web.errors import ApiError, BadRequest, NotFound
from platform_server.web.openapi_answers import NOTHING, list_of, list_or_page, one
from platform_server.web.pagination import page_request
from platform_server.web.routing import route

TAGS = ("Cron jobs and triggers",)
PAGE_PARAMS = [
    {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
    {"name": "size", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 100}},
    {"name": "status", "in": "query", "schema": {"type": "string", "enum": list(service.RUN_STATUSES)}},
]


class CronHandler(ApiHandler):
    tags = TAGS

    @property
    def scheduler(self) -> CronScheduler:
        sched = self.platform.runtime(CRON)
        if sched is None:
            raise ApiError("The scheduler is not running", 503)
        return sched


class CronJobsHandler(CronHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(CronJobView), "POST": one(CronJobView)}
    body_models = {"POST": CronJobCreate}

    def get(self) -> None:
        """Cron jobs of the workspace."""
        self.ok(service.list_jobs(self.require_caller()))

    def post(self) -> None:
        """Create a cron job owned by the caller (5-field expression, IANA time zone)."""
        req = self.body(CronJobCreate)
        self.ok(service.create(self.require_caller(), req, service.default_timezone()))


class ActiveRunsHandler(CronHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(service.CronRunView)}
    query_params = {"GET": [{"name": "conversationId", "in": "query", "schema": {"type": "string"}}]}

    def get(self) -> None:
        """Running cron and trigger runs, optionally only those of one conversation."""
        cid = self.get_query_argument("conversationId", None)
        self.ok(service.active_runs(self.require_caller(), cid.strip() if cid else None))


class PreviewHandler(CronHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(CronPreviewView)}
    query_params = {
        "GET": [
            {"name": "cronExpression", "in": "query", "required": True, "schema": {"type": "string", "pattern": schedule.CRON_PATTERN}},
            {
                "name": "timezone",
                "in": "query",
                "schema": {"type": "string", "maxLength": 64, "pattern": schedule.ZONE_PATTERN},
                "description": "IANA zone; default: the server's (a name the zone database lacks: 404)",
            },
            {"name": "count", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": schedule.PREVIEW_MAX}},
        ]
    }

    def get(self) -> None:
        """A schedule in words and its next run times (ISO with the zone's offset); nothing is stored."""
        self.require_caller()
        given = self.query_long("count")
        count = 5 if given is None else given
        if not 1 <= count <= schedule.PREVIEW_MAX:
            raise BadRequest(f"count: must be 1-{schedule.PREVIEW_MAX}")
        tz = self.get_query_argument("timezone", None, strip=False)
        if tz is not None and (len(tz) > 64 or not schedule.ZONE_RE.fullmatch(tz)):  # the document's pattern (empty is not absent)
            raise BadRequest(f"timezone: not a time zone name '{tz[:64]}'")
        if tz is not None and tz not in schedule.zone_names():  # well formed, but the zone database has no such zone
            raise NotFound(f"timezone: unknown time zone '{tz}'")
        self.ok(schedule.preview(self.get_query_argument("cronExpression", ""), tz or service.default_timezone(), utcnow(), count))


class CronJobHandler(CronHandler):
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    answers = {"GET": one(CronJobView), "PUT": one(CronJobView), "DELETE": NOTHING}
    body_models = {"PUT": CronJobUpdate}

    def get(self, id: int) -> None:
        """One cron job."""
        self.ok(service.get(self.require_caller(), id))

    def put(self, id: int) -> None:
        """Sparse update; the owner or a workspace admin (a new schedule reschedules)."""
        req = self.body(CronJobUpdate)
        self.ok(service.update(self.require_caller(), id, req))

    def delete(self, id: int) -> None:
        """Delete the job and its run history (the owner or a workspace admin)."""
        service.delete(self.require_caller(), id)
        self.ok(None)


class RunNowHandler(CronHandler):
    access = {"POST": "member"}
    answers = {"POST": one(service.CronRunView)}

    def post(self, id: int) -> None:
        """Run now in the background; answers the run (status `running`) at once."""
        self.ok(service.run_now(self.require_caller(), self.scheduler, id))


class ToggleHandler(CronHandler):
    access = {"PUT": "member"}
    answers = {"PUT": one(CronJobView)}
    body_models = {"PUT": ToggleRequest}

    def put(self, id: int) -> None:
        """Enable or disable (`{enabled}`; an empty body flips it)."""
        req = self.toggle_body(ToggleRequest)
        self.ok(service.toggle(self.require_caller(), id, req.enabled))


class CronRunsHandler(CronHandler):
    answers = {"GET": list_or_page(service.CronRunView)}
    access = {"GET": "viewer"}
    query_params = {"GET": PAGE_PARAMS}
    tags = ("Dashboard",)

    def page(self, job_id: int | None) -> None:
        page, size, limit = self.get_query_argument("page", None), self.get_query_argument("size", None), self.query_long("limit")
        status = self.query_choice("status", service.RUN_STATUSES)
        if limit is not None and not 1 <= limit <= self.config.max_page_size:  # checked beside a page too: it is stated
            raise BadRequest(f"limit: must be between 1 and {self.config.max_page_size}")
        if limit is not None and page is None and size is None:
            self.ok(service.recent_runs(self.require_caller(), limit, status, job_id))
            return
        req = page_request(page, size, self.config.max_page_size)
        self.ok(service.runs_page(self.require_caller(), req, status, job_id))

    def get(self) -> None:
        """Newest-first page of runs of the workspace's cron jobs and triggers (`limit` alone: a plain list)."""
        self.page(None)


class CronJobRunsHandler(CronRunsHandler):
    def get(self, cronJobId: int) -> None:  # type: ignore[override]
        """Newest-first page of one cron job's (or trigger's) runs."""
        self.page(cronJobId)


class TriggersHandler(CronHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(TriggerView), "POST": one(TriggerView)}
    body_models = {"POST": TriggerCreate}

    def get(self) -> None:
        """Triggers of the workspace."""
        self.ok(triggers.list_triggers(self.require_caller()))

    def post(self) -> None:
        """Create a cron or event trigger; an enabled cron trigger is scheduled at once."""
        req = self.body(TriggerCreate)
        self.ok(triggers.create(self.require_caller(), req, service.default_timezone()))


class TriggerEventsHandler(CronHandler):
    access = {"POST": "member"}
    answers = {"POST": list_of(TriggerFiringView)}
    body_models = {"POST": EventEnvelope}

    def post(self) -> None:
        """Ingest `{type, source?, payload, id?}`; answers `[{triggerId, fired, reason, runId}]`."""
        req = self.body(EventEnvelope)
        self.ok(triggers.ingest(self.require_caller(), self.scheduler, req))


class TriggerHandler(CronHandler):
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    answers = {"GET": one(TriggerView), "PUT": one(TriggerView), "DELETE": NOTHING}
    body_models = {"PUT": TriggerUpdate}

    def get(self, id: int) -> None:
        """One trigger of the workspace."""
        self.ok(triggers.get(self.require_caller(), id))

    def put(self, id: int) -> None:
        """Sparse update; `patternVersion` goes up when the cron expression changes."""
        req = self.body(TriggerUpdate)
        self.ok(triggers.update(self.require_caller(), id, req, service.default_timezone()))

    def delete(self, id: int) -> None:
        """Delete and unregister the schedule."""
        triggers.delete(self.require_caller(), id)
        self.ok(None)


ROUTES = [
    route("/api/v1/cron-jobs", CronJobsHandler),
    route("/api/v1/cron-jobs/active-runs", ActiveRunsHandler),
    route("/api/v1/cron-jobs/preview", PreviewHandler),
    route("/api/v1/cron-jobs/{id}", CronJobHandler),
    route("/api/v1/cron-jobs/{id}/run", RunNowHandler),
    route("/api/v1/cron-jobs/{id}/toggle", ToggleHandler),
    route("/api/v1/dashboard/cron-runs", CronRunsHandler),
    route("/api/v1/dashboard/cron-runs/{cronJobId}", CronJobRunsHandler),
    route("/api/v1/triggers", TriggersHandler),
    route("/api/v1/triggers/events", TriggerEventsHandler),
    route("/api/v1/triggers/{id}", TriggerHandler),
]
