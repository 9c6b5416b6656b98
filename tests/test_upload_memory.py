"""Uploads stream to disk: eight concurrent 19.9 MB uploads barely move the server's resident memory
(buffered in memory, they took it from 82 to 577 MB and it stayed there)."""
from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import aiohttp

from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.process import ADMIN, ServerProcess
from tests.helpers.server import create_personas, start_server

UPLOADS = 8
SIZE = 19_900_000
MB = 1024 * 1024


def memory(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak) of a process, in bytes."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


async def test_eight_concurrent_20_mb_uploads_keep_the_server_resident_memory_flat(tmp_path: Any) -> None:
    server = ServerProcess(str(tmp_path / "data"))
    await server.start()
    assert server.proc is not None
    pid = server.proc.pid
    try:
        async with aiohttp.ClientSession() as session:
            api = ApiClient(server.url, session)
            r = await api.post("/api/v1/auth/login", {"username": ADMIN[0], "password": ADMIN[1]})
            api.tokens["admin"] = r.data["token"]

            async def upload(cid: str, body: bytes) -> dict:
                form = aiohttp.FormData()
                form.add_field("conversationId", cid)
                form.add_field("file", body, filename="big.bin", content_type="application/octet-stream")
                res = await api.post("/api/v1/chat/upload", data=form, token="admin")
                assert res.status == 200, res.body
                return res.data

            await upload("warm", b"w" * 1_000_000)  # the first upload loads what uploads use
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")  # peak := now (Linux 4.0+)
            before = memory(pid)
            body = b"u" * SIZE
            done = await asyncio.gather(*(upload(f"c{i}", body) for i in range(UPLOADS)))
            after = memory(pid)
            assert [d["size"] for d in done] == [SIZE] * UPLOADS
            got = await api.get(done[3]["url"], token="admin")
            assert got.status == 200 and len(got.raw) == SIZE and got.raw[:10] == b"u" * 10
            # each spooled body is removed in a worker once its answer is sent
            await eventually(lambda: not list((tmp_path / "data" / "tmp" / "uploads").iterdir()))
    finally:
        server.terminate()
    peak_growth = (after["VmHWM"] - before["VmRSS"]) / MB
    kept_growth = (after["VmRSS"] - before["VmRSS"]) / MB
    print(f"RSS before {before['VmRSS'] / MB:.0f} MB, peak {after['VmHWM'] / MB:.0f} MB, after {after['VmRSS'] / MB:.0f} MB")
    # Measured: buffered in memory, RSS went 78 -> peak 500 -> 235 MB after; spooled, 76 -> 100 -> 96 MB.
    assert peak_growth < 120, f"peak grew {peak_growth:.0f} MB"
    assert kept_growth < 60, f"RSS stayed {kept_growth:.0f} MB higher"
    assert not list((tmp_path / "data" / "tmp" / "uploads").iterdir())  # every spooled body was removed


async def test_an_abandoned_upload_leaves_no_file_and_a_start_clears_what_a_crash_left(tmp_path: Any) -> None:
    spooled = tmp_path / "data" / "tmp" / "uploads"
    spooled.mkdir(parents=True)
    (spooled / "body-left-by-a-crash").write_bytes(b"x" * 1000)
    server = await start_server(str(tmp_path / "data"))
    try:
        assert not list(spooled.iterdir())  # cleared at start
        await create_personas(server.client)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.config.port)
        head = (f"POST /api/v1/chat/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {server.client.tokens['bob']}\r\n"
                f"Content-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: {10 * MB}\r\n\r\n").encode()
        writer.write(head + b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\r\n" + b"a" * (3 * MB))
        await writer.drain()
        await eventually(lambda: list(spooled.iterdir()), what="the first batches reach the disk")
        writer.close()  # the client goes away mid-body
        await eventually(lambda: not list(spooled.iterdir()), what="the spooled part removed")
    finally:
        await server.stop()


async def test_a_spooled_form_keeps_its_fields_in_any_order_and_a_broken_one_is_a_400(tmp_path: Any) -> None:
    server = await start_server(str(tmp_path / "data"))
    try:
        await create_personas(server.client)
        api = server.client
        body = (b"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"C:\\\\docs\\\\notes.txt\"\r\n"
                b"Content-Type: text/plain\r\n\r\n" + b"n" * 3_000_000 + b"\r\n"
                b"--B\r\nContent-Disposition: form-data; name=\"conversationId\"\r\n\r\nafter-the-file\r\n--B--\r\n")
        headers = {"Authorization": f"Bearer {api.tokens['bob']}", "Content-Type": "multipart/form-data; boundary=B"}
        async with api.session.post(server.url + "/api/v1/chat/upload", data=body, headers=headers) as r:
            answer = await r.json()
        assert r.status == 200, answer
        assert answer["data"]["name"] == "notes.txt" and answer["data"]["size"] == 3_000_000
        assert answer["data"]["url"].startswith("/api/v1/chat/files/after-the-file/")
        got = await api.get(answer["data"]["url"], token="bob")
        assert got.raw == b"n" * 3_000_000
        async with api.session.post(server.url + "/api/v1/chat/upload", data=body[:-40], headers=headers) as r:
            answer = await r.json()
        assert r.status == 400 and answer["msg"].startswith(("Malformed form body", "file:", "conversationId")), answer
        # removed in a worker once the answer is sent
        await eventually(lambda: not list((tmp_path / "data" / "tmp" / "uploads").iterdir()))
    finally:
        await server.stop()
