"""The application: feature areas joined into one route table, the shared state, start and stop."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar, cast

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.routing import PathMatches, Rule

from platform_server import lazy, ports, sealed, storage, tls
from platform_server.blocking import run_blocking, start_blocking
from platform_server.config import Config
from platform_server.db import Migration, run_migrations
from platform_server.features.auth import JWT, LOGIN_LIMITER
from platform_server.features.auth import service as auth_service
from platform_server.features.auth.limits import login_limits
from platform_server.features.auth.tokens import JwtIssuer, load_secret
from platform_server.features.channels.page import WebchatPageHandler
from platform_server.features.settings import service as settings_service
from platform_server.features.setup import service as setup_service
from platform_server.features.tools import TOOLS
from platform_server.features.workspaces import service as workspace_service
from platform_server.platform import Flag, Platform, RuntimeKey, RuntimeMissing
from platform_server.ports import database as database_port
from platform_server.ports import events as events_port
from platform_server.storage import StorageCheckLoop, StorageHealth
from platform_server.web import hosts, proxies, redact, spool
from platform_server.web.base import ApiHandler
from platform_server.web.bodies import body_ceiling, header_bytes
from platform_server.web.console_files import console_routes
from platform_server.web.context import Principal, WebServices
from platform_server.web.fallbacks import BodyTooLargeHandler, HeadersTooLargeHandler, HostRefusedHandler, NotFoundHandler
from platform_server.web.openapi import ApiDocsHandler
from platform_server.web.routing import Route, route

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Feature:
    """One area as registered here: `needs` start before it (their services are running when its
    `lifecycle.start` runs); `uses` are areas it calls only while serving or imports functions
    from, which may start later. tests/test_layout.py checks both lists against the code."""

    name: str
    needs: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()


# Feature areas in start order; each is a package under platform_server/features/ with
# handlers.py (ROUTES), optional models.py (MIGRATIONS) and optional lifecycle.py (start/stop).
FEATURES: tuple[Feature, ...] = (
    Feature("audit"),
    Feature("workspaces", needs=("audit",)),
    Feature("auth", needs=("audit", "workspaces")),
    Feature("settings", needs=("audit",)),
    Feature("setup", needs=("auth", "settings"), uses=("agents", "models", "workspaces")),
    Feature("system"),
    Feature("tools", needs=("audit",), uses=("agents", "settings", "workspaces")),
    Feature("mcp", needs=("audit", "tools"), uses=("agents",)),
    Feature("acp", needs=("audit", "tools"), uses=("guard", "workspaces")),
    Feature("models", needs=("audit",), uses=("usage",)),
    Feature("oauth", needs=("audit", "models")),
    Feature("agents", needs=("audit", "models", "settings"), uses=("skills", "tools", "usage", "wiki", "workflows", "workspaces")),
    Feature("skills", needs=("agents", "audit", "models", "workspaces"), uses=("conversations", "settings", "usage")),
    Feature("wiki", needs=("agents", "audit", "models", "tools"), uses=("guard", "settings", "usage")),
    Feature("templates", needs=("agents",)),
    Feature("guard", needs=("agents", "audit", "workspaces"), uses=("auth", "conversations")),
    Feature("conversations", needs=("agents", "audit", "auth"), uses=("chat",)),
    Feature("plans"),
    Feature(
        "chat",
        needs=("agents", "auth", "conversations", "guard", "models", "plans", "skills", "tools"),
        uses=("acp", "goals", "memory", "settings", "usage", "wiki"),
    ),
    Feature("memory", needs=("agents", "audit", "conversations", "models", "settings"), uses=("usage",)),
    Feature("subagents", needs=("agents", "audit", "chat", "conversations", "guard", "models", "tools", "wiki")),
    Feature("media", needs=("chat", "conversations", "models", "settings", "tools")),
    Feature("talk", needs=("agents", "chat", "conversations", "media")),
    Feature("datasources", needs=("audit", "tools"), uses=("workspaces",)),
    Feature("plugins", needs=("audit", "tools")),
    Feature("channels", needs=("agents", "audit", "auth", "chat", "conversations", "workspaces")),
    Feature("workflows", needs=("agents", "audit", "auth", "chat", "guard", "models"), uses=("settings", "usage")),
    Feature("teams", needs=("agents", "audit", "auth", "conversations", "models", "subagents", "tools", "workflows"), uses=("usage",)),
    Feature("cron", needs=("agents", "audit", "auth", "chat", "conversations", "settings", "workspaces"), uses=("workflows",)),
    Feature("goals", needs=("agents", "audit", "conversations", "models"), uses=("memory", "usage")),
    Feature("usage", needs=("agents", "chat", "conversations"), uses=("guard",)),
    Feature("compat", uses=("conversations", "wiki")),
    Feature("doors", needs=("chat",), uses=("agents", "models", "usage", "wiki", "workspaces")),
)


def check_feature_order(features: tuple[Feature, ...] = FEATURES) -> None:
    """Every area's `needs` start before it and every named area exists (raises ValueError otherwise)."""
    seen: set[str] = set()
    names = {f.name for f in features}
    for feature in features:
        if feature.name in seen:
            raise ValueError(f"feature {feature.name!r} is registered twice")
        for need in feature.needs:
            if need not in seen:
                raise ValueError(f"feature {feature.name!r} needs {need!r}, which does not start before it")
        for use in feature.uses:
            if use not in names:
                raise ValueError(f"feature {feature.name!r} uses {use!r}, which is not registered")
        seen.add(feature.name)


