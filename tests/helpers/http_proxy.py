"""A local HTTP forward proxy as RFC 9110/9112 describe one: a request in absolute form (`GET http://host/path
HTTP/1.1`) is sent on to its origin in origin form and the answer relayed back (streamed, so SSE passes);
`CONNECT host:port` opens a tunnel. A request in origin form (not meant for a proxy) answers 400.
It records the target of each request it forwarded (`seen`), one request per connection. `hosts` maps names only
the proxy knows to addresses (`{"probe.invalid": "127.0.0.1:8123"}`, its own routing table): a request to such a
name succeeds only through the proxy."""
from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit


class LocalHttpProxy:
    def __init__(self, hosts: dict[str, str] | None = None) -> None:
        self.seen: list[str] = []  # "METHOD absolute-url" or "CONNECT host:port"
        self.hosts = hosts or {}
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _address(self, host: str, port: int) -> tuple[str, int]:
        if host in self.hosts:
            name, _, known_port = self.hosts[host].rpartition(":")
            return name, int(known_port)
        return host, port

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            headers = [line for line in lines[1:] if line]
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                up_reader, up_writer = await asyncio.open_connection(*self._address(host, int(port)))
                self.seen.append(f"CONNECT {target}")
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
                return
            parts = urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            self.seen.append(f"{method} {target}")
            up_reader, up_writer = await asyncio.open_connection(*self._address(parts.hostname, parts.port or 80))
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            kept = [h for h in headers if h.split(":", 1)[0].strip().lower() not in ("proxy-connection", "connection", "proxy-authorization")]
            up_writer.write(f"{method} {path} {version}\r\n".encode("latin-1"))
            up_writer.write(("\r\n".join([*kept, "Connection: close"]) + "\r\n\r\n").encode("latin-1"))
            length = next((int(h.split(":", 1)[1]) for h in headers if h.lower().startswith("content-length:")), 0)
            if length:
                up_writer.write(await reader.readexactly(length))
            await up_writer.drain()
            await _pipe(up_reader, writer)  # the origin closes after its answer (Connection: close)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            with contextlib.suppress(OSError):
                writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.close()
