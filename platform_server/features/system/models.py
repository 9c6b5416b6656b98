"""The system area's tables: the answers kept for `Idempotency-Key` retries.

The model lives in `platform_server.idempotency`, beside the base handler that uses it (web/ imports no
feature); its migration is registered here, with the other areas' migrations."""

from __future__ import annotations

from platform_server import idempotency
from platform_server.db import Migration

MIGRATIONS: list[Migration] = idempotency.MIGRATIONS