class RuntimeView:
    """The runtimes by their key's name as attributes (`platform.services.chat`), for tests and scripts that
    poke at a running server; areas read them typed, through `Platform.runtime(KEY)`."""

    def __init__(self, runtimes: dict[str, object]) -> None:
        object.__setattr__(self, "_runtimes", runtimes)

    def __getattr__(self, name: str) -> object:
        runtimes: dict[str, object] = object.__getattribute__(self, "_runtimes")
        try:
            return runtimes[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: object) -> None:
        runtimes: dict[str, object] = object.__getattribute__(self, "_runtimes")
        runtimes[name] = value


STATIC_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")


@dataclass
class PlatformState:
    """State shared by handlers and loops (implements `platform.Platform`): one per process, created by make_app."""

    config: Config
    web: WebServices
    routes: list[Route] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    openapi_text: str | None = None
    storage: StorageHealth = field(default_factory=lambda: StorageHealth(".", 0))
    storage_loop: StorageCheckLoop | None = None
    started: list[str] = field(default_factory=list)  # areas whose lifecycle.start completed, in order
    runtimes: dict[str, object] = field(default_factory=dict)  # RuntimeKey name -> the object its area started
    admin_hash: asyncio.Future[str] | None = None  # a first run's admin password hash, computed while the app is built

    def runtime(self, key: RuntimeKey[T]) -> T:
        try:
            return cast(T, self.runtimes[key.name])  # set_runtime stored it under this typed key
        except KeyError:
            raise RuntimeMissing(f"{key.name!r} has not started") from None

    def find_runtime(self, key: RuntimeKey[T]) -> T | None:
        return cast("T | None", self.runtimes.get(key.name))

    def set_runtime(self, key: RuntimeKey[T], value: T) -> None:
        self.runtimes[key.name] = value

    @property
    def services(self) -> RuntimeView:
        return RuntimeView(self.runtimes)


def _feature_module(name: str, part: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"platform_server.features.{name}.{part}")
    except ModuleNotFoundError as exc:
        if exc.name == f"platform_server.features.{name}.{part}":
            return None
        raise


def collect_migrations() -> list[Migration]:
    migrations: list[Migration] = []
    for feature in FEATURES:
        module = _feature_module(feature.name, "models")
        migrations.extend(getattr(module, "MIGRATIONS", []) if module else [])
    return migrations


def collect_sockets() -> list[Route]:
    """WebSocket routes (`SOCKETS` of an area): served, but not REST routes of the inventory."""
    sockets: list[Route] = []
    for feature in FEATURES:
        module = _feature_module(feature.name, "handlers")
        sockets.extend(getattr(module, "SOCKETS", []) if module else [])
    return sockets


