"""Named ports: what a second deployment (PostgreSQL, Redis, several processes: issue 31) replaces.

Each module holds one typed Protocol, today's one-process implementation as its default, and
`use()`/`current()`: `app.make_app` installs the implementations at startup (from the config), areas
and loops ask `current()` when they act. Areas import these modules, never `db.py`'s SQLite specifics
(`WATCHED_TABLES`, `watch_table`, apsw) nor the event hub's classes (tests/test_layout.py checks it).

- database: open/close/flush the store, classify storage faults, snapshot (SQLite over apsw, WAL)
- changes: per-table change versions that invalidate caches (SQLite's hooks today)
- events: streams with replay from an event id, and keyed topics (the in-process hub; with `redis_url` a
  turn's stream, its owner's lease and asks to its process also go through Redis: redis_events.py)
- leader: whether this process runs the shared background work (always, today)
- files: the data directory, paths resolved inside it

`install(config)` chooses the implementations that depend on the settings; the leader lock keeps its
module default until the PostgreSQL database starts its own (ports/database.py).
"""

from __future__ import annotations

from platform_server.config import Config
from platform_server.ports import changes, database, events, files
from platform_server.ports.redis_events import RedisEventBus


def install(config: Config) -> None:
    """Choose this process's database, change feed and file store from the settings (one choice today:
    the SQLite file `db_path`, its hooks, the folder `data_dir`)."""
    files.use(files.LocalFileStore(config.data_dir))
    # Redis: a turn's events, its owner's lease and the asks to it cross processes (several processes behind one port)
    if config.redis_url:
        events.use(RedisEventBus(config.redis_url, config.replay_retention_s))
    elif isinstance(events.current(), RedisEventBus):  # a server before this one in the process used Redis
        events.use(events.LocalEventBus())  # otherwise the installed bus stays (the default, or one a test put in)
    if config.database_url:
        database.use(database.PostgresDatabase(config.database_url))
        changes.use(changes.PostgresFeed())
    else:
        database.use(database.SqliteDatabase(config.db_path))
        changes.use(changes.SqliteHookFeed())  # the SQLite store's own hooks invalidate this process's caches
