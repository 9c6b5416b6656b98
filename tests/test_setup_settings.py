"""First-run setup, the process and its configuration, settings, flags, health, timeouts and body limits."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any, AsyncIterator

import aiohttp
import bcrypt
import pytest

from platform_server.config import Config, load_config
from platform_server.web.base import ApiHandler
from platform_server.web.context import LOGIN, PUBLIC
from platform_server.web.sse import SseWriter
from tests.helpers import postgres
from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.server import PASSWORD, RunningServer, free_port, start_server

ROOT = Path(__file__).resolve().parents[1]


# ---- setup -----------------------------------------------------------------------


async def test_setup_status_reports_no_admin_until_init_and_init_works_once(api: ApiClient) -> None:
    before = await api.get("/api/v1/setup/status")
    assert before.status == 200
    assert before.data["initialized"] is False and before.data["hasAdmin"] is False and before.data["version"]
    res = await api.post("/api/v1/setup/init", {"password": "short"})
    assert res.status == 400 and res.msg.startswith("password: ")
    res = await api.post("/api/v1/setup/init", {"password": PASSWORD, "language": "fr-FR"})
    assert res.status == 400 and res.msg.startswith("language: ")

    res = await api.post("/api/v1/setup/init", {"password": PASSWORD, "nickname": "Boss", "language": "zh-CN"})
    assert res.status == 200
    assert res.data["username"] == "admin" and res.data["role"] == "admin" and res.data["nickname"] == "Boss"
    token = res.data["token"]
    ws = (await api.get("/api/v1/workspaces", token=token)).data
    assert [(w["id"], w["memberRole"]) for w in ws] == [("1", "owner")]
    assert (await api.get("/api/v1/settings/language")).data == "zh-CN"

    after = (await api.get("/api/v1/setup/status")).data
    assert after["initialized"] is True and after["hasAdmin"] is True
    again = await api.post("/api/v1/setup/init", {"username": "mallory", "password": PASSWORD})
    assert again.status == 400 and again.body == {"code": 400, "msg": "Already initialized", "data": None}
    login = await api.post("/api/v1/auth/login", {"username": "mallory", "password": PASSWORD})
    assert login.status == 401


async def test_setup_takes_the_time_zone_the_admin_chose_and_refuses_an_unknown_one(api: ApiClient) -> None:
    res = await api.post("/api/v1/setup/init", {"password": PASSWORD, "timezone": "Mars/Olympus"})
    assert res.status == 400 and res.msg == "timezone: unknown IANA time zone"
    assert (await api.get("/api/v1/setup/status")).data["hasAdmin"] is False  # nothing half-written
    res = await api.post("/api/v1/setup/init", {"password": PASSWORD, "timezone": "Europe/Berlin"})
    assert res.status == 200
    settings = (await api.get("/api/v1/settings", token=res.data["token"])).data
    assert settings["timezone"] == "Europe/Berlin"
    preview = await api.get("/api/v1/cron-jobs/preview", token=res.data["token"], params={"cronExpression": "0 9 * * *"})
    assert preview.data["timezone"] == "Europe/Berlin"  # schedules without their own zone follow it


async def test_onboarding_status_needs_login_and_lists_its_steps(api: ApiClient, people: dict) -> None:
    assert (await api.get("/api/v1/setup/onboarding-status")).status == 401
    res = await api.get("/api/v1/setup/onboarding-status", token="bob")
    assert res.status == 200
    assert res.data["steps"]["adminCreated"] is True and isinstance(res.data["completed"], bool)
    assert res.data["initialized"] is True


# ---- the process -------------------------------------------------------------------


def _process_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLATFORM_")}
    env.update({"PLATFORM_LOG_LEVEL": "WARNING", **extra})
    return env


@contextlib.asynccontextmanager
async def running_process(data_dir: Path, env: dict[str, str]) -> AsyncIterator[str]:
    """`python -m platform_server --data-dir D --port P` until it answers; SIGTERM at the end."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "platform_server", "--data-dir", str(data_dir), "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:

            async def serving() -> bool:
                if proc.poll() is not None:
                    raise RuntimeError(f"server exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
                try:
                    async with session.get(url + "/api/v1/setup/status") as r:
                        return r.status == 200
                except aiohttp.ClientConnectionError:
                    return False

            await eventually(serving, interval=0.05, what="the server answering")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.returncode == 0, proc.stderr.read().decode()  # type: ignore[union-attr]


async def test_python_m_platform_server_creates_the_headless_admin_and_keeps_its_jwt_secret(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = _process_env(PLATFORM_ADMIN_PASSWORD="headless-secret", PLATFORM_ADMIN_USERNAME="root")
    async with running_process(data, env) as url, aiohttp.ClientSession() as s:
        async with s.get(url + "/api/v1/setup/status") as r:
            assert (await r.json())["data"]["initialized"] is True
        async with s.post(url + "/api/v1/auth/login", json={"username": "root", "password": "headless-secret"}) as r:
            body = await r.json()
            assert r.status == 200 and body["data"]["role"] == "admin"
            token = body["data"]["token"]
        async with s.post(url + "/api/v1/setup/init", json={"password": PASSWORD}) as r:
            assert r.status == 400 and (await r.json())["msg"] == "Already initialized"
    secret_file = data / "jwt_secret"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    secret = secret_file.read_bytes()
    assert len(secret.strip()) >= 32 and (data / "platform.db").exists()
    with contextlib.closing(sqlite3.connect(data / "platform.db")) as db:
        (password_hash,) = db.execute("SELECT password_hash FROM user WHERE username = 'root'").fetchone()
    assert password_hash.startswith("$2b$10$")  # the default bcrypt cost

    async with running_process(data, _process_env()) as url, aiohttp.ClientSession() as s:
        async with s.get(url + "/api/v1/workspaces", headers={"Authorization": "Bearer " + token}) as r:
            assert r.status == 200  # the secret was kept, so the old JWT still verifies
        async with s.get(url + "/api/v1/auth/users", headers={"Authorization": "Bearer " + token}) as r:
            assert [u["username"] for u in (await r.json())["data"]] == ["root"]
    assert secret_file.read_bytes() == secret


def test_a_jwt_secret_shorter_than_32_bytes_is_refused_at_start(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "platform_server", "--data-dir", str(tmp_path / "data"), "--port", str(free_port())],
        cwd=ROOT, env=_process_env(PLATFORM_JWT_SECRET="only-31-bytes-long-secret-12345"),
        capture_output=True, timeout=30,
    )
    assert proc.returncode != 0
    assert b"jwt_secret must be at least 32 bytes" in proc.stderr


@pytest.mark.config(jwt_secret="a-configured-secret-of-at-least-32-bytes")
async def test_a_configured_jwt_secret_signs_the_tokens(server: RunningServer, api: ApiClient, people: dict) -> None:
    import jwt as pyjwt

    claims = pyjwt.decode(api.tokens["bob"], b"a-configured-secret-of-at-least-32-bytes", algorithms=["HS256"])
    assert claims["sub"] == "bob"
    assert not os.path.exists(os.path.join(server.config.data_dir, "jwt_secret"))


# ---- configuration -------------------------------------------------------------------


def test_config_example_toml_lists_every_setting_with_its_default_and_env_name() -> None:
    text = (ROOT / "config.example.toml").read_text()
    parsed = tomllib.loads(text)
    fields = [f.name for f in dataclasses.fields(Config)]
    assert sorted(parsed) == sorted(fields)
    assert load_config(str(ROOT / "config.example.toml"), env={}) == Config()
    for name in fields:
        assert f"PLATFORM_{name.upper()}" in text, name


def test_flags_beat_env_which_beats_the_toml_file_which_beats_defaults(tmp_path: Path) -> None:
    toml = tmp_path / "settings.toml"
    toml.write_text('port = 1111\nhost = "0.0.0.0"\nshell_exec_enabled = true\nweb_fetch_allow_hosts = ["a", "b"]\n')
    assert load_config(None, env={}).port == 18088
    from_file = load_config(str(toml), env={})
    assert (from_file.port, from_file.host, from_file.shell_exec_enabled) == (1111, "0.0.0.0", True)
    assert from_file.web_fetch_allow_hosts == ("a", "b")
    from_env = load_config(str(toml), env={"PLATFORM_PORT": "2222", "PLATFORM_WEB_FETCH_ALLOW_HOSTS": "c, d"})
    assert (from_env.port, from_env.host, from_env.web_fetch_allow_hosts) == (2222, "0.0.0.0", ("c", "d"))
    from_flag = load_config(str(toml), env={"PLATFORM_PORT": "2222"}, overrides={"port": 3333, "host": None})
    assert (from_flag.port, from_flag.host) == (3333, "0.0.0.0")
    via_env_file = load_config(None, env={"PLATFORM_CONFIG": str(toml)})
    assert via_env_file.port == 1111


# ---- settings, language, sidecar, flags -----------------------------------------------


async def test_settings_are_read_by_any_user_and_saved_by_a_global_admin(api: ApiClient, people: dict) -> None:
    res = await api.get("/api/v1/settings", token="carol")
    assert res.status == 200 and res.data["language"] == "en-US" and res.data["timezone"] == "UTC"
    assert (await api.get("/api/v1/settings")).status == 401
    res = await api.put("/api/v1/settings", {"siteName": "Mine"}, token="bob")
    assert res.status == 403
    res = await api.put("/api/v1/settings", {"siteName": "Ours", "timezone": "Europe/Paris"}, token="alice")
    assert res.status == 200 and res.data["siteName"] == "Ours" and res.data["timezone"] == "Europe/Paris"
    assert (await api.get("/api/v1/settings", token="dave")).data["siteName"] == "Ours"


async def test_invalid_settings_answer_400_and_nothing_is_saved(api: ApiClient, people: dict) -> None:
    cases = [
        ({"siteName": "Fine", "nope": 1}, "nope: unknown setting"),
        ({"siteName": "Fine", "language": "fr-FR"}, "language: "),
        ({"siteName": "Fine", "timezone": "Mars/Olympus"}, "timezone: "),
        ({"siteName": 42}, "siteName: "),
        ({"sidecar": "on"}, "sidecar: "),
        ({"sidecar": {"enabled": True}}, "provider: "),
        ({"sidecar": {"enabled": "yes"}}, "sidecar.enabled: "),
    ]
    for body, msg in cases:
        res = await api.put("/api/v1/settings", body, token="alice")
        assert res.status == 400 and res.msg.startswith(msg), (body, res.body)
    res = await api.put("/api/v1/settings", data=b"[1,2]", token="alice", headers={"Content-Type": "application/json"})
    assert res.status == 400
    # the document lists the body's keys (the settings, the console's aliases and ignored keys) and their values: null
    # is not a setting's value, and the time zones are an enum of the ones the server loads
    body = (await api.get("/v3/api-docs")).body["components"]["schemas"]["SettingsUpdate"]
    assert body["additionalProperties"] is False and {"language", "sidecar", "ttsDefaultVoice", "searchEnabled"} <= set(body["properties"])
    assert "Europe/Paris" in body["properties"]["timezone"]["enum"] and "default" not in body["properties"]["siteName"]
    for bad in ({"images": None}, {"siteName": None}, {"speech": {"voice": ""}}, {"sidecar": {"enabled": True, "provider": ""}}):
        res = await api.put("/api/v1/settings", bad, token="alice")
        assert res.status == 400 and res.msg.startswith(next(iter(bad)) if "provider" not in str(bad) else "provider"), (bad, res.body)
    assert (await api.get("/api/v1/settings", token="alice")).data["siteName"] == "Agent Platform"


async def test_the_language_is_public_to_read_and_set_by_a_global_admin(api: ApiClient, people: dict) -> None:
    res = await api.get("/api/v1/settings/language")
    assert res.status == 200 and res.data == "en-US"
    assert (await api.put("/api/v1/settings/language", {"language": "zh-CN"})).status == 401
    assert (await api.put("/api/v1/settings/language", {"language": "zh-CN"}, token="bob")).status == 403
    res = await api.put("/api/v1/settings/language", {"language": "de-DE"}, token="alice")
    assert res.status == 400 and res.msg.startswith("language: ")
    res = await api.put("/api/v1/settings/language", {"language": "zh-CN"}, token="alice")
    assert res.status == 200 and res.data == "zh-CN"
    assert (await api.get("/api/v1/settings/language")).data == "zh-CN"
    assert (await api.get("/api/v1/settings", token="bob")).data["language"] == "zh-CN"


async def test_the_sidecar_is_saved_by_a_global_admin_and_validated(api: ApiClient, people: dict) -> None:
    body = {"enabled": True, "provider": "openai", "modelName": "gpt-4o-mini"}
    assert (await api.put("/api/v1/settings/sidecar", body, token="bob")).status == 403
    res = await api.put("/api/v1/settings/sidecar", {"enabled": True, "provider": "openai"}, token="alice")
    assert res.status == 400 and res.msg.startswith("provider: ")
    res = await api.put("/api/v1/settings/sidecar", body, token="alice")
    assert res.status == 200 and res.data == body
    assert (await api.get("/api/v1/settings", token="bob")).data["sidecar"] == body
    res = await api.put("/api/v1/settings/sidecar", {"enabled": False}, token="alice")
    assert res.data == {"enabled": False, "provider": None, "modelName": None}


async def test_feature_flags_are_listed_to_users_and_switched_by_a_global_admin(api: ApiClient, people: dict) -> None:
    flags = (await api.get("/api/v1/feature-flags", token="carol")).data
    by_key = {f["key"]: f for f in flags}
    assert by_key["dreaming"]["enabled"] is True and by_key["dreaming"]["description"]
    assert (await api.put("/api/v1/feature-flags/dreaming", {"enabled": False}, token="bob")).status == 403
    res = await api.put("/api/v1/feature-flags/dreaming", {"enabled": False}, token="alice")
    assert res.status == 200 and res.data["key"] == "dreaming" and res.data["enabled"] is False
    flags = {f["key"]: f["enabled"] for f in (await api.get("/api/v1/feature-flags", token="carol")).data}
    assert flags["dreaming"] is False
    res = await api.put("/api/v1/feature-flags/no_such_flag", {"enabled": True}, token="alice")
    assert res.status == 404 and res.body["code"] == 404
    res = await api.put("/api/v1/feature-flags/dreaming", {"enabled": "maybe"}, token="alice")
    assert res.status == 400 and res.msg.startswith("enabled: ")


# ---- health ------------------------------------------------------------------------------


async def test_system_health_needs_login_and_reports_database_version_and_uptime(api: ApiClient, people: dict) -> None:
    assert (await api.get("/api/v1/system/health")).status == 401
    res = await api.get("/api/v1/system/health", token="carol")
    assert res.status == 200
    data = res.data
    assert data["status"] == "UP" and data["database"] == "UP" and data["version"] == "0.1.0"
    assert 0 <= data["uptimeSeconds"] < 60


def _fake_browser(bin_dir: Path, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / "chromium"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


async def test_browser_health_is_for_global_admins_and_reports_a_missing_browser(
    api: ApiClient, people: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await api.get("/api/v1/system/browser-health", token="bob")).status == 403
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    res = await api.get("/api/v1/system/browser-health", token="alice")
    assert res.status == 200 and res.data["available"] is False and res.data["executable"] is None


async def test_browser_health_launches_the_browser_and_reports_what_happened(
    api: ApiClient, people: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    _fake_browser(bin_dir, 'case "$*" in *--headless*--dump-dom*about:blank*) echo "<html><head></head><body></body></html>";; esac\n')
    monkeypatch.setenv("PATH", str(bin_dir))
    res = await api.get("/api/v1/system/browser-health", token="alice")
    assert res.data["available"] is True and res.data["launched"] is True
    assert res.data["executable"] == str(bin_dir / "chromium") and res.data["error"] is None
    _fake_browser(bin_dir, 'echo "cannot open display" >&2\nexit 1\n')
    res = await api.get("/api/v1/system/browser-health", token="alice")
    assert res.data["available"] is True and res.data["launched"] is False
    assert "cannot open display" in res.data["error"]


# ---- request timeout and body limits ----------------------------------------------------


class SlowHandler(ApiHandler):
    """Test-only: answers after 0.5 s."""

    access = {"GET": LOGIN}
    finished_late: list[bool] = []

    async def get(self) -> None:
        """Sleep, then answer."""
        await asyncio.sleep(0.5)
        self.ok("late")
        SlowHandler.finished_late.append(True)


class SlowStream(ApiHandler):
    """Test-only SSE route: one event after 0.5 s."""

    access = {"GET": LOGIN}
    sse_methods = frozenset({"GET"})

    async def get(self) -> None:
        """Sleep, then send one event."""
        writer = SseWriter(self)
        await asyncio.sleep(0.5)
        await writer.send("done", {"ok": True})
        writer.finish()


async def test_a_slow_request_answers_503_but_an_sse_stream_is_not_cut(server: RunningServer, api: ApiClient, people: dict) -> None:
    server.platform.config = dataclasses.replace(server.config, request_timeout_s=0.2)  # after the (bcrypt) logins
    SlowHandler.finished_late.clear()
    server.add_route("/api/v1/test/slow", SlowHandler)
    server.add_route("/api/v1/test/slow-stream", SlowStream)
    res = await api.get("/api/v1/test/slow", token="bob")
    assert res.status == 503
    assert res.body == {"code": 503, "msg": "Request timeout, please try again", "data": None}
    events = await api.sse("GET", "/api/v1/test/slow-stream", token="bob")
    assert [(e.event, e.data) for e in events] == [("done", {"ok": True})]
    assert SlowHandler.finished_late == [True]  # the handler ran on; its late answer went nowhere
    assert (await api.get("/api/v1/workspaces", token="bob")).status == 200


class CountingHandler(ApiHandler):
    """Test-only public POST that counts how often its method ran."""

    access = {"POST": PUBLIC}
    calls: list[int] = []

    def post(self) -> None:
        """Count the call."""
        CountingHandler.calls.append(len(self.body_bytes))
        self.ok(None)


async def raw_post(url: str, path: str, headers: str, body: bytes) -> tuple[int, Any]:
    """One POST written in a single send (so the server reads it whole) on a fresh connection."""
    host, port = url.split("//")[1].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\n{headers}\r\n"
    writer.write(head.encode() + body)
    await writer.drain()
    response = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    status_line, _, rest = response.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), json.loads(payload) if payload.startswith(b"{") else payload


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


@pytest.mark.config(max_body_bytes=1024, public_max_body_bytes=1024)
async def test_a_body_over_the_limit_answers_413_with_or_without_content_length(server: RunningServer, api: ApiClient) -> None:
    CountingHandler.calls.clear()
    server.add_route("/api/v1/test/count", CountingHandler)
    too_large = {"code": 413, "msg": "Request body exceeds 1024 bytes", "data": None}
    body = b"{" + b" " * 2000 + b"}"
    assert await raw_post(server.url, "/api/v1/auth/login", f"Content-Length: {len(body)}\r\n", body) == (413, too_large)
    async with api.session.post(server.url + "/api/v1/auth/login", data=body, expect100=True) as r:
        assert r.status == 413 and await r.json() == too_large

    chunked_header = "Transfer-Encoding: chunked\r\n"
    for path in ("/api/v1/auth/login", "/api/v1/setup/init", "/api/v1/test/count"):
        for parts in ((b"x" * 3000,), (b"x" * 600,) * 5):
            assert await raw_post(server.url, path, chunked_header, chunked(*parts)) == (413, too_large), path
    assert CountingHandler.calls == []  # the method never ran on the truncated body
    status, res = await raw_post(server.url, "/api/v1/test/count", chunked_header, chunked(b"z" * 500, b"z" * 500))
    assert status == 200 and res["code"] == 200 and CountingHandler.calls == [1000]
    assert (await api.get("/api/v1/setup/status")).data["initialized"] is False


@pytest.mark.config(default_language="zh-CN", timezone="Asia/Shanghai")
async def test_a_fresh_install_takes_its_language_and_time_zone_from_the_configuration(api: ApiClient, people: dict) -> None:
    assert (await api.get("/api/v1/settings/language")).data == "zh-CN"
    assert (await api.get("/api/v1/settings", token="bob")).data["timezone"] == "Asia/Shanghai"


async def test_an_invalid_configured_language_time_zone_or_bcrypt_cost_is_refused_at_start(tmp_path: Path) -> None:
    for name, value in (("default_language", "xx-XX"), ("timezone", "Nowhere/Land"), ("password_hash_rounds", 3)):
        with pytest.raises(SystemExit, match=name.replace("default_", "")):
            await start_server(str(tmp_path / name), **{name: value})


async def test_system_info_shows_the_data_directory_and_the_embedded_model_to_global_admins_only(
    server: RunningServer, api: ApiClient, people: dict
) -> None:
    assert (await api.get("/api/v1/system/info", token="bob")).status == 403
    res = await api.get("/api/v1/system/info", token="alice")
    assert res.status == 200, res.body
    data = res.data
    root = os.path.realpath(server.config.data_dir)
    if server.config.database_url:  # PostgreSQL (PLATFORM_TEST_DATABASE=postgres): its URL (the tests' has no password)
        assert data["dataDir"] == root and data["databasePath"] == server.config.database_url
    else:
        assert data["dataDir"] == root and data["databasePath"] == os.path.join(root, "platform.db")
        assert os.path.isfile(data["databasePath"])
    # the suite's PostgreSQL is Debian's, without pgvector: both engines search the in-process matrices here
    # (tests/test_pgvector.py starts a PostgreSQL with pgvector and sees "pgvector")
    assert data["vectorSearch"] == "in-process"
    assert all(f["path"] == os.path.join(root, f["name"]) and os.path.isdir(f["path"]) for f in data["folders"])
    model = data["localModel"]
    assert set(model) >= {"runtimeInstalled", "chatModelPath", "chatModelFound", "chatModelLoaded", "embeddingModelFound"}
    assert model["chatModelFound"] == bool(model["chatModelPath"] and os.path.isfile(model["chatModelPath"]))
    assert model["chatModelConfigured"] is False


async def test_a_first_run_hashes_the_headless_admins_password_on_a_worker_thread_while_the_app_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # bcrypt at the default cost takes a quarter second: on the IOLoop, after the routes and the migrations, it
    # added all of it to a first start; begun on a worker thread before them, it runs beside them.
    if postgres.selected():
        pytest.skip("SQLite only: a first run is told by the missing database file (PostgreSQL's database exists before)")
    real_hashpw = bcrypt.hashpw
    hashed_on: list[int] = []

    def recording_hashpw(password: bytes, salt: bytes) -> bytes:
        hashed_on.append(threading.get_ident())
        return real_hashpw(password, salt)

    monkeypatch.setattr(bcrypt, "hashpw", recording_hashpw)
    loop_thread = threading.get_ident()
    server = await start_server(str(tmp_path / "data"), admin_username="root", admin_password="headless-secret")
    try:
        assert hashed_on and loop_thread not in hashed_on[:1]  # the admin's hash, the first one, was not the loop's work
        r = await server.client.post("/api/v1/auth/login", {"username": "root", "password": "headless-secret"})
        assert r.status == 200 and r.data["role"] == "admin"
    finally:
        await server.stop()
    hashed_on.clear()
    again = await start_server(str(tmp_path / "data"), admin_username="root", admin_password="headless-secret")
    try:
        assert hashed_on == []  # a restart finds the admin: nothing is hashed ahead
    finally:
        await again.stop()
