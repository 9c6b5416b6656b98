"""A real platform server on a free port with a fresh data directory, in this test's event loop."""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from typing import Any

import aiohttp
import tornado.netutil
import tornado.web

from platform_server.app import Platform, listen, make_app, start_features, stop_features
from platform_server.config import Config, load_config
from platform_server.web.routing import route
from tests.helpers import postgres, redis_server
from tests.helpers.client import ApiClient


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RunningServer:
    url: str
    config: Config
    platform: Platform
    client: ApiClient
    _server: Any
    _session: aiohttp.ClientSession
    app: tornado.web.Application | None = None

    def add_route(self, template: str, handler: type[tornado.web.RequestHandler]) -> None:
        """Serve a test-only handler in this running app (checked before the production routes)."""
        assert self.app is not None
        self.app.add_handlers(r".*$", [route(template, handler).target()])

    async def stop(self) -> None:
        self._server.stop()
        await self._session.close()
        await stop_features(self.platform)


_redis_dirs: set[str] = set()
_migrated_sqlite: str | None = None  # a data dir holding a database with every migration applied


def place_migrated_sqlite(data_dir: str) -> None:
    """Put a copy of a migrated, otherwise empty SQLite database into a new test server's data dir: the server
    then starts as on a restart, without running ~150 migrations (0.1-0.2 s of each of ~1,200 starts). The
    migrations themselves are still run by every test that calls start_server on an empty dir."""
    global _migrated_sqlite
    if _migrated_sqlite is None:
        scratch = tempfile.mkdtemp(prefix="platform-migrated-")
        atexit.register(shutil.rmtree, scratch, True)
        postgres.run_migrate(scratch)
        _migrated_sqlite = scratch
    os.makedirs(data_dir, exist_ok=True)
    for suffix in ("", "-wal"):  # a closed WAL database: the file and what was not checkpointed yet
        source = os.path.join(_migrated_sqlite, "platform.db" + suffix)
        if os.path.exists(source):
            shutil.copyfile(source, os.path.join(data_dir, "platform.db" + suffix))


async def start_server(data_dir: str, **overrides: Any) -> RunningServer:
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")  # bound now: no other process can take the port
    port = sockets[0].getsockname()[1]
    values: dict[str, Any] = {
        "host": "127.0.0.1", "port": port, "data_dir": data_dir, "log_level": "WARNING",
        "password_hash_rounds": 4,  # the cheapest bcrypt cost keeps persona setup fast
        "cron_tick_s": 0,  # tests tick the scheduler with a chosen clock
        "memory_extract_tick_s": 0,  # tests tick the memory extraction loop
        "goal_eval_tick_s": 0,  # tests tick the goal evaluator
        "llm_retry_attempts": 0,  # a scripted failure fails at once; retry tests ask for retries with the config marker
    }
    values.update(overrides)
    if redis_server.selected() and "redis_url" not in values:
        values["redis_url"] = redis_server.server().url  # PLATFORM_TEST_REDIS=1: turn streams and limits on Redis
        if os.path.realpath(data_dir) not in _redis_dirs:  # a restart of the same server keeps what it wrote
            redis_server.server().flush()  # another test's conversations had the same ids
            _redis_dirs.add(os.path.realpath(data_dir))
    if postgres.selected() and "database_url" not in values:
        values["database_url"] = postgres.cluster().database_for(data_dir)  # PLATFORM_TEST_DATABASE=postgres
    config = load_config(None, env={}, overrides=values)
    app, platform = make_app(config)
    await start_features(platform)
    server = listen(app, config, sockets)
    session = aiohttp.ClientSession()
    url = f"http://127.0.0.1:{port}"
    return RunningServer(url, config, platform, ApiClient(url, session), server, session, app)


PASSWORD = "password-123"


async def login(client: ApiClient, username: str, password: str = PASSWORD) -> str:
    r = await client.post("/api/v1/auth/login", {"username": username, "password": password})
    assert r.status == 200, r.body
    client.tokens[username] = r.data["token"]
    return r.data["token"]


async def drop_first_agent(client: ApiClient, token: str) -> None:
    """Delete the agent setup creates, for tests written for an install with no agent yet."""
    r = await client.get("/api/v1/agents", token=token)
    assert r.status == 200, r.body
    rows = r.data["records"] if isinstance(r.data, dict) else r.data
    for agent in rows:
        assert (await client.delete(f"/api/v1/agents/{agent['id']}", token=token)).status == 200


async def create_personas(client: ApiClient) -> dict[str, dict[str, Any]]:
    """alice: global admin (owner of workspace 1); bob: member; carol: viewer; dave: only in workspace "Other"."""
    r = await client.post("/api/v1/setup/init", {"username": "alice", "password": PASSWORD})
    assert r.status == 200, r.body
    client.tokens["alice"] = r.data["token"]
    people: dict[str, dict[str, Any]] = {"alice": {"id": r.data["id"]}}
    await drop_first_agent(client, "alice")
    for name in ("bob", "carol", "dave"):
        r = await client.post("/api/v1/auth/users", {"username": name, "password": PASSWORD}, token="alice")
        assert r.status == 200, r.body
        people[name] = {"id": r.data["id"]}
        await login(client, name)
    r = await client.put(f"/api/v1/workspaces/1/members/{people['carol']['id']}", {"role": "viewer"}, token="alice")
    assert r.status == 200, r.body
    r = await client.post("/api/v1/workspaces", {"name": "Other"}, token="alice")
    other = r.data["id"]
    r = await client.post(f"/api/v1/workspaces/{other}/members", {"userId": people["dave"]["id"], "role": "owner"}, token="alice")
    assert r.status == 200, r.body
    r = await client.delete(f"/api/v1/workspaces/1/members/{people['dave']['id']}", token="alice")
    assert r.status == 200, r.body
    people["dave"]["workspace"] = other
    return people
