"""Start the OAuth service and its periodic refresh check."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from tornado.ioloop import PeriodicCallback

from platform_server.features.oauth import OAUTH, OAUTH_REFRESH
from platform_server.features.oauth.service import OAuthService
from platform_server.ports import leader

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    service = OAuthService(platform.config)
    platform.set_runtime(OAUTH, service)
    if os.path.isfile(service.vendor_a.path):
        await service.tick()
    else:
        await service.vendor_b.refresh_if_near_expiry()

    async def refresh() -> None:
        if leader.is_leader():  # the token files are shared: one process refreshes them
            await service.tick()

    callback = PeriodicCallback(refresh, platform.config.oauth_refresh_check_s * 1000, jitter=0.1)
    callback.start()
    platform.set_runtime(OAUTH_REFRESH, callback)


async def stop(platform: Platform) -> None:
    platform.runtime(OAUTH_REFRESH).stop()
    await platform.runtime(OAUTH).close()
