"""The baseline: a bare Tornado handler answering a fixed envelope (the bytes the platform sent)."""
from __future__ import annotations

import argparse
import asyncio
import re

import tornado.web


class EnvelopeHandler(tornado.web.RequestHandler):
    """GET answers the stored envelope with the platform's headers; no auth, no database."""

    def initialize(self, body: bytes) -> None:
        self.body = body

    def get(self) -> None:
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-store")
        self.finish(self.body)


async def serve(port: int, routes: dict[str, bytes]) -> None:
    app = tornado.web.Application([(re.escape(path) + "$", EnvelopeHandler, {"body": body}) for path, body in routes.items()])
    app.listen(port, "127.0.0.1")
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--route", action="append", required=True, help="PATH=FILE: answer GET PATH with FILE's bytes")
    ns = parser.parse_args()
    routes = {}
    for spec in ns.route:
        path, _, file = spec.partition("=")
        with open(file, "rb") as fh:
            routes[path] = fh.read()
    asyncio.run(serve(ns.port, routes))


if __name__ == "__main__":
    main()
