"""Start the OAuth service and its periodic refresh check."""
from __future__ import annotations

import os
from typing import Any

from tornado.ioloop import PeriodicCallback

from platform_server.features.oauth.service import OAuthService


async def start(platform: Any) -> None:
    service = OAuthService(platform.config)
    platform.services["oauth"] = service
    if os.path.isfile(service.vendor_a.path):
        await service.tick()
    else:
        await service.vendor_b.refresh_if_near_expiry()
    callback = PeriodicCallback(service.tick, platform.config.oauth_refresh_check_s * 1000, jitter=0.1)
    callback.start()
    platform.services["oauth_refresh"] = callback


async def stop(platform: Any) -> None:
    callback = platform.services.pop("oauth_refresh", None)
    if callback is not None:
        callback.stop()
    service = platform.services.pop("oauth", None)
    if service is not None:
        await service.close()
