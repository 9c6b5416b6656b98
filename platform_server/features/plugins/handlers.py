"""Plugins: anyone logged in reads; a global admin enables, disables and configures."""

from __future__ import annotations

from platform_server.features.plugins import PLUGINS, service
from platform_server.features.plugins.schemas import PluginConfig, PluginView
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN, LOGIN
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import list_of, one
from platform_server.web.routing import route

TAGS = ("Plugins",)


class PluginHandlerBase(ApiHandler):
    tags = TAGS

    @property
    def catalog(self) -> service.PluginCatalog:
        return self.platform.runtime(PLUGINS)


class PluginsHandler(PluginHandlerBase):
    access = {"GET": LOGIN}
    answers = {"GET": list_of(PluginView)}

    def get(self) -> None:
        """Installed plugins with state, configuration and the tools they registered."""
        self.ok(service.list_all(self.catalog))


class PluginHandler(PluginHandlerBase):
    access = {"GET": LOGIN}
    answers = {"GET": one(PluginView)}

    def get(self, name: str) -> None:
        """One plugin."""
        self.catalog.get(name)
        self.ok(service.to_dict(self.catalog, name))


class PluginConfigHandler(PluginHandlerBase):
    access = {"PUT": GLOBAL_ADMIN}
    answers = {"PUT": one(PluginView)}
    body_models = {"PUT": PluginConfig}

    def put(self, name: str) -> None:
        """Replace the plugin's configuration (validated against its schema)."""
        data = self.json_body()
        if not isinstance(data, dict):
            raise BadRequest("Request body must be a JSON object")
        self.ok(service.set_config(self.catalog, self.require_caller(), name, data))


class EnableHandler(PluginHandlerBase):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": one(PluginView)}

    def post(self, name: str) -> None:
        """Enable: its tools become bindable to agents."""
        self.ok(service.set_enabled(self.catalog, self.require_caller(), name, True))


class DisableHandler(PluginHandlerBase):
    access = {"POST": GLOBAL_ADMIN}
    answers = {"POST": one(PluginView)}

    def post(self, name: str) -> None:
        """Disable: its tools are unregistered."""
        self.ok(service.set_enabled(self.catalog, self.require_caller(), name, False))


ROUTES = [
    route("/api/v1/plugins", PluginsHandler),
    route("/api/v1/plugins/{name}", PluginHandler),
    route("/api/v1/plugins/{name}/config", PluginConfigHandler),
    route("/api/v1/plugins/{name}/enable", EnableHandler),
    route("/api/v1/plugins/{name}/disable", DisableHandler),
]
