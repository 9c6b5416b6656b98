"""The floor of this stack: the least a Tornado SSE server relaying an aiohttp model stream can do.

POST /api/v1/chat/stream opens the scripted model's stream and writes each content chunk as one
`content_delta` frame, flushed at once, then `done`. No auth, no database, no history, no events
hub: what is left is Tornado, aiohttp, asyncio and the sockets. The bench reads it with the same
client as the platform, so the platform's added latency can be set beside the stack's own.
"""
from __future__ import annotations

import argparse
import asyncio
import json

import aiohttp
import tornado.web

BODY = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "bench"}]}


class RelayHandler(tornado.web.RequestHandler):
    def initialize(self, model_url: str, session: aiohttp.ClientSession) -> None:
        self.model_url = model_url
        self.session = session

    async def post(self) -> None:
        self.set_header("Content-Type", "text/event-stream; charset=UTF-8")
        self.request.connection.stream.set_nodelay(True)  # type: ignore[attr-defined]
        async with self.session.post(self.model_url + "/v1/chat/completions", json=BODY) as resp:
            pending = ""
            async for chunk in resp.content.iter_any():
                pending += chunk.decode()
                *lines, pending = pending.split("\n")
                for line in lines:
                    if not line.startswith("data: {"):
                        continue
                    choices = json.loads(line[6:]).get("choices") or [{}]
                    content = (choices[0].get("delta") or {}).get("content")
                    if content:
                        self.write("event: content_delta\ndata: " + json.dumps({"delta": content}) + "\n\n")
                        self.flush()
        self.finish('event: done\ndata: {"status": "completed"}\n\n')


class HealthHandler(tornado.web.RequestHandler):
    def get(self) -> None:
        self.finish("ok")


async def serve(port: int, model_url: str) -> None:
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    args = {"model_url": model_url, "session": session}
    routes = [(r"/api/v1/chat/stream", RelayHandler, args), (r"/health", HealthHandler)]
    tornado.web.Application(routes).listen(port, "127.0.0.1")
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model-url", required=True)
    ns = parser.parse_args()
    asyncio.run(serve(ns.port, ns.model_url))


if __name__ == "__main__":
    main()
