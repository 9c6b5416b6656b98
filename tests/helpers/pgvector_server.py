"""A PostgreSQL server with pgvector for the vector tests, from the `pgserver` wheel (PyPI: PostgreSQL 16 with
pgvector 0.6 built in; Debian 12 packages no pgvector and the wheel's vector.so is built for 16, not Debian's 15).
`./scripts/install` installs the wheel for the PostgreSQL suite (PLATFORM_TEST_DATABASE=postgres); elsewhere the
tests that need it skip, saying why. One server per test session, on a unix socket in a temp dir; a fresh
database per test (`fresh_url()`), dropped with `drop(url)`.
"""
from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import tempfile
import threading
from typing import Any

import pytest

from tests.helpers import postgres

_lock = threading.Lock()
_server: list[Any] = []
_names = iter(range(1, 1 << 30))


def skip_reason() -> str | None:
    """Why the pgvector tests cannot run here (None: they can). On the PostgreSQL suite (CI's second run) a
    missing wheel is a failure, not a skip: scripts/install puts it there."""
    if importlib.util.find_spec("pgserver") is not None:
        return None
    if postgres.selected():
        pytest.fail("the pgserver wheel is missing on the PostgreSQL suite (./scripts/install installs it)")
    return "pgvector needs the pgserver wheel (PostgreSQL 16 + pgvector), installed by ./scripts/install for the PostgreSQL suite"


def server() -> Any:
    with _lock:
        if not _server:
            import pgserver

            root = tempfile.mkdtemp(prefix="pgvector-")
            os.chmod(root, 0o755)  # as root pgserver runs the server as its own user: it must reach the folder
            atexit.register(shutil.rmtree, root, True)  # registered first, so it runs after pgserver's own stop
            running = pgserver.get_server(os.path.join(root, "data"), cleanup_mode="stop")
            _server.append(running)
        return _server[0]


def fresh_url() -> str:
    """A new empty database on the session's pgvector server."""
    running = server()
    name = f"v{os.getpid()}_{next(_names)}"
    running.psql(f'CREATE DATABASE "{name}";')
    return str(running.get_uri(name))  # postgresql://postgres:@/NAME?host=SOCKET_DIR


def drop(url: str) -> None:
    name = url.split("?")[0].rsplit("/", 1)[1]
    server().psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE);')
