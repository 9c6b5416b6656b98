"""The /api/v1/skills/curator/* and /api/v1/skills/routines* routes."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from platform_server.features.models import LLM
from platform_server.features.skills import SKILLS_CURATOR, curator, routines, service, snapshots
from platform_server.features.skills.curator_runtime import Curator
from platform_server.features.skills.install_handlers import SkillsBase
from platform_server.features.skills.schemas import ActivateBody, ConsolidateBody, PromoteBody, SkillIds, SnapshotBody
from platform_server.features.skills.views import (
    CuratedSkillView,
    CuratorAdoptView,
    CuratorReleaseView,
    CuratorReportView,
    CuratorRestoreView,
    CuratorRunView,
    CuratorSnapshotView,
    CuratorStatusView,
    SkillRoutineMineView,
    SkillRoutinePromotedView,
    SkillRoutineView,
)
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import list_of, one
from platform_server.web.routing import gated, route

MAX_LIMIT = 100
M = TypeVar("M", bound=BaseModel)


_LIMIT = [
    {
        "name": "limit",
        "in": "query",
        "required": False,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
        "description": f"How many, newest first (default 20, at most {MAX_LIMIT})",
    }
]
_ARCHIVED = [
    {
        "name": "includeArchived",
        "in": "query",
        "required": False,
        "schema": {"type": "boolean"},
        "description": "Also list archived skills (default false)",
    }
]


class CuratorBase(SkillsBase):
    tags = ("Skills curator",)

    @property
    def curator(self) -> Curator:
        return self.platform.runtime(SKILLS_CURATOR)

    def limit(self) -> int:
        value = self.query_long("limit")
        if value is None:
            return 20
        if not 1 <= value <= MAX_LIMIT:
            raise BadRequest(f"limit: must be between 1 and {MAX_LIMIT}")
        return value

    def status(self) -> dict[str, Any]:
        return curator.status(self.require_caller().workspace_id, self.curator.settings)

    def body_or_query(self, model: type[M], field: str, query: str) -> M:
        """The JSON body, or with no body the `query` parameter (as the original console sends it) as `field`, and
        with neither `true`: the document makes both optional (3.0 cannot say "one of the two"), and the route's
        name (`activate`, `consolidate`) says what a bare POST asks for."""
        flag = self.query_bool(query)  # read even when the body decides: a malformed value is refused, not ignored
        if self.body_bytes.strip():
            return self.body(model)
        return model.model_validate({field: True if flag is None else flag})

    def optional_body(self, model: type[M]) -> M:
        """The body parsed into `model`, or the model's defaults when there is no body."""
        return model() if not self.body_bytes.strip() else self.body(model)


class StatusHandler(CuratorBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(CuratorStatusView)}

    def get(self) -> None:
        """Curator control status: active, paused, consolidation, last and next run, counts."""
        self.ok(self.status())


class ActivateHandler(CuratorBase):
    access = {"POST": "admin"}
    answers = {"POST": one(CuratorStatusView)}
    body_models = {"POST": ActivateBody}

    def post(self) -> None:
        """`{active}`: true makes scheduled scans really archive, false makes them previews; no body and no `activate`:
        true (workspace admin)."""
        req = self.body_or_query(ActivateBody, "active", "activate")
        curator.set_flag(
            self.require_caller(),
            "active",
            req.active,
            "curator activated (scheduled scans archive)" if req.active else "curator deactivated (preview only)",
        )
        self.ok(self.status())


class PauseHandler(CuratorBase):
    access = {"POST": "admin"}
    answers = {"POST": one(CuratorStatusView)}

    def post(self) -> None:
        """Pause scheduled scanning (workspace admin)."""
        curator.set_flag(self.require_caller(), "paused", True, "curator scheduled scanning paused")
        self.ok(self.status())


