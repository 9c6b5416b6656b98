"""`Idempotency-Key` on POST routes: the first answer is kept (per user, method, path and key) and replayed
to a retry, so a client whose connection broke can send a create again without creating twice.

As in the IETF draft (draft-ietf-httpapi-idempotency-key-header): a key reused with a different body
answers 422, a key whose first request is still running answers 409. Kept: 2xx and 4xx answers (the
request's outcome is final); not kept: 5xx, 409 and 429 (nothing was done, the client may retry).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from dataclasses import dataclass

import peewee

from platform_server.db import BaseModel, DateTimeField, Migration, create_tables, database, utcnow

MAX_KEY_LENGTH = 255
PRUNE_EVERY_S = 60.0


class IdempotencyRecord(BaseModel):
    user_id = peewee.BigIntegerField()
    method = peewee.CharField()
    path = peewee.CharField()
    key = peewee.CharField()
    request_hash = peewee.CharField()
    status = peewee.IntegerField(null=True)  # None: the first request is still running
    body = peewee.TextField(null=True)
    create_time = DateTimeField(default=utcnow, index=True)

    class Meta:
        table_name = "idempotency_record"
        indexes = ((("user_id", "method", "path", "key"), True),)


MIGRATIONS: list[Migration] = [("system_0001_idempotency", create_tables(IdempotencyRecord))]


@dataclass(frozen=True)
class Begun:
    """What a request with a key does: run (`record_id`), replay (`status`, `body`), or is refused (`error`)."""

    record_id: int | None = None
    status: int | None = None
    body: str | None = None
    error: tuple[int, str] | None = None


def valid_key(key: str) -> bool:
    return 0 < len(key) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable()


def request_hash(body: bytes, workspace: str) -> str:
    return hashlib.sha256(workspace.encode() + b"\0" + body).hexdigest()


_last_prune = [0.0]


def begin(user_id: int, method: str, path: str, key: str, digest: str, ttl_s: float, running_s: float) -> Begun:
    """Claim the key for this request, or say how to answer a retry (one short transaction)."""
    now = utcnow()
    with database.atomic():
        if time.monotonic() - _last_prune[0] > PRUNE_EVERY_S:
            _last_prune[0] = time.monotonic()
            IdempotencyRecord.delete().where(IdempotencyRecord.create_time < now - dt.timedelta(seconds=ttl_s)).execute()
        row = IdempotencyRecord.get_or_none(
            (IdempotencyRecord.user_id == user_id)
            & (IdempotencyRecord.method == method)
            & (IdempotencyRecord.path == path)
            & (IdempotencyRecord.key == key)
        )
        if row is not None:
            expired = row.create_time < now - dt.timedelta(seconds=ttl_s)
            abandoned = row.status is None and row.create_time < now - dt.timedelta(seconds=running_s)
            if expired or abandoned:
                row.delete_instance()
            elif row.status is None:
                return Begun(error=(409, "A request with this Idempotency-Key is still being processed; retry later"))
            elif row.request_hash != digest:
                return Begun(error=(422, "This Idempotency-Key was used with a different request body"))
            else:
                return Begun(status=row.status, body=row.body)
        record_id = IdempotencyRecord.insert(user_id=user_id, method=method, path=path, key=key, request_hash=digest, create_time=now).execute()
    return Begun(record_id=int(record_id))


def finish(record_id: int, status: int, body: str) -> None:
    """Keep the answer for retries (2xx, 4xx), or free the key (5xx, 409, 429: nothing was done)."""
    with database.atomic():
        if status >= 500 or status in (409, 429):
            IdempotencyRecord.delete().where(IdempotencyRecord.id == record_id).execute()
        else:
            IdempotencyRecord.update(status=status, body=body).where(IdempotencyRecord.id == record_id).execute()
