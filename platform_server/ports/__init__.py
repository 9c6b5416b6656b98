"""Named ports: what a second deployment (PostgreSQL, Redis, several processes: issue 31) replaces.

Each module holds one typed Protocol, today's one-process implementation as its default, and
`use()`/`current()`: `app.make_app` installs the implementations at startup (from the config), areas
and loops ask `current()` when they act. Areas import these modules, never `db.py`'s SQLite specifics
(`WATCHED_TABLES`, `watch_table`, apsw) nor the event hub's classes (tests/test_layout.py checks it).

- database: open/close/flush the store, classify storage faults, snapshot (SQLite over apsw, WAL)
- changes: per-table change versions that invalidate caches (SQLite's hooks today)
- events: streams with replay from an event id, and keyed topics (the in-process hub today)
- leader: whether this process runs the shared background work (always, today)
- files: the data directory, paths resolved inside it
"""
