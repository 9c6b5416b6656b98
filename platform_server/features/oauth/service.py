"""The OAuth runtime object: both vendors and the periodic near-expiry refresh."""

from __future__ import annotations

import logging
import time
from typing import Callable

from platform_server.config import Config
from platform_server.features.oauth.vendor_a import VendorA
from platform_server.features.oauth.vendor_b import VendorB

log = logging.getLogger(__name__)


class OAuthService:
    """One per process (platform.runtime(OAUTH)); tests call tick() instead of waiting."""

    def __init__(self, config: Config, clock: Callable[[], float] = time.time) -> None:
        self.vendor_a = VendorA(config, clock)
        self.vendor_b = VendorB(config, clock)

    async def tick(self) -> None:
        """Refresh credentials that expire within the margin and keep the providers' keys current."""
        try:
            await self.vendor_a.sync(None)
        except Exception:  # noqa: BLE001 - one vendor's failure must not stop the other
            log.exception("vendor_a refresh check failed")
        try:
            await self.vendor_b.refresh_if_near_expiry()
        except Exception:  # noqa: BLE001
            log.exception("vendor_b refresh check failed")

    async def close(self) -> None:
        await self.vendor_b.close()
