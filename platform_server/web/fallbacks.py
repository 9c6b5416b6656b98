"""The handlers of requests no route serves: an unknown path, headers or a body too large, a refused Host."""

from __future__ import annotations

from platform_server.web.base import HTTP_METHODS, ApiHandler
from platform_server.web.bodies import body_ceiling
from platform_server.web.context import PUBLIC
from platform_server.web.errors import BadRequest, HeadersTooLarge, NotFound, PayloadTooLarge


class NotFoundHandler(ApiHandler):
    """Any path no route matches: 404 `Resource not found` for every method."""

    access = {m: PUBLIC for m in HTTP_METHODS}

    def check_request(self) -> None:
        raise NotFound()


class HeadersTooLargeHandler(ApiHandler):
    """A request whose headers exceed `max_header_bytes`: 431 for every method."""

    access = {m: PUBLIC for m in HTTP_METHODS}

    def check_request(self) -> None:
        raise HeadersTooLarge(f"Request headers exceed {self.config.max_header_bytes} bytes")


class BodyTooLargeHandler(ApiHandler):
    """A body past the HTTP layer's ceiling, on any route (static files included): 413."""

    access = {m: PUBLIC for m in HTTP_METHODS}

    def _check_length(self) -> None:
        ceiling = body_ceiling(self.config)
        self.request.connection.set_max_body_size(2**62)  # type: ignore[union-attr]  # our 413, not Tornado's bare 400
        raise PayloadTooLarge(f"Request body exceeds {ceiling} bytes")


class HostRefusedHandler(ApiHandler):
    """A request whose Host header names no allowed host (DNS rebinding): 400 for every method."""

    access = {m: PUBLIC for m in HTTP_METHODS}

    def check_request(self) -> None:
        raise BadRequest(f"Host '{self.request.host[:100]}' is not allowed (see allowed_hosts)")
