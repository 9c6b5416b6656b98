"""Guard routes: rules and configs (global: written by a global admin), grants, approvals, logs, feed, badges."""

from __future__ import annotations

from typing import Any

from platform_server.db import parse_iso
from platform_server.features.guard import grants, rules, settings, views
from platform_server.features.guard.schemas import (
    FileGuardBody,
    GrantBody,
    GuardConfigBody,
    GuardRulesView,
    RuleBody,
    RuleCreateBody,
    RulesImport,
    ToggleBody,
)
from platform_server.features.guard.view_models import (
    ApprovalActiveGrantsView,
    ApprovalGrantView,
    ApprovalResolutionView,
    FileGuardView,
    GuardApprovalView,
    GuardAuditStatsView,
    GuardConfigView,
    GuardMyApprovalView,
    GuardRuleExportView,
    GuardRuleImportView,
    GuardRuleView,
    GuardToolCallView,
)
from platform_server.web.base import ApiHandler
from platform_server.web.bodies import validated
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, list_of, one, page_of
from platform_server.web.pagination import PageRequest, page_request
from platform_server.web.routing import route

SECURITY = ("Security and tool guard",)
GRANTS = ("Approval grants",)


def _q(name: str, kind: str = "string", description: str = "") -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": {"type": kind}, "description": description}


PAGING = [_q("page", "integer"), _q("size", "integer")]


class PagedHandler(ApiHandler):
    def page(self) -> PageRequest:
        return page_request(self.get_query_argument("page", None), self.get_query_argument("size", None), self.config.max_page_size)


# ---- rules ----------------------------------------------------------------------------------------


class RulesHandler(ApiHandler):
    access = {"GET": "admin", "POST": GLOBAL_ADMIN}
    answers = {"GET": one(GuardRulesView), "POST": one(GuardRuleView)}
    body_models = {"POST": RuleCreateBody}
    tags = SECURITY

    def get(self) -> None:
        """Every rule (built-in and custom), each with a `builtin` flag; with `page` a page of `records`."""
        items = rules.list_rules()
        if self.original_console:
            items = [views.for_original_console(r) for r in items]
        # the original console pages this list: `{records, total, page, size}`; a size without a page is still
        # checked (the document types it), though only a page asks for the paged answer
        req = page_request(self.get_query_argument("page", None), self.get_query_argument("size", None), 500)
        if self.get_query_argument("page", None) is None:
            self.ok(items)
            return
        self.ok({"records": items[req.offset : req.offset + req.size], "total": len(items), "page": req.page, "size": req.size})

    def post(self) -> None:
        """Create a custom rule; `ruleId` is generated from the name when absent."""
        body = self.body(RuleCreateBody)
        self.ok(rules.create(self.require_caller(), body.model_dump(exclude_unset=True)))


class BuiltinRulesHandler(ApiHandler):
    access = {"GET": "admin"}
    answers = {"GET": list_of(GuardRuleView)}
    tags = SECURITY

    def get(self) -> None:
        """The built-in rules (read-only; they can be toggled)."""
        items = rules.list_rules(builtin=True)
        self.ok([views.for_original_console(r) for r in items] if self.original_console else items)


class RulesExportHandler(ApiHandler):
    access = {"GET": "admin"}
    answers = {"GET": one(GuardRuleExportView)}
    tags = SECURITY

    def get(self) -> None:
        """Every rule as an importable JSON document."""
        self.ok(rules.export_rules())


class RulesImportHandler(ApiHandler):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": one(GuardRuleImportView)}
    body_models = {"POST": RulesImport}
    query_params = {"POST": [_q("dryRun", "boolean", "validate and answer the plan without writing")]}
    tags = SECURITY

    def post(self) -> None:
        """Upsert rules by ruleId (an export, or a bare list); nothing is written unless all are valid."""
        caller = self.require_caller()
        payload = self.json_body()
        # each rule as the document states it (types included) before rules.import_rules checks the rest
        validated(RulesImport, {"rules": payload} if isinstance(payload, list) else payload)
        self.ok(rules.import_rules(caller, payload, dry_run=bool(self.query_bool("dryRun"))))


class RuleHandler(ApiHandler):
    access = {"PUT": GLOBAL_ADMIN, "DELETE": GLOBAL_ADMIN}
    answers = {"PUT": one(GuardRuleView), "DELETE": NOTHING}
    body_models = {"PUT": RuleBody}
    tags = SECURITY

    def put(self, ruleId: str) -> None:
        """Sparse update of a custom rule (built-ins are read-only)."""
        body = self.body(RuleBody)
        self.ok(rules.update(self.require_caller(), ruleId, body.model_dump(exclude_unset=True)))

    def delete(self, ruleId: str) -> None:
        """Delete a custom rule (built-ins: 409)."""
        rules.delete(self.require_caller(), ruleId)
        self.ok(None)


