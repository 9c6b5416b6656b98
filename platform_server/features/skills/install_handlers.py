"""The skills base handler and the install routes: ZIP upload, async install, status, cancel, hub, uninstall."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from platform_server.blocking import run_blocking
from platform_server.db import database
from platform_server.features.audit import service as audit
from platform_server.features.skills import SKILLS, install, service
from platform_server.features.skills.models import Skill
from platform_server.features.skills.runtime import SkillsRuntime
from platform_server.features.skills.schemas import InstallStart
from platform_server.features.skills.views import (
    InstalledSkillView,
    SkillHubSearchView,
    SkillInstallTaskView,
)
from platform_server.web.base import ApiHandler
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, one

T = TypeVar("T")
HUB_LIMIT = 50


class SkillsBase(ApiHandler):
    """Skills handlers: the area's runtime, built-ins seeded into the caller's workspace before the method."""

    tags = ("Skills",)

    @property
    def skills(self) -> SkillsRuntime:
        return self.platform.runtime(SKILLS)

    async def prepare(self) -> None:
        await super().prepare()
        if self._deferred_error is None and self.caller is not None and self.caller.workspace_role:
            await self.skills.ensure_workspace(self.caller.workspace_id)

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        return await run_blocking(fn, *args)

    def audit(self, caller: Caller, action: str, skill: Skill | None, detail: str) -> None:
        with database.atomic():
            audit.record(caller, action, "SKILL", None if skill is None else skill.id, detail)


class InstallUploadHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(InstalledSkillView)}
    max_body_setting = "upload_max_bytes"
    spool_body = True
    query_params = {"POST": [{"name": "overwrite", "in": "query", "required": False, "schema": {"type": "boolean"}}]}

    async def _archive(self) -> tuple[bytes, str, bool]:
        overwrite = bool(self.query_bool("overwrite"))
        ctype = (self.request.headers.get("Content-Type") or "").lower()
        if not ctype.startswith("multipart/form-data"):
            return await self.raw_body(), "upload", overwrite
        fields, uploads = await self.multipart()
        parts = uploads.get("file") or []
        if not parts:
            raise BadRequest("file: a ZIP archive is required")
        flag = (fields.get("overwrite") or [b""])[0].decode("utf-8", "replace").strip().lower()
        name = (parts[0].filename or "skill.zip").replace("\n", " ")[:200]
        return await run_blocking(parts[0].read), f"upload:{name}", overwrite or flag in ("true", "1")

    async def post(self) -> None:
        """Install from a ZIP (multipart `file`, or the raw body) with SKILL.md at the root or one folder down."""
        caller = self.require_caller()
        archive, source, overwrite = await self._archive()
        bundle = await run_blocking(install.read_zip, archive)
        skill, replaced = install.install_bundle(caller, bundle, source, overwrite)
        await self.skills.sync_skill(skill)
        self.ok({**service.to_dict(skill, full=True), "replaced": replaced})


class InstallStartHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillInstallTaskView)}
    body_models = {"POST": InstallStart}

    def post(self) -> None:
        """Start an async install from a ZIP `url` or a hub `slug`; poll `status/{taskId}`."""
        req = self.body(InstallStart)
        task = self.skills.installs.start(self.require_caller(), req.url, req.slug, req.overwrite)
        self.ok(task.to_dict())


class InstallStatusHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillInstallTaskView)}

    def get(self, taskId: str) -> None:
        """An install task: pending, downloading, installing, completed, failed or cancelled."""
        self.ok(self.skills.installs.get(self.require_caller(), taskId).to_dict())


class InstallCancelHandler(SkillsBase):
    access = {"POST": "member"}
    answers = {"POST": one(SkillInstallTaskView)}

    def post(self, taskId: str) -> None:
        """Cancel a running install task (a finished task is answered as it is)."""
        self.ok(self.skills.installs.cancel(self.require_caller(), taskId).to_dict())


class HubSearchHandler(SkillsBase):
    access = {"GET": "viewer"}
    answers = {"GET": one(SkillHubSearchView)}
    query_params = {
        "GET": [
            {"name": "keyword", "in": "query", "required": False, "schema": {"type": "string"}},
            {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer"}},
        ]
    }

    async def get(self) -> None:
        """Search the configured skills hub (400 when none is configured)."""
        caller = self.require_caller()
        raw = self.get_query_argument("limit", None)
        if raw is not None and (not (raw.strip().isascii() and raw.strip().isdigit()) or not 1 <= int(raw) <= 200):
            raise BadRequest("limit: must be between 1 and 200")
        keyword = self.get_query_argument("keyword", None) or self.get_query_argument("q", None)
        self.ok(await install.hub_search(self.config, caller, keyword, int(raw) if raw else HUB_LIMIT))


class UninstallHandler(SkillsBase):
    access = {"DELETE": "member"}
    answers = {"DELETE": NOTHING}

    async def delete(self, skillName: str) -> None:
        """Uninstall an installed skill by name (its files, secrets, bindings and cache folder go too)."""
        skill = install.uninstall(self.require_caller(), skillName)
        await self.skills.remove_folder(skill.workspace_id, skill.name)
        self.ok(None)
