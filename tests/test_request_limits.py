"""Oversized requests get the status HTTP has for them, in the spec's error shape: 431 for headers,
413 for bodies (from the declared length, before the body is sent), a few KB on the public routes."""
from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from typing import Any

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.loop_watch import CallbackProbe
from tests.helpers.server import RunningServer


async def exchange(port: int, head: bytes, body: bytes = b"", timeout: float = 5) -> tuple[int, dict, float]:
    """Send the head and `body` (a part of what the head announces at most); read the answer.
    Returns its status, its JSON body and the seconds it took to come."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        writer.write(head + body)
        await writer.drain()
        raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", raw)
        data = await asyncio.wait_for(reader.readexactly(int(length.group(1))), timeout) if length else b""
        return int(raw[9:12]), json.loads(data) if data else {}, time.monotonic() - started
    finally:
        writer.close()


def head(method: str, path: str, *lines: str) -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join(f"{line}\r\n" for line in lines) + "\r\n").encode()


async def test_headers_over_64_kb_answer_431_in_the_error_shape_on_api_and_page_routes(server: RunningServer) -> None:
    big = "X-Big: " + "a" * 70_000
    for method, path in (("GET", "/api/v1/setup/status"), ("GET", "/"), ("POST", "/api/v1/auth/login"), ("GET", "/nowhere")):
        status, body, _ = await exchange(server.config.port, head(method, path, big, "Content-Length: 0"))
        assert status == 431, (method, path, status, body)
        assert body == {"code": 431, "msg": "Request headers exceed 65536 bytes", "data": None}
    status, body, _ = await exchange(server.config.port, head("GET", "/api/v1/setup/status", "X-Big: " + "a" * 60_000))
    assert status == 200, body  # under the limit: served


@pytest.mark.config(max_header_bytes=8192)
async def test_max_header_bytes_sets_where_431_begins(server: RunningServer) -> None:
    status, body, _ = await exchange(server.config.port, head("GET", "/api/v1/setup/status", "X-Big: " + "a" * 10_000))
    assert status == 431 and body["msg"] == "Request headers exceed 8192 bytes"
    status, _, _ = await exchange(server.config.port, head("GET", "/api/v1/setup/status", "X-Big: " + "a" * 7_000))
    assert status == 200


async def test_a_41_mb_body_answers_413_before_it_is_sent_on_any_route(server: RunningServer, api: ApiClient, people: dict) -> None:
    size = 41 * 1024 * 1024
    token = f"Authorization: Bearer {api.tokens['alice']}"
    for method, path in (("POST", "/api/v1/agents"), ("POST", "/api/v1/chat/upload"), ("POST", "/api/v1/setup/status"),
                         ("POST", "/api/v1/nowhere"), ("POST", "/"), ("PUT", "/static/app/api.js")):
        status, body, _ = await exchange(server.config.port, head(method, path, token, f"Content-Length: {size}",
                                                                  "Content-Type: application/json"), b"{" * 1000)
        assert status == 413, (method, path, status, body)
        assert body["code"] == 413 and body["msg"].startswith("Request body exceeds") and body["data"] is None, body


async def test_a_1_mb_login_body_is_refused_at_once_without_being_read(server: RunningServer) -> None:
    status, body, took = await exchange(server.config.port, head(
        "POST", "/api/v1/auth/login", "Content-Type: application/json", f"Content-Length: {1024 * 1024}"), b'{"username": "')
    assert status == 413 and body == {"code": 413, "msg": "Request body exceeds 8192 bytes", "data": None}
    assert took < 1.0  # the 1 MB was never sent: the answer came from the head alone
    chunked = (b"%x\r\n" % 20_000) + b"x" * 20_000 + b"\r\n"  # no declared length: refused once 8 KB arrived
    status, body, _ = await exchange(server.config.port, head(
        "POST", "/api/v1/setup/init", "Content-Type: application/json", "Transfer-Encoding: chunked"), chunked)
    assert status == 413, body
    ok = json.dumps({"username": "nobody", "password": "x" * 200}).encode()
    status, body, _ = await exchange(server.config.port, head(
        "POST", "/api/v1/auth/login", "Content-Type: application/json", f"Content-Length: {len(ok)}"), ok)
    assert status == 401, body  # an ordinary login body is still read


@pytest.mark.config(public_max_body_bytes=300, public_message_max_body_bytes=2048)
async def test_the_public_route_limits_are_settings(server: RunningServer) -> None:
    body = json.dumps({"username": "nobody", "password": "x" * 400}).encode()
    status, answer, _ = await exchange(server.config.port, head(
        "POST", "/api/v1/auth/login", "Content-Type: application/json", f"Content-Length: {len(body)}"), body)
    assert status == 413 and answer["msg"] == "Request body exceeds 300 bytes"
    hook = json.dumps({"channelId": "1", "messageId": "m", "sender": {"id": "u"}, "text": "y" * 1500}).encode()
    for size, expected in ((len(hook), 413), (len(hook), None)):
        data = hook if expected is None else hook + b" " * 2048
        status, answer, _ = await exchange(server.config.port, head(
            "POST", "/api/v1/channels/webhook/im_a", "Content-Type: application/json", f"Content-Length: {len(data)}"), data)
        if expected:
            assert status == 413 and answer["msg"] == "Request body exceeds 2048 bytes", answer
        else:
            assert status != 413, answer  # under the limit: read, then judged on its signature


async def test_large_json_bodies_are_parsed_off_the_ioloop(
        server: RunningServer, api: ApiClient, people: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed_on: list[tuple[int, bool]] = []  # (size, on the IOLoop's thread) of each body parsed
    real_loads = json.loads

    def watching_loads(raw: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(raw, (bytes, bytearray)) and len(raw) > 1000:
            parsed_on.append((len(raw), threading.current_thread() is threading.main_thread()))
        return real_loads(raw, *args, **kwargs)

    monkeypatch.setattr(json, "loads", watching_loads)  # a spy: every call still parses for real
    # Many small values under a field no model reads: validation is cheap, parsing and the depth check are not.
    big = json.dumps({"name": "x", "agentType": "none-such", "pad": [{"k": "v" * 20, "n": i} for i in range(200_000)]}).encode()
    small = json.dumps({"name": "x", "agentType": "none-such", "pad": "p" * 5000}).encode()
    assert len(big) > 8_000_000

    async def post(body: bytes) -> int:
        async with api.session.post(server.url + "/api/v1/agents", data=body, headers={
                "Authorization": f"Bearer {api.tokens['alice']}", "Content-Type": "application/json"}) as r:
            return r.status

    with CallbackProbe() as probe:
        statuses = await asyncio.gather(*(post(big) for _ in range(4)))
    assert statuses == [400] * 4  # parsed, then refused for its agentType
    assert await post(small) == 400
    assert sorted(parsed_on) == [(len(small), True)] + [(len(big), False)] * 4, parsed_on
    # The IOLoop's costliest callback, in its own thread's CPU time (the machine's load does not count):
    # measured, parsed on the loop: 0.52 s in one callback; in a worker: 8 ms (the client writing).
    assert probe.worst_cpu_s < 0.1, (probe.worst_cpu_s, probe.worst)