class RuleToggleHandler(ApiHandler):
    access = {"PUT": GLOBAL_ADMIN}
    answers = {"PUT": one(GuardRuleView)}
    body_models = {"PUT": ToggleBody}
    tags = SECURITY

    def put(self, ruleId: str) -> None:
        """Enable or disable a rule (`{enabled}`; no body flips it)."""
        body = self.toggle_body(ToggleBody)
        self.ok(rules.toggle(self.require_caller(), ruleId, body.enabled))


class RuleByIdHandler(ApiHandler):
    access = {"DELETE": GLOBAL_ADMIN}
    answers = {"DELETE": NOTHING}
    tags = SECURITY

    def delete(self, id: int) -> None:
        """Delete a custom rule by primary key."""
        rules.delete_by_pk(self.require_caller(), id)
        self.ok(None)


# ---- configs ----------------------------------------------------------------------------------------


class GuardConfigHandler(ApiHandler):
    access = {"GET": "admin", "PUT": GLOBAL_ADMIN}
    answers = {"GET": one(GuardConfigView), "PUT": one(GuardConfigView)}
    body_models = {"PUT": GuardConfigBody}
    tags = SECURITY

    def get(self) -> None:
        """`{enabled, defaultDecisions}` of the tool guard."""
        self.ok(settings.get_config())

    def put(self) -> None:
        """Sparse update; `defaultDecisions.critical` can never be allow."""
        body = self.body(GuardConfigBody)
        decisions = body.defaultDecisions.model_dump(exclude_none=True) if body.defaultDecisions else None
        self.ok(settings.put_config(self.require_caller(), body.enabled, decisions))


class FileGuardHandler(ApiHandler):
    access = {"GET": "admin", "PUT": GLOBAL_ADMIN}
    answers = {"GET": one(FileGuardView), "PUT": one(FileGuardView)}
    body_models = {"PUT": FileGuardBody}
    tags = SECURITY

    def get(self) -> None:
        """`{enabled, patterns}`: globs the file tools may never read, write or list."""
        self.ok(_file_guard_view(settings.get_file_guard()))

    def put(self) -> None:
        """Sparse update of the file guard."""
        body = self.body(FileGuardBody)
        self.ok(_file_guard_view(settings.put_file_guard(self.require_caller(), body.enabled, body.patterns)))


def _file_guard_view(value: dict[str, Any]) -> dict[str, Any]:
    """fileGuardEnabled / sensitivePaths: the original console's names beside the spec's."""
    return {**value, "fileGuardEnabled": value["enabled"], "sensitivePaths": value["patterns"]}


# ---- security views ---------------------------------------------------------------------------------


class ApprovalsHandler(PagedHandler):
    access = {"GET": "admin"}
    answers = {"GET": page_of(GuardApprovalView)}
    query_params = {
        "GET": [
            *PAGING,
            {**_q("status", description="pending | approved | denied | expired"), "schema": {"type": "string", "enum": list(views.PENDING_STATUSES)}},
        ]
    }
    tags = SECURITY

    def get(self) -> None:
        """Approval records of the workspace with their status, newest first."""
        self.ok(views.approvals_page(self.require_caller(), self.page(), self.query_choice("status", views.PENDING_STATUSES)))


class MyPendingHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(GuardMyApprovalView)}
    tags = GRANTS

    def get(self) -> None:
        """The caller's pending tool calls across the workspace's conversations (the approvals inbox), oldest first."""
        self.ok(views.my_pending(self.require_caller()))


class AuditLogsHandler(PagedHandler):
    access = {"GET": "admin"}
    answers = {"GET": page_of(GuardToolCallView)}
    query_params = {"GET": [*PAGING, _q("toolName"), _q("decision"), _q("success", "boolean")]}
    tags = SECURITY

    def get(self) -> None:
        """Tool calls of the workspace with decision, severity, duration and success, newest first."""
        page = views.audit_logs(
            self.require_caller(),
            self.page(),
            self.get_query_argument("toolName", None),
            self.get_query_argument("decision", None),
            self.query_bool("success"),
        )
        if self.original_console:
            page["records"] = [views.for_original_console(r) for r in page["records"]]
        self.ok(page)


class AuditStatsHandler(ApiHandler):
    access = {"GET": "admin"}
    answers = {"GET": one(GuardAuditStatsView)}
    query_params = {"GET": [_q("days", "integer", "only the last N days (1-3650)")]}
    tags = SECURITY

    def get(self) -> None:
        """Tool-call counts by decision, tool and severity, failures and mean duration."""
        days = self.query_long("days")
        if days is not None and not 1 <= days <= 3650:
            raise BadRequest("days: must be between 1 and 3650")
        self.ok(views.audit_stats(self.require_caller(), days))


# ---- grants and resolutions -------------------------------------------------------------------------


