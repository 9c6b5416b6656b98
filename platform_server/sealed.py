"""Secrets at rest: AES-GCM with the data dir's key (the skill-secret key scheme), as peewee fields.

A sealed column holds `enc:v1:` + base64(nonce + ciphertext); the additional data is `<table>.<column>`,
so a value cannot be moved to another column. Plain values written by older versions still read (the
areas' data migrations seal them once with `seal_column`).
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
from typing import Any, Callable

import peewee
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_FILE = "skills_secret_key"  # one key for every secret at rest (skill secrets were first)
PREFIX = "enc:v1:"
_state: dict[str, bytes] = {}


def load_key(data_dir: str) -> bytes:
    """The 32-byte encryption key in `<data_dir>/skills_secret_key`, generated on first use (mode 0600)."""
    path = os.path.join(data_dir, KEY_FILE)
    if os.path.exists(path):
        with open(path, "rb") as fh:
            stored = fh.read()
    else:
        stored = create_once(path, base64.b64encode(AESGCM.generate_key(bit_length=256)))
    key = base64.b64decode(stored.strip())
    if len(key) != 32:
        raise SystemExit(f"{path}: not a 32-byte key")
    return key


def create_once(path: str, content: bytes) -> bytes:
    """`content` written to `path` when nothing is there yet (mode 0600), else what is there.

    Several processes starting on one data dir (`serve --workers N`) each make the file: with create-then-
    write, one read it between another's create and write, found it empty and stopped ("not a 32-byte
    key"). Written whole under a temporary name, then linked to its name: the name appears with all of its
    content, and only the first link wins."""
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(temporary, path)
            return content
        except FileExistsError:  # another process was first: its content is the one
            with open(path, "rb") as fh:
                return fh.read()
    finally:
        os.unlink(temporary)


def configure(data_dir: str) -> None:
    """Load (or create) the key; called once at start before the database is migrated."""
    _state["key"] = load_key(data_dir)


def _key() -> bytes:
    key = _state.get("key")
    if key is None:
        raise RuntimeError("sealed.configure(data_dir) was not called")
    return key


def is_sealed(stored: str | None) -> bool:
    return isinstance(stored, str) and stored.startswith(PREFIX)


def seal(text: str, context: str) -> str:
    nonce = os.urandom(12)
    sealed = AESGCM(_key()).encrypt(nonce, text.encode("utf-8"), context.encode())
    return PREFIX + base64.b64encode(nonce + sealed).decode("ascii")


def unseal(stored: str, context: str) -> str:
    """The plaintext; a value that is not sealed (written before sealing) is returned as is."""
    if not is_sealed(stored):
        return stored
    raw = base64.b64decode(stored[len(PREFIX) :])
    try:
        return AESGCM(_key()).decrypt(raw[:12], raw[12:], context.encode()).decode("utf-8")
    except InvalidTag:
        raise RuntimeError(f"{context}: cannot decrypt (was the data dir's {KEY_FILE} replaced?)") from None


def _context(field: peewee.Field) -> str:
    return f"{field.model._meta.table_name}.{field.column_name}"


class SealedTextField(peewee.TextField):
    """A secret string, encrypted in the database ("" and None stay as they are)."""

    def db_value(self, value: Any) -> str | None:
        if value is None or value == "":
            return value
        return seal(str(value), _context(self))

    def python_value(self, value: str | None) -> str | None:
        return None if value is None else unseal(value, _context(self))


class SealedJSONField(peewee.TextField):
    """A JSON document holding secrets (headers, env, credentials), encrypted in the database."""

    def db_value(self, value: Any) -> str | None:
        if value is None:
            return None
        return seal(json.dumps(value, ensure_ascii=False, separators=(",", ":")), _context(self))

    def python_value(self, value: str | None) -> Any:
        return None if value is None else json.loads(unseal(value, _context(self)))


def seal_column(table: str, column: str) -> Callable[[peewee.Database], None]:
    """A data migration: encrypt the plain values an older version stored in `table.column`."""

    def step(db: peewee.Database) -> None:
        # the row's physical id: SQLite's rowid, PostgreSQL's ctid (stable here: each row changes once)
        row_id, cast_id = ("ctid", "::tid") if isinstance(db, peewee.PostgresqlDatabase) else ("rowid", "")
        rows = db.execute_sql(f'SELECT {row_id}, "{column}" FROM "{table}"').fetchall()
        for rowid, value in rows:
            if isinstance(value, str) and value != "" and not is_sealed(value):
                sealed_value = seal(value, f"{table}.{column}")
                db.execute_sql(f'UPDATE "{table}" SET "{column}" = ? WHERE {row_id} = ?{cast_id}', (sealed_value, rowid))

    return step
