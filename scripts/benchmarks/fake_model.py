"""The scripted OpenAI-compatible model for the bench: each chunk carries the time it was sent.

Every streamed content chunk is `<ns> ` where <ns> is time.time_ns() at the moment the chunk is
written, so a reader on the same machine gets the exact delivery latency of each event, whether it
reads this server directly or through the platform.
"""
from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import tornado.web

from tests.helpers.fake_openai import ChatHandler, ModelsHandler, ScriptedOpenAI
from tests.helpers.llm_script import Script

STAMP = "@@T@@"


class StampingChatHandler(ChatHandler):
    def start_sse(self) -> None:
        super().start_sse()
        self.request.connection.stream.set_nodelay(True)  # type: ignore[attr-defined] - frames leave at once

    async def send_raw(self, text: str, delay_s: float = 0.0) -> None:
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        self.write(text.replace(STAMP, str(time.time_ns())))
        await self.flush()


class ControlHandler(tornado.web.RequestHandler):
    """POST /control?chunks=N&delay_ms=D changes the script between phases."""

    def initialize(self, srv: "StampingModel") -> None:
        self.srv = srv

    def post(self) -> None:
        chunks = int(self.get_query_argument("chunks"))
        delay_s = float(self.get_query_argument("delay_ms")) / 1000
        self.srv.script = Script(text=[STAMP + " "] * chunks, delay_s=delay_s)
        self.finish("ok")


class StampingModel(ScriptedOpenAI):
    """Answers every chat with `chunks` time-stamped chunks, `delay_s` apart; keeps no request log."""

    def __init__(self, chunks: int, delay_s: float, **kw: Any) -> None:
        super().__init__(default_delay_s=delay_s, **kw)
        self.script = Script(text=[STAMP + " "] * chunks, delay_s=delay_s)

    def next_script(self) -> Script:
        self.requests.clear()
        self.request_log.clear()
        return self.script

    def routes(self) -> list[Any]:
        args = {"srv": self}
        return [(r"/v1/chat/completions", StampingChatHandler, args), (r"/v1/models", ModelsHandler, args),
                (r"/control", ControlHandler, args)]


async def serve(port: int, chunks: int, delay_s: float) -> None:
    srv = StampingModel(chunks, delay_s, port=port)
    await srv.start()
    await asyncio.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--chunks", type=int, default=20)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    ns = parser.parse_args()
    asyncio.run(serve(ns.port, ns.chunks, ns.delay_ms / 1000))


if __name__ == "__main__":
    main()
