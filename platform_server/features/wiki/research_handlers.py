"""LLM Wiki deep research routes: start a session, follow its events over SSE (owner only)."""

from __future__ import annotations

import asyncio

from platform_server.features.wiki import WIKI, views
from platform_server.features.wiki.schemas import RESEARCH_EVENTS, ResearchStart
from platform_server.web.base import ApiHandler
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route
from platform_server.web.sse import SseWriter

TAGS = ("LLM Wiki",)


class ResearchStartHandler(ApiHandler):
    access = {"POST": "viewer"}
    answers = {"POST": one(views.WikiResearchView)}
    body_models = {"POST": ResearchStart}
    tags = TAGS

    def post(self) -> None:
        """Start researching `{kbId, question, rounds?, saveAsPage?}`; answers `{sessionId}` for the stream."""
        session = self.platform.runtime(WIKI).research.start(self.require_caller(), self.body(ResearchStart))
        self.ok({"sessionId": str(session.id), "kbId": str(session.kb_id)})


class ResearchStreamHandler(ApiHandler):
    access = {"GET": "viewer"}
    sse_methods = frozenset({"GET"})
    events = {"GET": RESEARCH_EVENTS}
    query_token = True
    tags = TAGS
    _gone: asyncio.Event | None = None

    async def get(self, sessionId: int) -> None:
        """SSE of one session (its owner only): `plan`, `search`, `finding`, `report`, then `done` or `error`."""
        session = self.platform.runtime(WIKI).research.get(self.require_caller(), sessionId)
        writer = SseWriter(self)
        self._gone = asyncio.Event()
        sent = 0
        try:
            while not writer.closed:
                while sent < len(session.events):
                    name, data = session.events[sent]
                    sent += 1
                    await writer.send(name, data, sent)
                if session.finished and sent >= len(session.events):
                    break
                changed = asyncio.ensure_future(session.changed.wait())
                gone = asyncio.ensure_future(self._gone.wait())
                done, _ = await asyncio.wait({changed, gone}, timeout=self.config.heartbeat_s, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                gone.cancel()
                if gone in done:
                    break
                if not done:
                    await writer.send_raw("event: heartbeat\ndata: {}\n\n")
        finally:
            writer.finish()

    def on_connection_close(self) -> None:
        if self._gone is not None:
            self._gone.set()
        super().on_connection_close()


ROUTES = [
    route("/api/v1/wiki/research/start", ResearchStartHandler),
    route("/api/v1/wiki/research/stream/{sessionId}", ResearchStreamHandler),
]
