"""A model request's body leaves in the step that sends it, not after every callback already queued."""
from __future__ import annotations

import asyncio
from asyncio import selector_events
from typing import Any

from aiohttp import web

from platform_server.integrations.llm._http import HttpTransport


async def test_a_request_body_is_written_before_the_loop_runs_anything_else(monkeypatch: Any) -> None:
    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.json_response({"ok": True})

    app = web.Application(client_max_size=64_000_000)
    app.router.add_post("/v1/echo", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    transport = HttpTransport("test", f"http://127.0.0.1:{port}", {}, timeout_s=5, first_byte_timeout_s=5, idle_timeout_s=5)
    order: list[str] = []
    write, writelines = selector_events._SelectorSocketTransport.write, selector_events._SelectorSocketTransport.writelines

    def record(data: Any) -> None:
        if b"POST /v1/echo" in bytes(data[:40]) and b'"question"' in bytes(data):
            order.append("request with its body written")

    monkeypatch.setattr(selector_events._SelectorSocketTransport, "write", lambda self, data: (record(data), write(self, data))[1])
    monkeypatch.setattr(selector_events._SelectorSocketTransport, "writelines",
                        lambda self, parts: (record(b"".join(parts)), writelines(self, parts))[1])
    try:
        async def call() -> None:
            resp = await transport.open("POST", "/v1/echo", {"question": "x" * 200}, transport.deadline())
            resp.release()

        await call()  # opens the connection; chat turns then reuse kept-alive ones, as measured below
        order.clear()
        task = asyncio.create_task(call())
        asyncio.get_running_loop().call_soon(lambda: order.append("next callback"))
        await task
        assert order == ["request with its body written", "next callback"], order
        big = "y" * 8_000_000  # more than a socket takes at once: the write waits, and a task carries it on
        resp = await transport.open("POST", "/v1/echo", {"question": big}, transport.deadline())
        assert resp.status == 200 and (await resp.json()) == {"ok": True}
        resp.release()
    finally:
        await transport.close()
        await runner.cleanup()
