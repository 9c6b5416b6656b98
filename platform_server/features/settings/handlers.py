"""Settings, language, sidecar and feature flags."""

from __future__ import annotations

from platform_server.features.settings import service
from platform_server.features.settings.schemas import (
    FeatureFlagView,
    FlagRequest,
    LanguageRequest,
    LanguageView,
    ProxyProbeView,
    ProxyRequest,
    ProxyTestRequest,
    ProxyView,
    SettingsUpdate,
    SettingsView,
    SidecarRequest,
    SidecarView,
)
from platform_server.integrations import outbound_proxy
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN, LOGIN, PUBLIC
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import list_of, one
from platform_server.web.routing import route


class SettingsHandler(ApiHandler):
    answers = {"GET": one(SettingsView), "PUT": one(SettingsView)}
    access = {"GET": LOGIN, "PUT": GLOBAL_ADMIN}
    body_models = {"PUT": SettingsUpdate}
    tags = ("Settings",)

    def get(self) -> None:
        """All system settings with their defaults."""
        self.ok(service.get_all())

    def put(self) -> None:
        """Save some settings (global admin)."""
        self.body(SettingsUpdate)  # each value as the document states it; the service checks the keys and the rest
        data = self.json_body()
        assert isinstance(data, dict)  # body() refused anything else
        self.ok(service.save(self.require_caller(), data))


class LanguageHandler(ApiHandler):
    answers = {"GET": one(LanguageView), "PUT": one(LanguageView)}
    access = {"GET": PUBLIC, "PUT": GLOBAL_ADMIN}
    body_models = {"PUT": LanguageRequest}
    tags = ("Settings",)

    def get(self) -> None:
        """The system language as a plain string, e.g. `"en-US"` (public: the login page uses it)."""
        self.ok(service.get("language"))

    def put(self) -> None:
        """Set the system language (global admin)."""
        req = self.body(LanguageRequest)
        service.save(self.require_caller(), {"language": req.language})
        self.ok(req.language)


class SidecarHandler(ApiHandler):
    answers = {"PUT": one(SidecarView)}
    access = {"PUT": GLOBAL_ADMIN}
    body_models = {"PUT": SidecarRequest}
    tags = ("Settings",)

    def put(self) -> None:
        """Save the multimodal sidecar (a vision model that describes images for text-only models)."""
        req = self.body(SidecarRequest)
        self.ok(service.save_sidecar(self.require_caller(), req.enabled, req.provider, req.modelName))


class ProxyHandler(ApiHandler):
    answers = {"GET": one(ProxyView), "PUT": one(ProxyView)}
    access = {"GET": GLOBAL_ADMIN, "PUT": GLOBAL_ADMIN}
    body_models = {"PUT": ProxyRequest}
    tags = ("Settings",)

    def get(self) -> None:
        """The global outbound proxy `{enabled, url, nonProxyHosts}` model provider calls go through."""
        self.ok(service.get_proxy())

    def put(self) -> None:
        """Set the outbound proxy (an HTTP(S) proxy; `nonProxyHosts` like `localhost|127.*|*.local`)."""
        req = self.body(ProxyRequest)
        self.ok(service.save_proxy(self.require_caller(), req.enabled, req.url, req.nonProxyHosts))


class ProxyTestHandler(ApiHandler):
    answers = {"POST": one(ProxyProbeView)}
    access = {"POST": GLOBAL_ADMIN}
    body_models = {"POST": ProxyTestRequest}
    tags = ("Settings",)

    async def post(self) -> None:
        """Fetch the configured test URL (`proxy_test_url`) through the given proxy: `{ok, latencyMs, error}`."""
        req = self.body(ProxyTestRequest)
        try:
            outbound_proxy.check_url(req.url)
        except ValueError as exc:
            raise BadRequest(f"url: {exc}")
        self.ok(await outbound_proxy.probe(req.url, self.config.proxy_test_url, self.config.proxy_test_timeout_s))


class FlagsHandler(ApiHandler):
    answers = {"GET": list_of(FeatureFlagView)}
    access = {"GET": LOGIN}
    tags = ("Feature flags",)

    def get(self) -> None:
        """All feature flags."""
        self.ok(service.list_flags())


class FlagHandler(ApiHandler):
    answers = {"PUT": one(FeatureFlagView)}
    access = {"PUT": GLOBAL_ADMIN}
    body_models = {"PUT": FlagRequest}
    tags = ("Feature flags",)

    def put(self, flagKey: str) -> None:
        """Turn a feature flag on or off (global admin)."""
        req = self.toggle_body(FlagRequest)
        self.ok(service.set_flag(self.require_caller(), flagKey, req.enabled))


ROUTES = [
    route("/api/v1/settings", SettingsHandler),
    route("/api/v1/settings/language", LanguageHandler),
    route("/api/v1/settings/sidecar", SidecarHandler),
    route("/api/v1/settings/proxy", ProxyHandler),
    route("/api/v1/settings/proxy/test", ProxyTestHandler),
    route("/api/v1/feature-flags", FlagsHandler),
    route("/api/v1/feature-flags/{flagKey}", FlagHandler),
]
