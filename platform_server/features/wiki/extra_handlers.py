"""LLM Wiki routes around the core: page-type profiles, broken-link lint, admin failure list."""

from __future__ import annotations

from typing import Any

import peewee

from platform_server.db import iso
from platform_server.features.wiki import WIKI, hot_cache, kbs, lint, page_views, permissions, profile, views
from platform_server.features.wiki.models import KnowledgeBase, PageSource, RawMaterial
from platform_server.features.wiki.schemas import PageTypeProfile, PermissionRule, ProfileDraft
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import route

TAGS = ("LLM Wiki",)
KB = "/api/v1/wiki/knowledge-bases"


class ProfileHandler(ApiHandler):
    access = {"GET": "viewer", "PUT": "member"}
    answers = {"GET": one(views.WikiProfileView), "PUT": one(views.WikiProfileView)}
    body_models = {"PUT": PageTypeProfile}
    tags = TAGS

    def get(self, id: int) -> None:
        """The KB's page-type profile (the built-in default when none is saved)."""
        self.ok(profile.get(self.require_caller(), id))

    def put(self, id: int) -> None:
        """Save a profile `{defaultType, pageTypes: [{name, description}]}`."""
        self.ok(profile.save(self.require_caller(), id, self.json_body()))


class ProfileResetHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiProfileView)}
    tags = TAGS

    def post(self, id: int) -> None:
        """Drop the saved profile: the built-in default applies again."""
        self.ok(profile.reset(self.require_caller(), id))


class ProfileValidateHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(views.WikiProfileCheckView)}
    body_models = {"POST": ProfileDraft}
    tags = TAGS

    def post(self, id: int) -> None:
        """Check a profile without saving: `{valid, error}`."""
        data = self.json_body()
        if not isinstance(data, dict):  # the document's one rule here (ProfileDraft): a JSON object
            raise BadRequest("Request body must be a JSON object")
        self.ok(profile.validate(self.require_caller(), id, data))


class LintHandler(ApiHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": one(page_views.WikiLintLatestView), "POST": one(page_views.WikiLintJobView)}
    tags = TAGS

    def get(self, kbId: int) -> None:
        """The latest finished broken-link scan, grouped by missing target."""
        self.ok(lint.latest(self.require_caller(), kbId))

    def post(self, kbId: int) -> None:
        """Start a broken-link scan job; poll `lint/broken-links/jobs/{jobId}`."""
        run = lint.start(self.require_caller(), kbId)
        self.platform.runtime(WIKI).spawn(lint.execute(run.id, run.kb_id))
        self.ok(lint.job_dict(run))


class LintJobHandler(ApiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(page_views.WikiLintJobView)}
    tags = TAGS

    def get(self, kbId: int, jobId: int) -> None:
        """One scan job with its result once completed."""
        self.ok(lint.job(self.require_caller(), kbId, jobId))


def failures() -> list[dict[str, Any]]:
    """Materials in every workspace that failed, are partial, or completed without any page (degraded)."""
    pages = PageSource.select(PageSource.raw, peewee.fn.COUNT(PageSource.id).alias("n")).group_by(PageSource.raw)
    counts = {row.raw_id: row.n for row in pages}
    q = (
        RawMaterial.select(RawMaterial, KnowledgeBase.name, KnowledgeBase.id)
        .join(KnowledgeBase)
        .where(RawMaterial.status.in_(["failed", "partial", "completed"]))
        .order_by(RawMaterial.update_time.desc())
    )
    out = []
    for raw in q:
        n = counts.get(raw.id, 0)
        if raw.status == "completed" and n > 0:
            continue
        out.append(
            {
                "rawId": str(raw.id),
                "kbId": str(raw.kb.id),
                "kbName": raw.kb.name,
                "workspaceId": str(raw.workspace_id),
                "title": raw.title,
                "status": "degraded" if raw.status == "completed" else raw.status,
                "error": raw.error,
                "pageCount": n,
                "updateTime": iso(raw.update_time),
            }
        )
    return out


class FailuresHandler(ApiHandler):
    access = {"GET": GLOBAL_ADMIN}
    answers = {"GET": list_of(views.WikiFailureView)}
    tags = TAGS

    def get(self) -> None:
        """Materials that failed, are partial, or produced no page, across all knowledge bases (global admin)."""
        self.ok(failures())


class PermissionsHandler(ApiHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(views.WikiPermissionView), "POST": one(views.WikiPermissionView)}
    body_models = {"POST": PermissionRule}
    tags = TAGS

    def get(self, kbId: int, agentId: int) -> None:
        """The agent's page-type rules in the KB (`*` covers every type without its own rule)."""
        self.ok(permissions.list_rules(self.require_caller(), kbId, agentId))

    def post(self, kbId: int, agentId: int) -> None:
        """Add or update the rule `{pageType, read: allow|deny, write: allow|deny|approval_required}`."""
        self.ok(permissions.upsert(self.require_caller(), kbId, agentId, self.body(PermissionRule)))


class PermissionHandler(ApiHandler):
    access = {"DELETE": "member"}
    answers = {"DELETE": NOTHING}
    tags = TAGS

    def delete(self, kbId: int, agentId: int, id: int) -> None:
        """Delete a rule (the type is then allowed, or follows the `*` rule)."""
        permissions.delete(self.require_caller(), kbId, agentId, id)
        self.ok(None)


class HotCacheHandler(ApiHandler):
    access = {"GET": "viewer", "DELETE": "member"}
    answers = {"GET": one(views.WikiHotCacheView), "DELETE": NOTHING}
    tags = TAGS

    def get(self, kbId: int) -> None:
        """The KB's hot cache: the digest agents bound to it get in their system prompt."""
        self.ok(hot_cache.get(self.require_caller(), kbId))

    def delete(self, kbId: int) -> None:
        """Soft-delete the hot cache: it leaves the prompts until regenerated."""
        hot_cache.delete(self.require_caller(), kbId)
        self.ok(None)


class HotCacheRegenerateHandler(ApiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiHotCacheView)}
    tags = TAGS

    def post(self, kbId: int) -> None:
        """Rebuild the hot cache in the background; answers the row as `pending`."""
        kb = kbs.get_kb(self.require_caller(), kbId)
        self.ok(self.platform.runtime(WIKI).refresh_hot_cache(self.require_caller(), kb.id))


ROUTES = [
    route(f"{KB}/{{id}}/page-type-profile", ProfileHandler),
    route(f"{KB}/{{id}}/page-type-profile/reset-default", ProfileResetHandler),
    route(f"{KB}/{{id}}/page-type-profile/validate", ProfileValidateHandler),
    route(f"{KB}/{{kbId}}/lint/broken-links", LintHandler),
    route(f"{KB}/{{kbId}}/lint/broken-links/jobs/{{jobId}}", LintJobHandler),
    route("/api/v1/wiki/admin/failures", FailuresHandler),
    route(f"{KB}/{{kbId}}/agents/{{agentId}}/page-type-permissions", PermissionsHandler),
    route("/api/v1/wiki/hot-cache/{kbId}", HotCacheHandler),
    route("/api/v1/wiki/hot-cache/{kbId}/regenerate", HotCacheRegenerateHandler),
    route(f"{KB}/{{kbId}}/agents/{{agentId}}/page-type-permissions/{{id}}", PermissionHandler),
]
