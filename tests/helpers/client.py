"""An HTTP client for tests: JSON envelope calls and SSE reads against a real server."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.helpers import answers, sse_frames


@dataclass
class Response:
    status: int
    body: Any
    headers: dict[str, str]
    raw: bytes = b""

    @property
    def data(self) -> Any:
        return self.body.get("data") if isinstance(self.body, dict) else None

    @property
    def code(self) -> Any:
        return self.body.get("code") if isinstance(self.body, dict) else None

    @property
    def msg(self) -> Any:
        return self.body.get("msg") if isinstance(self.body, dict) else None


@dataclass
class SseEvent:
    event: str
    data: Any
    id: int | None = None


@dataclass
class ApiClient:
    base_url: str
    session: aiohttp.ClientSession
    tokens: dict[str, str] = field(default_factory=dict)

    def _headers(self, token: str | None, workspace: Any, headers: dict[str, str] | None) -> dict[str, str]:
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + self.tokens.get(token, token)
        if workspace is not None:
            h["X-Workspace-Id"] = str(workspace)
        return h

    async def request(
        self,
        method: str,
        path: str,
        json_body: Any = None,
        *,
        token: str | None = None,
        workspace: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        data: Any = None,
    ) -> Response:
        kwargs: dict[str, Any] = {"headers": self._headers(token, workspace, headers), "params": params}
        if json_body is not None:
            kwargs["json"] = json_body
        if data is not None:
            kwargs["data"] = data
        await answers.load(self.session, self.base_url)
        async with self.session.request(method, self.base_url + path, **kwargs) as r:
            raw = await r.read()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
        answers.check(method, path, r.status, body)  # the answer matches its documented 200 schema
        return Response(r.status, body, dict(r.headers), raw)

    async def get(self, path: str, **kw: Any) -> Response:
        return await self.request("GET", path, **kw)

    async def post(self, path: str, json_body: Any = None, **kw: Any) -> Response:
        return await self.request("POST", path, json_body, **kw)

    async def put(self, path: str, json_body: Any = None, **kw: Any) -> Response:
        return await self.request("PUT", path, json_body, **kw)

    async def patch(self, path: str, json_body: Any = None, **kw: Any) -> Response:
        return await self.request("PATCH", path, json_body, **kw)

    async def delete(self, path: str, json_body: Any = None, **kw: Any) -> Response:
        return await self.request("DELETE", path, json_body, **kw)

    async def sse(
        self,
        method: str,
        path: str,
        json_body: Any = None,
        *,
        token: str | None = None,
        workspace: Any = None,
        params: dict[str, Any] | None = None,
        stop_after: int | None = None,
        timeout: float = 30,
    ) -> list[SseEvent]:
        """Read an SSE response to its end (or until stop_after events), parsed into events."""
        events: list[SseEvent] = []
        kwargs: dict[str, Any] = {"headers": self._headers(token, workspace, None), "params": params}
        if json_body is not None:
            kwargs["json"] = json_body
        async with self.session.request(
            method, self.base_url + path, timeout=aiohttp.ClientTimeout(total=timeout), **kwargs
        ) as r:
            assert r.status == 200, (r.status, await r.text())
            async for event in iter_sse(r):
                events.append(event)
                if stop_after is not None and len(events) >= stop_after:
                    break
        return events


async def iter_sse(response: aiohttp.ClientResponse):  # type: ignore[no-untyped-def]
    """Parse SSE frames from a streaming aiohttp response; each is checked against its operation's documented events."""
    if not sse_frames.loaded():
        async with aiohttp.ClientSession() as session:
            await answers.load(session, f"{response.url.scheme}://{response.url.host}:{response.url.port}")
    event, data, event_id, raw_id = "message", [], None, None
    async for raw_line in response.content:
        line = raw_line.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                text = "\n".join(data)
                try:
                    payload = json.loads(text)
                except ValueError:
                    payload = text
                sse_frames.check(response.method, response.url.path, event, payload, raw_id)
                yield SseEvent(event, payload, event_id)
            event, data, event_id, raw_id = "message", [], None, None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            event_id, raw_id = (int(value) if value.isdigit() else None), value
