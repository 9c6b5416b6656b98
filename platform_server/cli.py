"""Command line: `serve` (default), `migrate`, `create-admin`, `backup FILE`, `restore FILE`, `tls`,
`migrate-to-postgres --from FILE --to URL`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import getpass
import logging
import os
import signal
import ssl
import sys
from typing import TYPE_CHECKING

from platform_server import db, logs, ports, sealed, tls, workers
from platform_server.app import collect_migrations, drain, listen, make_app, start_features, stop_features, warm_up
from platform_server.config import Config, load_config, replace
from platform_server.db import run_migrations
from platform_server.features.auth import service as auth
from platform_server.features.setup import service as setup
from platform_server.lazy import lazy_import
from platform_server.ports import database as database_port

if TYPE_CHECKING:
    from platform_server import backup, migrate_pg, restore
else:
    backup = lazy_import("platform_server.backup")  # only the backup and restore commands need them
    restore = lazy_import("platform_server.restore")
    migrate_pg = lazy_import("platform_server.migrate_pg")

SLOW_CALLBACK_S = 0.05  # asyncio debug mode: a callback this long is logged as blocking the loop
# Young-generation collection after this many new container objects (Python's default: 700). Under
# 200 concurrent chats the default collected ~70 times a second, each pass traversing the objects of
# every turn in flight, and promoted them into older generations whose collections held the loop for
# up to 29 ms: 7% of the server's time. At 10,000, a handful of collections in the same run, 4 ms in all.
GC_YOUNG_THRESHOLD = 10_000


COMMANDS = ("serve", "migrate", "create-admin", "backup", "restore", "tls", "migrate-to-postgres")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="platform-server", description="Self-hosted agent platform server")
    p.add_argument("command", nargs="?", default="serve", choices=COMMANDS)
    p.add_argument("file", nargs="?", help="backup / restore: the archive (.tar.zst zstandard, .tar none, .tar.gz gzip)")
    p.add_argument("--force", action="store_true", help="restore: replace the data dir's database")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--workers", type=int, help="serve: server processes on the port (more than 1: PostgreSQL and Redis)")
    p.add_argument("--data-dir", dest="data_dir")
    p.add_argument("--config", dest="config_file", help="TOML settings file")
    p.add_argument("--username", default="admin", help="create-admin: the admin's username")
    p.add_argument("--names", default="", help="tls: more host names or addresses for the certificate, comma-separated")
    p.add_argument("--from", dest="source", help="migrate-to-postgres: the SQLite file (default: the data dir's platform.db)")
    p.add_argument("--to", dest="target", help="migrate-to-postgres: postgresql://... of a new, empty database")
    return p


def _config(args: argparse.Namespace) -> Config:
    overrides = {"host": args.host, "port": args.port, "data_dir": args.data_dir, "workers": args.workers}
    return load_config(args.config_file, overrides=overrides)


async def serve(config: Config, reuse_port: bool = False) -> None:
    """Run the server until SIGINT/SIGTERM, then stop gracefully.

    Stop accepting connections, let running chat turns finish (up to `shutdown_grace_s`; the rest are
    stopped with their partial answers kept), stop every area, checkpoint the WAL, return (exit 0).
    With PYTHONASYNCIODEBUG=1, every callback that holds the IOLoop 50 ms or more is logged.
    """
    if asyncio.get_running_loop().get_debug():
        asyncio.get_running_loop().slow_callback_duration = SLOW_CALLBACK_S
    app, platform = make_app(config)
    await start_features(platform)
    server = listen(app, config, reuse_port=reuse_port)
    scheme = "https" if config.tls_cert_file else "http"
    logging.getLogger("platform_server").info("listening on %s://%s:%s (pid %d)", scheme, config.host, config.port, os.getpid())
    gc.freeze()  # what the start built lives as long as the process: later collections skip it
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    gc.enable()  # (off while starting under `python -m platform_server`: see __main__.py)
    warming = asyncio.ensure_future(warm_up(platform))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log = logging.getLogger("platform_server")
    server.stop()
    await warming  # a worker thread cannot be interrupted; it is short
    left = await drain(platform, config.shutdown_grace_s)
    if left:
        log.warning("stopping %d turn(s) that outlived the grace period (partial answers are kept)", left)
    await stop_features(platform)
    log.info("stopped")


def _worker(config: Config) -> None:
    """One of `--workers N`: a whole server on the shared port."""
    logs.configure(config.log_level, again=True)
    asyncio.run(serve(config, reuse_port=True))


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    config = _config(args)
    logs.configure(config.log_level)
    if args.command == "serve":
        try:
            tls.server_context(config)  # a certificate that cannot load stops here, said plainly
        except (ValueError, OSError, ssl.SSLError) as exc:
            sys.exit(f"serve: HTTPS settings refused: {exc}")
        try:
            workers.check(config, config.workers)
        except workers.WorkersRefused as exc:
            sys.exit(f"serve refused: {exc}")
        if config.workers > 1:  # forked before any loop or thread exists: each worker starts its own
            sys.exit(workers.supervise(config.workers, functools.partial(_worker, config)))
        asyncio.run(serve(config))
        return
    gc.enable()  # the other commands collect as usual
    if args.command in ("backup", "restore"):
        _backup_or_restore(args, config)
    elif args.command == "tls":
        _make_certificate(args, config)
    elif args.command == "migrate-to-postgres":
        _migrate_to_postgres(args, config)
    elif args.command == "migrate":
        make_app(config)
        print("migrations applied")
    elif args.command == "create-admin":
        make_app(config)
        password = getpass.getpass("Admin password (8+ characters): ")
        if len(password) < 8:
            sys.exit("password too short")
        setup.create_admin(args.username, auth.hash_password(password, config.password_hash_rounds), None, None)
        print(f"admin {args.username!r} created")


def _backup_or_restore(args: argparse.Namespace, config: Config) -> None:
    """Backup runs beside a live server; restore fills a new data dir (migrations run at the next start)."""

    if not args.file:
        sys.exit(f"{args.command}: the archive file is required")
    try:
        if args.command == "backup":
            manifest = backup.backup(config, args.file)
            print(f"backup written to {args.file}: database ({len(manifest['migrations'])} migrations) and {len(manifest['files'])} files")
        else:
            known = [name for name, _ in collect_migrations()]
            manifest = restore.restore(config, args.file, known, force=args.force)
            print(f"restored {args.file} (from version {manifest.get('version')}, {manifest.get('createdAt')}) into {config.data_dir}")
    except backup.BackupError as exc:
        sys.exit(f"{args.command} refused: {exc}")
    except OSError as exc:  # a full disk, a folder that cannot be written: said plainly, without a traceback
        sys.exit(f"{args.command} failed: {exc.strerror or exc} ({exc.filename or args.file})")


def _migrate_to_postgres(args: argparse.Namespace, config: Config) -> None:
    """The schema by this version's migrations into the new database, then every table copied and checked
    (migrate_pg.py). The data dir stays the install's: its keys unseal the copied secrets."""
    if not args.target:
        sys.exit("migrate-to-postgres: --to postgresql://... (a new, empty database) is required")
    source = args.source or config.db_path
    if not os.path.isfile(source):
        sys.exit(f"migrate-to-postgres: no SQLite database at {source}")
    migrated = False
    try:
        ports.install(replace(config, database_url=args.target))  # refuses a URL that is not postgresql://
        store = database_port.current()
        store.open()
        target = db.database.obj
        migrate_pg.check_target(target)
        src = migrate_pg.open_source(source, [name for name, _ in collect_migrations()])
        sealed.configure(config.data_dir)
        with contextlib.closing(src), store.migration_lock():
            migrated = True
            run_migrations(collect_migrations())
            copied = migrate_pg.copy_sqlite_to_postgres(src, target, print)
    except Exception as exc:
        if migrated:  # the schema this command made goes again: a second try starts from an empty database
            migrate_pg.drop_tables(db.database.obj)
        if not isinstance(exc, (ValueError, migrate_pg.MigrationRefused)):
            raise
        sys.exit(f"migrate-to-postgres refused: {exc}")
    finally:
        database_port.current().close()
    rows = sum(t.rows for t in copied)
    print(f"copied {len(copied)} tables ({rows} rows) from {source}; set database_url to the new database and start the server")


def _make_certificate(args: argparse.Namespace, config: Config) -> None:
    issued = tls.issue(config, args.names.split(","))
    print(("made a new local CA: " if issued.ca_created else "kept the local CA: ") + issued.ca_cert)
    print(f"certificate for {', '.join(issued.names)}")
    print(f"  valid until {issued.not_after:%Y-%m-%d} (run `platform-server tls` again to renew)")
    print("Serve HTTPS with these two settings (config file, or PLATFORM_TLS_CERT_FILE / PLATFORM_TLS_KEY_FILE):")
    print(f'  tls_cert_file = "{os.path.abspath(issued.cert)}"')
    print(f'  tls_key_file = "{os.path.abspath(issued.key)}"')
    print(tls.TRUST_STEPS.format(port=config.port))


if __name__ == "__main__":
    main()