class ResumeHandler(CuratorBase):
    access = {"POST": "admin"}
    answers = {"POST": one(CuratorStatusView)}

    def post(self) -> None:
        """Resume scheduled scanning (workspace admin)."""
        curator.set_flag(self.require_caller(), "paused", False, "curator scheduled scanning resumed")
        self.ok(self.status())


class ConsolidateHandler(CuratorBase):
    access = {"POST": "admin"}
    answers = {"POST": one(CuratorStatusView)}
    body_models = {"POST": ConsolidateBody}

    def post(self) -> None:
        """`{enabled}`: turn the LLM consolidation pass (merging near-duplicates) on or off; no body and no `enabled`:
        on (workspace admin)."""
        req = self.body_or_query(ConsolidateBody, "enabled", "enabled")
        curator.set_flag(self.require_caller(), "consolidate", req.enabled, "curator consolidation " + ("enabled" if req.enabled else "disabled"))
        self.ok(self.status())


class DryRunHandler(CuratorBase):
    access = {"POST": "admin"}
    answers = {"POST": one(CuratorReportView)}

    async def post(self) -> None:
        """Run a curator preview now: a report of proposed archive/merge/keep actions; nothing changes (workspace admin)."""
        self.ok(await self.curator.dry_run(self.require_caller()))


class ReportsHandler(CuratorBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(CuratorRunView)}
    query_params = {"GET": _LIMIT}

    def get(self) -> None:
        """Recent curator reports, newest first (summaries; one report has the actions)."""
        self.ok(curator.reports(self.require_caller(), self.limit()))


class ReportHandler(CuratorBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(CuratorReportView)}

    def get(self, runId: int) -> None:
        """One curator report with every proposed action, its reasons and outcome."""
        self.ok(curator.report(self.require_caller(), runId))


class ManagedHandler(CuratorBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(CuratedSkillView)}
    query_params = {"GET": _ARCHIVED}

    def get(self) -> None:
        """Skills under autonomous curation."""
        self.ok(curator.skill_list(self.require_caller(), True, bool(self.query_bool("includeArchived"))))


class UnmanagedHandler(CuratorBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(CuratedSkillView)}
    query_params = {"GET": _ARCHIVED}

    def get(self) -> None:
        """Skills outside autonomous curation."""
        self.ok(curator.skill_list(self.require_caller(), False, bool(self.query_bool("includeArchived"))))


class AdoptHandler(CuratorBase):
    access = {"POST": "admin"}
    answers = {"POST": one(CuratorAdoptView)}
    body_models = {"POST": SkillIds}

    def post(self) -> None:
        """Hand skills over to curation; body is an array of string ids (workspace admin)."""
        self.ok(curator.adopt(self.require_caller(), curator.parse_ids(self.json_body())))


class ReleaseHandler(CuratorBase):
    access = {"POST": "admin"}
    answers = {"POST": one(CuratorReleaseView)}
    body_models = {"POST": SkillIds}

    def post(self) -> None:
        """Return skills to user ownership; body is an array of string ids (workspace admin)."""
        self.ok(curator.release(self.require_caller(), curator.parse_ids(self.json_body())))


class SnapshotsHandler(CuratorBase):
    access = {"GET": "viewer", "POST": "admin"}
    answers = {"GET": list_of(CuratorSnapshotView), "POST": one(CuratorSnapshotView)}
    body_models = {"POST": SnapshotBody}
    query_params = {"GET": _LIMIT}

    def get(self) -> None:
        """Recent restore points of the workspace's skill library, newest first."""
        self.ok(snapshots.recent(self.require_caller(), self.limit()))

    def post(self) -> None:
        """Capture a restore point of every skill (rows, content, files), optional `{reason}` (workspace admin)."""
        req = self.optional_body(SnapshotBody)
        self.ok(snapshots.create(self.require_caller(), req.reason, self.config.skills_curator_keep_snapshots))


