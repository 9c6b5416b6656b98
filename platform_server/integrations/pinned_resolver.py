"""The resolver of a guarded connection: it answers only the addresses `net_guard.vet_url` accepted."""

from __future__ import annotations

import socket

from aiohttp.abc import AbstractResolver, ResolveResult

from platform_server.integrations.net_guard import VettedTarget, _normalize_host


class PinnedResolver(AbstractResolver):
    """Answers only the vetted addresses of one host; any other name fails to resolve."""

    def __init__(self, target: VettedTarget) -> None:
        self._target = target

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        if _normalize_host(host) != self._target.host:
            raise OSError(f"Host {host} was not vetted")
        return [
            ResolveResult(
                hostname=host,
                host=ip,
                port=port or self._target.port,
                family=fam,
                proto=0,
                flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
            )
            for ip, fam in self._target.addresses
        ]

    async def close(self) -> None:
        return None