def _declared(part: str) -> list[tuple[str, list[Any]]]:
    """(area, its handlers.py `<part>` list) for every area, in start order."""
    out: list[tuple[str, list[Any]]] = []
    for feature in FEATURES:
        module = _feature_module(feature.name, "handlers")
        out.append((feature.name, list(getattr(module, part, ()) if module else ())))
    return out


def collect_flags() -> list[Flag]:
    """The feature flags the areas declare (`FLAGS` beside their `ROUTES`); a key declared twice is refused."""
    flags: dict[str, Flag] = {}
    for area, declared in _declared("FLAGS"):
        for flag in declared:
            if flag.key in flags:
                raise ValueError(f"feature flag {flag.key!r} of {area!r} is declared twice")
            flags[flag.key] = flag
    return list(flags.values())


def collect_routes() -> list[Route]:
    routes: list[Route] = []
    for feature in FEATURES:
        module = _feature_module(feature.name, "handlers")
        routes.extend(getattr(module, "ROUTES", []) if module else [])
    routes.append(route("/v3/api-docs", ApiDocsHandler))
    return sorted(routes, key=lambda r: r.specificity)


class GuardedApplication(tornado.web.Application):
    """Refuses any request whose Host header names no allowed host (DNS rebinding reaches nothing)."""

    def __init__(self, *args: Any, allowed: set[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.allowed_hosts = allowed
        self.fixed_paths = _fixed_paths(self.wildcard_router.rules)

    def add_handlers(self, host_pattern: str, host_handlers: Any) -> None:
        """Routes added later are checked before the fixed paths (as Tornado checks them before the first ones)."""
        super().add_handlers(host_pattern, host_handlers)
        self.fixed_paths = {}

    def find_handler(self, request: Any, **kwargs: Any) -> Any:
        if not hosts.is_allowed(request.headers.get("Host"), self.allowed_hosts):
            return self.get_handler_delegate(request, HostRefusedHandler)
        config: Config = self.settings["platform"].config
        if header_bytes(request) > config.max_header_bytes:
            return self.get_handler_delegate(request, HeadersTooLargeHandler)
        rule = self.fixed_paths.get(request.path)
        if rule is not None:  # a path without parameters: found by its text, not by trying each route's pattern in turn
            delegate = self.get_handler_delegate(request, rule.target, rule.target_kwargs)
        else:
            delegate = super().find_handler(request, **kwargs)
        length = request.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > body_ceiling(config) and not issubclass(getattr(delegate, "handler_class", ApiHandler), ApiHandler):
            # API routes answer their own limit's 413; a static file route would get Tornado's bare 400
            return self.get_handler_delegate(request, BodyTooLargeHandler)
        return delegate


def _fixed_paths(rules: list[Rule]) -> dict[str, Rule]:
    """Routes whose path has no parameter, by path, when no route before them would match it first."""
    out: dict[str, Rule] = {}
    for i, rule in enumerate(rules):
        matcher = rule.matcher
        if not isinstance(matcher, PathMatches) or matcher.regex.groups or matcher._path is None:
            continue
        path = matcher._path
        earlier = rules[:i]
        if matcher.regex.match(path) and all(isinstance(r.matcher, PathMatches) and not r.matcher.regex.match(path) for r in earlier):
            out[path] = rule
    return out


def make_private(config: Config) -> None:
    """Tighten what an older version left readable: the data dir 0700, the database files 0600."""
    try:
        os.chmod(config.data_dir, 0o700)
        for path in database_port.current().files():
            if os.path.exists(path):
                os.chmod(path, 0o600)
    except OSError as exc:  # a data dir this user does not own: serve anyway, say so
        log.warning("could not make the data dir private: %s", exc)


def make_app(config: Config) -> tuple[tornado.web.Application, PlatformState]:
    """Open the database, migrate, seed, and build the Tornado application."""
    check_feature_order()
    admin_hash = first_run_admin_hash(config)
    redact.install()  # no token, password or key in any log line
    os.umask(0o077)  # every file this process creates (database, WAL, uploads, memory) is 0600, folders 0700
    os.makedirs(config.data_dir, mode=0o700, exist_ok=True)
    ports.install(config)
    store = database_port.current()
    make_private(config)
    spool.clear_stale(config.data_dir)  # upload bodies a stopped process left half-received
    sealed.configure(config.data_dir)  # before migrating: data migrations seal plain secrets
    health = StorageHealth(config.data_dir, config.storage_min_free_mb * 1024 * 1024)
    health.check()
    try:
        store.open(config.db_loop_busy_timeout_ms)
    except Exception as exc:
        if health.note_fault(exc) is None or not storage.release_reserve(config.data_dir):
            raise
        health.reserve_owed = True
        store.open(config.db_loop_busy_timeout_ms)  # read-only mode: reads are served
    if not health.read_only:
        storage.keep_reserve(config.data_dir, health.min_free_bytes)
    with store.migration_lock():
        applied = run_migrations(collect_migrations())
    if applied:
        store.flush()  # sealed values replace plain ones on disk now
    store.start_background(health.note_fault)
    auth_service.check_rounds(config.password_hash_rounds)
    proxies.parse_networks(config.trusted_proxies)  # a bad entry stops the start, not a request
    jwt = JwtIssuer(load_secret(config.jwt_secret, config.data_dir), config.jwt_ttl_ms)
    web = WebServices(
        authenticate=lambda token: auth_service.authenticate(token, jwt),
        workspace_role=workspace_service.member_role,
        renew_token=lambda p: jwt.issue(p.user_id, p.username, p.role),
        feature_enabled=settings_service.is_enabled,
    )
    platform = PlatformState(config=config, web=web, storage=health, admin_hash=admin_hash)
    platform.set_runtime(JWT, jwt)
    platform.set_runtime(LOGIN_LIMITER, login_limits(config))
    platform.routes = collect_routes()
    handlers: list[Any] = [r.target() for r in collect_sockets() + platform.routes]
    handlers += console_routes(STATIC_DIR, tls.ca_cert_path(config))
    handlers.append((r"/webchat()$", WebchatPageHandler, {"path": os.path.join(STATIC_DIR, "webchat")}))
    app = GuardedApplication(
        handlers,
        allowed=hosts.allowed_hosts(config),
        platform=platform,
        default_handler_class=NotFoundHandler,
        compress_response=False,
        websocket_ping_interval=20,
    )
    return app, platform


def first_run_admin_hash(config: Config) -> asyncio.Future[str] | None:
    """On a first run (no database file yet) with PLATFORM_ADMIN_PASSWORD, the admin's bcrypt hash (a quarter
    second at the default cost) starts on a worker thread now, while the routes are imported and the schema
    migrated on this one, instead of after them on the IOLoop; None otherwise (or with no loop running)."""
    pw = config.admin_password
    if not pw or not setup_service.headless_admin_password_ok(pw) or config.database_url or os.path.exists(config.db_path):
        return None
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return start_blocking(auth_service.hash_password, pw, config.password_hash_rounds)


async def start_features(platform: PlatformState) -> None:
    """Seed data and start each area's background work.

    Under the migration lock, like the migrations: each seed reads what exists, then inserts what is
    missing, and several processes starting on one PostgreSQL database (`serve --workers N`) left the
    lock together and raced on the same inserts (one died of a duplicate `model_provider` key). The
    next process now finds the first one's rows; on SQLite the lock is nothing."""
    hashed = await platform.admin_hash if platform.admin_hash is not None else None
    config = platform.config
    with database_port.current().migration_lock():
        settings_service.seed_config_defaults(config.default_language, config.timezone)
        settings_service.seed_flags(collect_flags())
        setup_service.ensure_headless_admin(config.admin_username, config.admin_password, config.password_hash_rounds, hashed)
        setup_service.prepare_setup_token(config.setup_token)
        tool_factories = dict(_declared("AGENT_TOOLS"))
        for feature in FEATURES:
            module = _feature_module(feature.name, "lifecycle")
            if module and hasattr(module, "start"):
                await module.start(platform)
            for factory in tool_factories[feature.name]:  # after its start: a tool may run on the area's runtime
                for definition in factory(platform):
                    platform.runtime(TOOLS).register(definition)
            platform.started.append(feature.name)
    if platform.config.storage_check_s > 0:
        platform.storage_loop = StorageCheckLoop(platform.storage, platform.config.storage_check_s)
        platform.storage_loop.start()


async def drain(platform: PlatformState, timeout_s: float) -> int:
    """A graceful stop's first step: each started area's `DRAIN` hooks wait (together, up to `timeout_s`) for
    its work in flight; returns how much was still running (stop_features then stops it)."""
    started = set(platform.started)
    hooks = [hook for area, declared in _declared("DRAIN") if area in started for hook in declared]
    left = await asyncio.gather(*(hook(platform, timeout_s) for hook in hooks))
    return sum(left)


async def stop_features(platform: PlatformState) -> None:
    """Stop the areas that started, in reverse order (a second call stops nothing)."""
    while platform.started:
        name = platform.started.pop()
        module = _feature_module(name, "lifecycle")
        if module and hasattr(module, "stop"):
            try:
                await module.stop(platform)
            except Exception:  # noqa: BLE001 - stopping must reach every area
                log.exception("stopping %s failed", name)
    if platform.storage_loop is not None:
        platform.storage_loop.stop()
        platform.storage_loop = None
    await events_port.current().aclose()  # the last events leave; this process's turn leases go
    store = database_port.current()
    store.stop_background()
    try:
        store.flush()  # the database file alone is complete
    except Exception as exc:  # noqa: BLE001 - a full disk: the WAL stays and is read at the next start
        log.warning("the last WAL checkpoint failed (the WAL is kept and used at the next start): %s", exc)
    store.close()


async def warm_up(platform: PlatformState) -> None:
    """What can wait until the port is open, done off the IOLoop: the bcrypt hash a login of an unknown user
    checks (a login arriving first waits for it), the libraries the first chat turn needs (`lazy.WARM_UP`)
    and removing the partial files a crash or a full disk left."""
    try:
        await asyncio.gather(
            run_blocking(auth_service.dummy_hash, platform.config.password_hash_rounds),
            lazy.warm_up(),
            run_blocking(storage.remove_partial_files, platform.config.data_dir, platform.started_at),  # never referenced: no hurry
        )
    except Exception:  # noqa: BLE001 - the first login or chat turn does it instead, and reports there
        log.exception("warming up after the start failed")


ACCEPTS_PER_PASS = 16  # connections accepted per IOLoop pass (see `listen`)


def listen(app: tornado.web.Application, config: Config, sockets: list[Any] | None = None, reuse_port: bool = False) -> tornado.httpserver.HTTPServer:
    """Bind the HTTP server (or serve already bound sockets); the per-route body limit applies first,
    this is only the hard ceiling. `reuse_port`: one of several workers binding the same port (workers.py)."""
    # Tornado accepts up to this many waiting connections in one callback (128 by default): a burst of
    # new clients then held the IOLoop for tens of ms. Fewer per pass: the rest are accepted in the next
    # passes (the socket stays readable), between the events of running streams. The listen backlog
    # itself is unchanged (bound with its default).
    tornado.netutil._DEFAULT_BACKLOG = ACCEPTS_PER_PASS
    server = tornado.httpserver.HTTPServer(
        app,
        max_body_size=body_ceiling(config),
        # Headers past max_header_bytes answer 431 (GuardedApplication); the HTTP layer itself only cuts off
        # (closes the connection on) headers beyond this, so a client gets the 431 in between.
        max_header_size=config.max_header_bytes * 4,
        idle_connection_timeout=120,
        xheaders=False,
        ssl_options=tls.server_context(config),
    )
    if sockets is not None:
        server.add_sockets(sockets)
    else:
        server.listen(config.port, config.host, reuse_port=reuse_port)
    return server


__all__ = ["FEATURES", "Feature", "Platform", "PlatformState", "make_app", "start_features", "stop_features", "listen", "Principal"]
