"""The public webchat page (/webchat?token=…): the one console page other sites may frame (the embed snippet)."""

from __future__ import annotations

import tornado.web

WEBCHAT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors *"
)


class WebchatPageHandler(tornado.web.StaticFileHandler):
    """static/webchat/index.html, framable by any site (it holds nothing but the public widget)."""

    async def get(self, path: str, include_body: bool = True) -> None:
        await super().get("index.html", include_body)

    def set_extra_headers(self, path: str) -> None:
        self.set_header("Cache-Control", "no-cache")
        self.set_header("Content-Security-Policy", WEBCHAT_CSP)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