class SnapshotRestoreHandler(CuratorBase):
    access = {"POST": "admin"}
    answers = {"POST": one(CuratorRestoreView)}

    async def post(self, snapshotId: int) -> None:
        """Restore the skill library to a restore point in one transaction; later skills are archived (workspace admin)."""
        caller = self.require_caller()
        result = snapshots.restore(caller, snapshotId, self.config.skills_curator_keep_snapshots)
        await self.skills.sync_workspace(caller.workspace_id)
        self.ok(result)


class RoutinesBase(CuratorBase):
    tags = ("Skill routines",)

    @property
    def gates(self) -> routines.Gates:
        return routines.Gates.of(self.config)


class RoutinesHandler(RoutinesBase):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(SkillRoutineView)}
    query_params = {
        "GET": [
            {
                "name": "status",
                "in": "query",
                "required": False,
                "schema": {"type": "string", "enum": ["open", "dismissed", "promoted", "observing"]},  # routines.listing
                "description": "open, dismissed or promoted (`observing`: the original console's name for open)",
            }
        ]
    }

    def get(self) -> None:
        """The caller's recurring-request candidates in this workspace, most frequent first."""
        # as sent: a padded value is none of the document's enum (Tornado would strip it into one)
        self.ok(routines.listing(self.require_caller(), self.gates, self.get_query_argument("status", None, strip=False)))


class RoutinesMineHandler(RoutinesBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillRoutineMineView)}

    async def post(self) -> None:
        """Mine the caller's recent requests in this workspace for recurring ones now."""
        self.ok(await routines.mine(self.require_caller(), self.gates))


class RoutineDismissHandler(RoutinesBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillRoutineView)}

    def post(self, id: int) -> None:
        """Dismiss an open candidate."""
        self.ok(routines.transition(self.require_caller(), id, "dismissed", self.gates))


class RoutineReopenHandler(RoutinesBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillRoutineView)}

    def post(self, id: int) -> None:
        """Reopen a dismissed candidate."""
        self.ok(routines.transition(self.require_caller(), id, "open", self.gates))


class RoutinePromoteHandler(RoutinesBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillRoutinePromotedView)}
    body_models = {"POST": PromoteBody}

    async def post(self, id: int) -> None:
        """Promote now, skipping the frequency gates: the default model drafts a SKILL.md (the skill starts disabled)."""
        req = self.optional_body(PromoteBody)
        caller = self.require_caller()
        result = await routines.promote(self.platform.runtime(LLM), caller, id, req.name, self.gates)
        await self.skills.sync_skill(service.get_skill(caller, int(result["skill"]["id"])))
        self.ok(result)


ROUTES: list[Any] = gated(
    "skills_curator",
    [
        route("/api/v1/skills/curator/status", StatusHandler),
        route("/api/v1/skills/curator/activate", ActivateHandler),
        route("/api/v1/skills/curator/pause", PauseHandler),
        route("/api/v1/skills/curator/resume", ResumeHandler),
        route("/api/v1/skills/curator/consolidate", ConsolidateHandler),
        route("/api/v1/skills/curator/dry-run", DryRunHandler),
        route("/api/v1/skills/curator/reports", ReportsHandler),
        route("/api/v1/skills/curator/reports/{runId}", ReportHandler),
        route("/api/v1/skills/curator/managed", ManagedHandler),
        route("/api/v1/skills/curator/unmanaged", UnmanagedHandler),
        route("/api/v1/skills/curator/adopt", AdoptHandler),
        route("/api/v1/skills/curator/release", ReleaseHandler),
        route("/api/v1/skills/curator/snapshots", SnapshotsHandler),
        route("/api/v1/skills/curator/snapshots/{snapshotId}/restore", SnapshotRestoreHandler),
    ],
) + [
    route("/api/v1/skills/routines", RoutinesHandler),
    route("/api/v1/skills/routines/mine", RoutinesMineHandler),
    route("/api/v1/skills/routines/{id}/dismiss", RoutineDismissHandler),
    route("/api/v1/skills/routines/{id}/reopen", RoutineReopenHandler),
    route("/api/v1/skills/routines/{id}/promote", RoutinePromoteHandler),
]
