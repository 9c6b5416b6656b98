"""Request bodies over the size limit are refused before they are read, on every route."""
from __future__ import annotations

import asyncio
import json
import re

import pytest

from tests.helpers.server import RunningServer

LIMIT = 1024
UPLOAD_LIMIT = 2048


def concrete(template: str) -> str:
    return re.sub(r"\{[^}]+\}", "123", template)


async def send_raw(port: int, head: bytes, body_parts: list[bytes], timeout: float = 5) -> tuple[int, bytes, bytes]:
    """Write the request head and some body bytes (never the whole announced body); read the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head)
        for part in body_parts:
            writer.write(part)
        await writer.drain()
        raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        status = int(raw[9:12])
        length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", raw)
        body = await asyncio.wait_for(reader.readexactly(int(length.group(1))), timeout) if length else b""
        return status, raw, body
    finally:
        writer.close()


def limit_for(handler: type) -> int:
    return UPLOAD_LIMIT if handler.max_body_setting == "upload_max_bytes" else LIMIT


def check_refusal(handler: type, method: str, path: str, status: int, body: bytes) -> None:
    expected = limit_for(handler)
    if method in handler.sse_methods:
        assert status == 200, (method, path, status, body)
        assert body.startswith(b"event: error\n"), (method, path, body)
        payload = json.loads(body.split(b"data: ", 1)[1])
        assert payload == {"message": f"Request body exceeds {expected} bytes", "code": 413}
        return
    assert status == 413, (method, path, status, body)
    message = f"Request body exceeds {expected} bytes"
    if getattr(handler, "error_shape", None) == "openai":  # the OpenAI door answers errors in the OpenAI shape
        assert json.loads(body)["error"]["message"] == message, (method, path, body)
        return
    assert json.loads(body) == {"code": 413, "msg": message, "data": None}


@pytest.mark.config(max_body_bytes=LIMIT, upload_max_bytes=UPLOAD_LIMIT, public_max_body_bytes=LIMIT, public_message_max_body_bytes=LIMIT)
async def test_a_declared_length_over_the_limit_is_refused_on_every_route_without_reading_the_body(
    server: RunningServer,
) -> None:
    checked = 0
    for r in server.platform.routes:
        path = concrete(r.template)
        for method in r.handler.implemented_methods():
            # Announce 100 MB but send ten bytes: the answer can only come from the header check.
            head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"Content-Length: 100000000\r\n\r\n").encode()
            status, _, body = await send_raw(server.config.port, head, [b"0123456789"])
            check_refusal(r.handler, method, path, status, body)
            checked += 1
    assert checked > 50


@pytest.mark.config(max_body_bytes=LIMIT, upload_max_bytes=UPLOAD_LIMIT, public_max_body_bytes=LIMIT, public_message_max_body_bytes=LIMIT)
async def test_a_chunked_body_is_refused_as_soon_as_it_passes_the_limit_on_every_route(server: RunningServer) -> None:
    public = 0
    for r in server.platform.routes:
        path = concrete(r.template)
        for method in r.handler.implemented_methods():
            over = limit_for(r.handler) + 1
            head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"Transfer-Encoding: chunked\r\n\r\n").encode()
            chunk = f"{over:x}\r\n".encode() + b"x" * over + b"\r\n"
            # The terminating zero-length chunk is never sent: the server must answer mid-body.
            status, _, body = await send_raw(server.config.port, head, [chunk])
            check_refusal(r.handler, method, path, status, body)
            public += r.handler.access.get(method) == "public"
    assert public >= 2  # login and setup are among them


@pytest.mark.config(max_body_bytes=LIMIT, upload_max_bytes=UPLOAD_LIMIT, public_max_body_bytes=LIMIT, public_message_max_body_bytes=LIMIT)
async def test_a_body_at_the_limit_is_still_read_and_answered(server: RunningServer) -> None:
    body = json.dumps({"username": "nobody", "password": "x" * (LIMIT - 60)}).encode()
    assert len(body) <= LIMIT
    head = (f"POST /api/v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    status, _, answer = await send_raw(server.config.port, head, [body])
    assert status in (400, 401), answer
    assert json.loads(answer)["code"] in (400, 401)