class GrantsHandler(PagedHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": page_of(ApprovalGrantView), "POST": one(ApprovalGrantView)}
    body_models = {"POST": GrantBody}
    query_params = {"GET": [*PAGING, _q("scopeType"), _q("toolName"), _q("active", "boolean")]}
    tags = GRANTS

    def get(self) -> None:
        """The workspace's grants, newest first."""
        self.ok(
            grants.page(
                self.require_caller(),
                self.page(),
                self.get_query_argument("scopeType", None),
                self.get_query_argument("toolName", None),
                self.query_bool("active"),
            )
        )

    def post(self) -> None:
        """Create a grant (WORKSPACE scope, another user or another's agent need workspace admin)."""
        body = self.body(GrantBody)
        expire_at = None
        if body.expireAt:
            try:
                expire_at = parse_iso(body.expireAt)
            except ValueError:
                raise BadRequest("expireAt: expected an ISO 8601 date-time")
        self.ok(
            grants.create(
                self.require_caller(),
                body.scopeType,
                str(body.scopeId),
                body.toolName,
                body.ruleId,
                body.maxSeverity,
                body.grantKind,
                expire_at,
                body.note,
            )
        )


class ActiveGrantsHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(ApprovalActiveGrantsView)}
    tags = GRANTS

    def get(self) -> None:
        """Counts of active grants by scope type and kind."""
        self.ok(grants.active_summary(self.require_caller()))


class GrantHandler(ApiHandler):
    access = {"DELETE": "member"}
    answers = {"DELETE": one(ApprovalGrantView)}
    tags = GRANTS

    def delete(self, id: int) -> None:
        """Revoke a grant (soft: it stays listed as revoked)."""
        self.ok(grants.revoke(self.require_caller(), id))


class ResolutionsHandler(PagedHandler):
    access = {"GET": "viewer"}
    answers = {"GET": page_of(ApprovalResolutionView)}
    query_params = {"GET": [*PAGING, _q("grantId"), _q("conversationId")]}
    tags = GRANTS

    def get(self) -> None:
        """Final decisions (manual, by grant, denied, expired), newest first; non-admins see their own."""
        self.ok(
            views.resolutions_page(self.require_caller(), self.page(), self.query_long("grantId"), self.get_query_argument("conversationId", None))
        )


# ---- chat, activity, notifications ------------------------------------------------------------------


class ChatPendingHandler(ApiHandler):
    answers = {"GET": list_of(GuardApprovalView)}  # the same pending_dict as the approvals page
    access = {"GET": "viewer"}
    tags = ("Chat",)

    def get(self, conversationId: str) -> None:
        """The caller's pending tool calls in their conversation, oldest first."""
        self.ok(views.chat_pending(self.require_caller(), conversationId))


class ActivityFeedHandler(PagedHandler):
    access = {"GET": "viewer"}
    query_params = {
        "GET": [*PAGING, {**_q("kind", description="Only one kind of item"), "schema": {"type": "string", "enum": list(views.FEED_KINDS)}}]
    }
    tags = ("Audit, activity, notifications",)
    answers = {"GET": page_of(views.ActivityItemView)}

    def get(self) -> None:
        """Audit events, approval decisions and tool calls merged, newest first."""
        # `source`: the original console's name for `kind`
        # each given value is one of the documented enum's (an empty one is not), `kind` wins
        kind, source = self.query_choice("kind", views.FEED_KINDS), self.query_choice("source", views.FEED_KINDS)
        kind = kind or source
        self.ok(views.activity_feed(self.require_caller(), self.page(), kind))


class NotificationsSummaryHandler(ApiHandler):
    answers = {"GET": one(views.NotificationsSummaryView)}
    access = {"GET": "viewer"}
    tags = ("Audit, activity, notifications",)

    def get(self) -> None:
        """Counts for the sidebar badges (pending approvals, failures in 24h, active grants)."""
        self.ok(views.notifications_summary(self.require_caller()))


ROUTES = [
    route("/api/v1/security/guard/rules", RulesHandler),
    route("/api/v1/security/guard/rules/builtin", BuiltinRulesHandler),
    route("/api/v1/security/guard/rules/export", RulesExportHandler),
    route("/api/v1/security/guard/rules/import", RulesImportHandler),
    route("/api/v1/security/guard/rules/by-id/{id}", RuleByIdHandler),
    route("/api/v1/security/guard/rules/{ruleId:str}", RuleHandler),
    route("/api/v1/security/guard/rules/{ruleId:str}/toggle", RuleToggleHandler),
    route("/api/v1/security/guard/config", GuardConfigHandler),
    route("/api/v1/security/guard/config/file-guard", FileGuardHandler),
    route("/api/v1/security/approvals", ApprovalsHandler),
    route("/api/v1/security/audit/logs", AuditLogsHandler),
    route("/api/v1/security/audit/stats", AuditStatsHandler),
    route("/api/v1/approval/grants", GrantsHandler),
    route("/api/v1/approval/grants/active", ActiveGrantsHandler),
    route("/api/v1/approval/grants/{id}", GrantHandler),
    route("/api/v1/approval/resolutions", ResolutionsHandler),
    route("/api/v1/approval/pending", MyPendingHandler),
    route("/api/v1/chat/{conversationId:str}/pending-approvals", ChatPendingHandler),
    route("/api/v1/activity/feed", ActivityFeedHandler),
    route("/api/v1/notifications/summary", NotificationsSummaryHandler),
]
