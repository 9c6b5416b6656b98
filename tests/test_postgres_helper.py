"""The test PostgreSQL (tests/helpers/postgres.py): a private cluster, a fresh database per call."""
from __future__ import annotations

import shutil

import pytest

from tests.helpers import postgres

pytestmark = pytest.mark.skipif(
    shutil.which("initdb") is None and not postgres._debian_bins(), reason="PostgreSQL is not installed"
)


def test_fresh_databases_are_separate_and_empty() -> None:
    pg = postgres.cluster()
    first, second = pg.fresh_database(), pg.fresh_database()
    assert first != second and first.startswith(f"postgresql://{postgres.ROLE}@127.0.0.1:{pg.port}/")
    name = first.rsplit("/", 1)[1]
    pg.psql("CREATE TABLE kept (x integer); INSERT INTO kept VALUES (7)", database=name)
    assert pg.psql("SELECT x FROM kept", database=name).strip() == "7"
    other = second.rsplit("/", 1)[1]
    assert pg.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database=other).strip() == "0"
    pg.drop(first)
    pg.drop(second)
    listed = pg.psql("SELECT datname FROM pg_database").split()
    assert name not in listed and other not in listed


def test_selected_reads_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(postgres.ENV_VAR, "postgres")
    assert postgres.selected()
    monkeypatch.setenv(postgres.ENV_VAR, "sqlite")
    assert not postgres.selected()
