"""First-run setup routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.blocking import run_blocking
from platform_server.features.auth import JWT
from platform_server.features.auth import service as auth
from platform_server.features.auth.schemas import LoginView
from platform_server.features.setup import service
from platform_server.features.setup.schemas import InitRequest, OnboardingView, SetupStatusView
from platform_server.lazy import lazy_import
from platform_server.web.base import ApiHandler
from platform_server.web.context import LOGIN, PUBLIC
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")


class StatusHandler(ApiHandler):
    answers = {"GET": one(SetupStatusView)}
    access = {"GET": PUBLIC}
    tags = ("Setup",)

    def get(self) -> None:
        """Whether the platform has its admin yet."""
        self.ok(service.status())


class InitHandler(ApiHandler):
    answers = {"POST": one(LoginView)}
    access = {"POST": PUBLIC}
    body_models = {"POST": InitRequest}
    max_body_setting = "public_max_body_bytes"  # anyone may send one: a large body is refused unread
    tags = ("Setup",)

    async def post(self) -> None:
        """Create the global admin (only while none exists) and log them in."""
        req = self.body(InitRequest)
        if auth.has_admin():
            raise BadRequest("Already initialized")
        service.check_setup_origin(self.is_local_request, req.setupToken or self.request.headers.get("X-Setup-Token"))
        password_hash = await run_blocking(auth.hash_password, req.password, self.config.password_hash_rounds)
        user = service.create_admin(req.username, password_hash, req.nickname, req.language, req.timezone)
        self.ok(auth.login_response(user, self.platform.runtime(JWT).issue(user.id, user.username, user.role)))


class OnboardingHandler(ApiHandler):
    answers = {"GET": one(OnboardingView)}
    access = {"GET": LOGIN}
    tags = ("Setup",)

    async def get(self) -> None:
        """Which first-run steps are done (provider, agent, first chat); `ollamaOnline` is probed live."""
        self.ok(service.onboarding(self.require_caller().user_id, await _ollama_online()))


async def _ollama_online() -> bool:
    """Whether the Ollama provider's address answers its model list within a second."""
    url = service.ollama_url()
    if url is None:
        return False
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1)) as s, s.get(url) as r:
            return r.status == 200
    except (aiohttp.ClientError, TimeoutError, ValueError):
        return False


ROUTES = [
    route("/api/v1/setup/status", StatusHandler),
    route("/api/v1/setup/init", InitHandler),
    route("/api/v1/setup/onboarding-status", OnboardingHandler),
]
