"""Secrets at rest: provider keys, datasource credentials, channel secrets, MCP headers/env, ACP env, OAuth tokens
and plugin config are encrypted in the database; the data dir, database, WAL and memory files are private."""
from __future__ import annotations

import sqlite3
import stat
from pathlib import Path
from typing import Any

from tests.helpers.chat import ChatEnv, text_of
from tests.helpers.server import RunningServer, start_server

PLAIN = {
    "provider": "sk-provider-PLAINTEXT-111",
    "datasource": "Bearer ds-PLAINTEXT-222",
    "mcp_header": "Bearer mcp-PLAINTEXT-333",
    "mcp_env": "mcp-env-PLAINTEXT-444",
    "acp_env": "acp-env-PLAINTEXT-555",
    "oauth_access": "oauth-access-PLAINTEXT-666",
    "oauth_refresh": "oauth-refresh-PLAINTEXT-777",
    "plugin": "plugin-PLAINTEXT-888",
}


def raw_bytes(server: RunningServer) -> bytes:
    db = Path(server.config.db_path)
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


async def store_every_kind_of_secret(env: ChatEnv) -> str:
    api = env.api
    r = await api.post("/api/v1/models/custom-providers", {"providerId": "sealed", "name": "sealed", "protocol": "openai",
                                                          "baseUrl": env.llm.url, "apiKey": PLAIN["provider"]}, token="alice")
    assert r.status == 200, r.body
    r = await api.post("/api/v1/datasources", {"name": "api", "type": "http", "config": {
        "baseUrl": "https://example.invalid", "headers": {"Authorization": PLAIN["datasource"]}}}, token="alice")
    assert r.status == 200, r.body
    r = await api.post("/api/v1/mcp/servers", {"name": "remote", "transport": "streamable_http",
                                               "url": "https://example.invalid/mcp", "enabled": False,
                                               "headers": {"Authorization": PLAIN["mcp_header"]}}, token="alice")
    assert r.status == 200, r.body
    r = await api.post("/api/v1/mcp/servers", {"name": "local", "transport": "stdio", "command": "true", "enabled": False,
                                               "env": {"TOKEN": PLAIN["mcp_env"]}}, token="alice")
    assert r.status == 200, r.body
    r = await api.post("/api/v1/acp/endpoints", {"name": "helper", "command": "true", "enabled": False,
                                                 "env": {"TOKEN": PLAIN["acp_env"]}}, token="alice")
    assert r.status == 200, r.body
    from platform_server.features.oauth.models import OAuthCredential
    from platform_server.features.plugins.models import PluginState
    OAuthCredential.create(vendor="vendor_b", access_token=PLAIN["oauth_access"], refresh_token=PLAIN["oauth_refresh"])
    PluginState.create(name="sealed-plugin", config={"apiToken": PLAIN["plugin"]})
    r = await api.post("/api/v1/channels", {"name": "im", "channelType": "im_a", "agentId": env.agent_id,
                                            "settings": {"appKey": "ding-at-rest"}}, token="alice")
    assert r.status == 200, r.body
    return str(r.data["secret"])


async def test_every_secret_is_encrypted_in_the_database_file_and_its_wal(env: ChatEnv, server: RunningServer) -> None:
    channel_secret = await store_every_kind_of_secret(env)
    data = raw_bytes(server)
    for name, value in {**PLAIN, "channel": channel_secret}.items():
        assert value.encode() not in data, f"{name} is stored in plaintext"
    from platform_server.features.oauth.models import OAuthCredential
    from platform_server.features.plugins.models import PluginState
    assert OAuthCredential.get_by_id("vendor_b").access_token == PLAIN["oauth_access"]
    assert PluginState.get_by_id("sealed-plugin").config == {"apiToken": PLAIN["plugin"]}


async def test_the_sealed_provider_key_still_authenticates_the_model_calls(env: ChatEnv, server: RunningServer) -> None:
    from platform_server.features.models.models import Provider
    row = Provider.get_by_id("fake")
    assert row.api_key == "test-key"
    assert b"test-key" not in raw_bytes(server)
    events = await env.stream("hello")
    assert text_of(events) == "Echo: hello"
    assert env.llm.requests  # the fake server refuses a wrong key


async def test_plain_secrets_written_by_an_older_version_are_sealed_by_the_data_migration(tmp_path: Any) -> None:
    data = tmp_path / "data"
    first = await start_server(str(data))
    await first.stop()
    db = sqlite3.connect(first.config.db_path)
    db.execute("INSERT INTO model_provider (id, name, protocol, base_url, api_key, enabled, builtin, sort_order, "
               "create_time, update_time) VALUES ('old', 'old', 'openai', 'http://x', ?, 0, 0, 100, "
               "'2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')", (PLAIN["provider"],))
    db.execute("DELETE FROM schema_migration WHERE name = 'models_0002_seal_api_keys'")
    db.commit()
    db.close()
    second = await start_server(str(data))
    try:
        assert PLAIN["provider"].encode() not in raw_bytes(second)
        from platform_server.features.models.models import Provider
        assert Provider.get_by_id("old").api_key == PLAIN["provider"]
    finally:
        await second.stop()


async def test_the_data_dir_database_and_memory_files_are_private(env: ChatEnv, server: RunningServer) -> None:
    await env.stream("hello")
    data = Path(server.config.data_dir)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for path in (Path(server.config.db_path), Path(f"{server.config.db_path}-wal")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    from tests.helpers.memory import fact, folder, summarize
    assert (await summarize(env, [fact("k", "v")])).status == 200
    memory = folder(server, env) / "MEMORY.md"
    assert stat.S_IMODE(memory.stat().st_mode) == 0o600
    assert stat.S_IMODE(memory.parent.stat().st_mode) == 0o700
    import aiohttp
    form = aiohttp.FormData()
    form.add_field("conversationId", "up1")
    form.add_field("file", b"private bytes", filename="note.txt", content_type="text/plain")
    r = await env.api.post("/api/v1/chat/upload", data=form, token="alice")
    assert r.status == 200, r.body
    uploaded = next((data / "uploads").rglob(r.data["storedName"]))
    assert stat.S_IMODE(uploaded.stat().st_mode) == 0o600
    assert stat.S_IMODE(uploaded.parent.stat().st_mode) == 0o700
