"""Health and browser diagnostics."""

from __future__ import annotations

from platform_server.blocking import run_blocking
from platform_server.features.system import service
from platform_server.features.system.schemas import BrowserHealthView, SystemHealthView, SystemInfoView
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN, LOGIN
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route


class HealthHandler(ApiHandler):
    answers = {"GET": one(SystemHealthView)}
    access = {"GET": LOGIN}
    tags = ("System",)

    def get(self) -> None:
        """Database reachable, storage writable (DEGRADED with the reason when not), version, uptime."""
        self.ok(service.health(self.platform.started_at, self.platform.storage.snapshot()))


class BrowserHealthHandler(ApiHandler):
    answers = {"GET": one(BrowserHealthView)}
    access = {"GET": GLOBAL_ADMIN}
    tags = ("System",)

    async def get(self) -> None:
        """Whether a headless browser can be launched on this machine."""
        self.ok(await service.browser_health())


class InfoHandler(ApiHandler):
    answers = {"GET": one(SystemInfoView)}
    access = {"GET": GLOBAL_ADMIN}
    tags = ("System",)

    async def get(self) -> None:
        """The data directory and its folders, the database file and the embedded model's status (global admin)."""
        self.ok(await run_blocking(service.info, self.config.data_dir, self.config.local_model_path))


ROUTES = [
    route("/api/v1/system/health", HealthHandler),
    route("/api/v1/system/browser-health", BrowserHealthHandler),
    route("/api/v1/system/info", InfoHandler),
]
