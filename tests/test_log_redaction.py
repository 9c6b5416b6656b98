"""No secret reaches a log line: query tokens, passwords and keys are redacted in the access log and elsewhere."""
from __future__ import annotations

import logging
import os
from typing import Any

import aiohttp

from platform_server.web.redact import RedactingFilter, redact
from tests.helpers.client import ApiClient
from tests.helpers.process import ADMIN, ServerProcess


def test_redact_hides_every_named_secret_in_query_strings_and_json() -> None:
    line = ("GET /api/v1/x?token=eyJhbGciOi.abc.def&oldPassword=old-pass-1&newPassword=new-pass-2"
            "&secret=s3&key=k4&page=2 (127.0.0.1)")
    out = redact(line)
    for value in ("eyJhbGciOi.abc.def", "old-pass-1", "new-pass-2", "s3&", "k4"):
        assert value not in out
    assert "page=2" in out and out.count("[REDACTED]") == 5
    assert "hunter22" not in redact('{"username": "a", "password": "hunter22"}')
    assert "Bearer abc.def.ghi" not in redact("Authorization: Bearer abc.def.ghi")


def test_the_filter_redacts_formatted_arguments() -> None:
    record = logging.LogRecord("t", logging.WARNING, __file__, 1, "%s %s", ("PUT", "/p?password=pw-123"), None)
    assert RedactingFilter().filter(record)
    assert "pw-123" not in record.getMessage()


async def test_the_servers_log_holds_no_token_or_password(tmp_path: Any) -> None:
    server = ServerProcess(str(tmp_path / "data"), env={"PLATFORM_LOG_LEVEL": "INFO"})
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            api = ApiClient(server.url, session)
            r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
            jwt = r.data["token"]
            user_id = r.data.get("id") or r.data.get("userId") or "1"
            async with session.get(f"{server.url}/api/v1/agents/1/chat/stream",
                                   params={"message": "hi", "token": jwt}) as resp:
                await resp.read()
            async with session.put(f"{server.url}/api/v1/auth/users/{user_id}/password",
                                   params={"oldPassword": "wrong-old-pass", "newPassword": "brand-new-pass-9"},
                                   headers={"Authorization": f"Bearer {jwt}"}) as resp:
                await resp.read()
            async with session.get(f"{server.url}/api/v1/agents", params={"key": "api-key-value-1"}) as resp:
                await resp.read()
    finally:
        server.terminate()
    log_path = os.path.join(str(tmp_path), f"server-{server.port}.log")
    text = open(log_path, encoding="utf-8", errors="replace").read()
    assert "/api/v1/agents/1/chat/stream" in text, text[-2000:]
    for secret in (jwt, "wrong-old-pass", "brand-new-pass-9", "api-key-value-1"):
        assert secret not in text, f"{secret[:12]}... is in the log"


async def test_the_access_line_of_a_get_chat_stream_keeps_no_message_text(env: Any, caplog: Any) -> None:
    """`GET /agents/{id}/chat/stream?message=` carries what the user typed: the access line names the parameter only."""
    said = "my-card-pin-is-4455"
    with caplog.at_level(logging.INFO, logger="tornado.access"):
        r = await env.api.get(f"/api/v1/agents/{env.agent_id}/chat/stream",
                              params={"message": said, "conversationId": "private-1", "page": "2",
                                      "token": env.api.tokens["alice"]})
        assert r.status == 200
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "tornado.access"]
    line = next(x for x in lines if "/chat/stream" in x)
    assert said not in line and "private-1" not in line and env.api.tokens["alice"] not in line, line
    assert "message=[REDACTED]" in line and "conversationId=[REDACTED]" in line and "page=2" in line, line


def test_request_lines_keep_numbers_and_flags_and_hide_every_other_query_value() -> None:
    record = logging.LogRecord("tornado.access", logging.INFO, __file__, 1, "%d %s %.2fms",
                               (200, "GET /api/v1/wiki/search?q=divorce+lawyer&kbId=42&archived=true&size= (::1)", 1.5), None)
    assert RedactingFilter().filter(record)
    assert record.getMessage() == "200 GET /api/v1/wiki/search?q=[REDACTED]&kbId=42&archived=true&size= (::1) 1.50ms"
