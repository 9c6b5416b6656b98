"""The audit events page (workspace admin)."""

from __future__ import annotations

from platform_server.features.audit import service
from platform_server.web.base import ApiHandler
from platform_server.web.errors import DATE_TIME_PARAM, parse_date_time_param
from platform_server.web.openapi_answers import page_of
from platform_server.web.pagination import page_request
from platform_server.web.routing import route


class AuditEventsHandler(ApiHandler):
    answers = {"GET": page_of(service.AuditEventView)}
    access = {"GET": "admin"}
    tags = ("Audit",)
    query_params = {
        "GET": [
            {"name": n, "in": "query", "schema": {"type": t}, "description": d}
            for n, t, d in (
                ("page", "integer", "page number, from 1"),
                ("size", "integer", "page size"),
                ("actor", "string", "the actor's username or user id"),
                ("action", "string", "CREATE, UPDATE, DELETE, ..."),
                ("resourceType", "string", "e.g. AGENT, USER, TOKEN"),
                ("resourceId", "string", "the resource's id"),
            )
        ]
        + [
            {"name": n, "in": "query", "schema": DATE_TIME_PARAM, "description": f"RFC 3339, inclusive (the {d})"}
            for n, d in (("startTime", "first moment"), ("endTime", "last moment"))
        ]
    }

    def get(self) -> None:
        """Audit events of the workspace, newest first; filters actor, action, resourceType, resourceId, startTime, endTime."""
        caller = self.require_caller()
        req = page_request(self.get_query_argument("page", None), self.get_query_argument("size", None), self.config.max_page_size)
        times = {}
        for name in ("startTime", "endTime"):
            raw = self.get_query_argument(name, None, strip=False)  # the document's format has no spaces
            if raw is not None:
                times[name] = parse_date_time_param(name, raw)
        self.ok(
            service.page_events(
                caller.workspace_id,
                req,
                action=self.get_query_argument("action", None),
                resource_type=self.get_query_argument("resourceType", None),
                actor=self.get_query_argument("actor", None),
                resource_id=self.get_query_argument("resourceId", None),
                start=times.get("startTime"),
                end=times.get("endTime"),
            )
        )


ROUTES = [route("/api/v1/audit/events", AuditEventsHandler)]
