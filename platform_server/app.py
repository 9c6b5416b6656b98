"""The application: feature areas joined into one route table, the shared state, start and stop."""
from __future__ import annotations

import importlib
import logging
import os
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import tornado.httpserver
import tornado.web

from platform_server.config import Config
from platform_server.db import Migration, close_database, open_database, run_migrations
from platform_server.features.auth import service as auth_service
from platform_server.features.auth.service import LoginLimiter
from platform_server.features.auth.tokens import JwtIssuer, load_secret
from platform_server.features.workspaces import service as workspace_service
from platform_server.web.base import NotFoundHandler
from platform_server.web.context import Principal, WebServices
from platform_server.web.openapi import ApiDocsHandler
from platform_server.web.routing import Route, route

log = logging.getLogger(__name__)

# Feature areas in start order; each is a package under platform_server/features/ with
# handlers.py (ROUTES), optional models.py (MIGRATIONS) and optional lifecycle.py (start/stop).
FEATURES: tuple[str, ...] = (
    "audit",
    "workspaces",
    "auth",
    "settings",
    "setup",
    "system",
    "tools",
    "mcp",
    "acp",
    "models",
    "oauth",
    "agents",
    "skills",
    "wiki",
    "templates",
    "guard",
    "conversations",
    "plans",
    "chat",
    "memory",
    "subagents",
    "media",
    "talk",
    "datasources",
    "plugins",
    "channels",
    "workflows",
    "teams",
    "cron",
    "goals",
    "usage",
)

STATIC_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")


@dataclass
class Platform:
    """State shared by handlers and loops: one per process, created by make_app."""

    config: Config
    jwt: JwtIssuer
    login_limiter: LoginLimiter
    web: WebServices
    routes: list[Route] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    openapi_text: str | None = None
    services: dict[str, Any] = field(default_factory=dict)  # feature name -> runtime object


def _feature_module(name: str, part: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"platform_server.features.{name}.{part}")
    except ModuleNotFoundError as exc:
        if exc.name == f"platform_server.features.{name}.{part}":
            return None
        raise


def collect_migrations() -> list[Migration]:
    migrations: list[Migration] = []
    for name in FEATURES:
        module = _feature_module(name, "models")
        migrations.extend(getattr(module, "MIGRATIONS", []) if module else [])
    return migrations


def collect_sockets() -> list[Route]:
    """WebSocket routes (`SOCKETS` of an area): served, but not REST routes of the inventory."""
    sockets: list[Route] = []
    for name in FEATURES:
        module = _feature_module(name, "handlers")
        sockets.extend(getattr(module, "SOCKETS", []) if module else [])
    return sockets


def collect_routes() -> list[Route]:
    routes: list[Route] = []
    for name in FEATURES:
        module = _feature_module(name, "handlers")
        routes.extend(getattr(module, "ROUTES", []) if module else [])
    routes.append(route("/v3/api-docs", ApiDocsHandler))
    return sorted(routes, key=lambda r: r.specificity)


class IndexHandler(tornado.web.StaticFileHandler):
    """The web console's entry page (and the swagger page) with no caching."""

    def set_extra_headers(self, path: str) -> None:
        self.set_header("Cache-Control", "no-cache")


def make_app(config: Config) -> tuple[tornado.web.Application, Platform]:
    """Open the database, migrate, seed, and build the Tornado application."""
    os.makedirs(config.data_dir, exist_ok=True)
    open_database(config.db_path)
    run_migrations(collect_migrations())
    auth_service.check_rounds(config.password_hash_rounds)
    auth_service.dummy_hash(config.password_hash_rounds)  # computed once, before the first login
    jwt = JwtIssuer(load_secret(config.jwt_secret, config.data_dir), config.jwt_ttl_ms)
    web = WebServices(
        authenticate=lambda token: auth_service.authenticate(token, jwt),
        workspace_role=workspace_service.member_role,
        renew_token=lambda p: jwt.issue(p.user_id, p.username, p.role),
    )
    platform = Platform(
        config=config,
        jwt=jwt,
        login_limiter=LoginLimiter(
            config.login_max_failures_per_user, config.login_max_failures_per_address, config.login_lockout_seconds
        ),
        web=web,
    )
    platform.routes = collect_routes()
    handlers: list[Any] = [(r.regex, r.handler) for r in collect_sockets() + platform.routes]
    handlers += [
        (r"/(swagger-ui\.html)$", IndexHandler, {"path": STATIC_DIR}),
        (r"/static/(.*)", tornado.web.StaticFileHandler, {"path": STATIC_DIR}),
        (r"/()$", IndexHandler, {"path": STATIC_DIR, "default_filename": "index.html"}),
    ]
    app = tornado.web.Application(
        handlers,
        platform=platform,
        default_handler_class=NotFoundHandler,
        compress_response=False,
        websocket_ping_interval=20,
    )
    return app, platform


async def start_features(platform: Platform) -> None:
    """Seed data and start each area's background work."""
    from platform_server.features.settings import service as settings_service
    from platform_server.features.setup import service as setup_service

    settings_service.seed_config_defaults(platform.config.default_language, platform.config.timezone)
    settings_service.seed_flags()
    setup_service.ensure_headless_admin(
        platform.config.admin_username, platform.config.admin_password, platform.config.password_hash_rounds
    )
    for name in FEATURES:
        module = _feature_module(name, "lifecycle")
        if module and hasattr(module, "start"):
            await module.start(platform)


async def stop_features(platform: Platform) -> None:
    for name in reversed(FEATURES):
        module = _feature_module(name, "lifecycle")
        if module and hasattr(module, "stop"):
            try:
                await module.stop(platform)
            except Exception:  # noqa: BLE001 - stopping must reach every area
                log.exception("stopping %s failed", name)
    close_database()


def listen(app: tornado.web.Application, config: Config, sockets: list[Any] | None = None) -> tornado.httpserver.HTTPServer:
    """Bind the HTTP server (or serve already bound sockets); the per-route body limit applies first,
    this is only the hard ceiling."""
    server = tornado.httpserver.HTTPServer(
        app,
        max_body_size=max(config.max_body_bytes, config.upload_max_bytes) * 2,
        idle_connection_timeout=120,
        xheaders=False,
    )
    if sockets is not None:
        server.add_sockets(sockets)
    else:
        server.listen(config.port, config.host)
    return server


__all__ = ["FEATURES", "Platform", "make_app", "start_features", "stop_features", "listen", "Principal"]
