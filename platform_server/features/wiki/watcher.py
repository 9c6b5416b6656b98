"""Source-folder watchers: a watchdog observer per linked KB, debounced scans, folder health checks.

The observer runs in its own thread and only notes changed paths; one callback per burst hops to
the IOLoop, which waits for `wiki_watch_debounce_s` of quiet (at most ten times that) and then runs
the same scan as `POST .../scan` in an executor. A periodic check notices the folder disappearing
(state `error`) and coming back (observer restarted, state `watching`, a catch-up scan).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tornado.ioloop import IOLoop

from platform_server.blocking import run_blocking
from platform_server.db import iso, utcnow
from platform_server.features.settings import service as settings
from platform_server.features.wiki import raw as raw_service
from platform_server.features.wiki import source
from platform_server.features.wiki.models import KnowledgeBase
from platform_server.lazy import lazy_import
from platform_server.loops import Loop
from platform_server.ports import leader
from platform_server.web.errors import BadRequest

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

    from platform_server.features.wiki import observer as wiki_observer
else:
    wiki_observer = lazy_import("platform_server.features.wiki.observer")

log = logging.getLogger(__name__)

READ_BATCH = 50  # files read per executor call during a scan


class SourceWatcher:
    """The watcher of one KB's linked folder."""

    def __init__(self, owner: Watchers, kb_id: int, directory: str, watch: bool) -> None:
        self.owner = owner
        self.kb_id = kb_id
        self.directory = directory
        self.watch = watch
        self.state = "watching" if watch else "paused"
        self.error: str | None = None
        self.last_scan: dict[str, Any] | None = None
        self.last_scan_time: Any = None
        self.scanning = False
        self.observer: BaseObserver | None = None
        self.loop = IOLoop.current()
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._woken = False
        self._first_event: float | None = None
        self._timer: object | None = None
        self.deferred: str | None = None  # a scan held back while the `wiki` flag was off (its reason)

    # ---- observer thread side -------------------------------------------------------------

    def relative(self, path: str) -> str | None:
        try:
            rel = Path(path).relative_to(self.directory).as_posix()
        except ValueError:
            return None
        return None if rel in (".", "") else rel

    def note(self, rels: list[str]) -> None:
        with self._lock:
            self._pending.update(rels)
            wake, self._woken = not self._woken, True
        if wake:
            self.loop.add_callback(self._on_events)

    # ---- IOLoop side ----------------------------------------------------------------------

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def _on_events(self) -> None:
        with self._lock:
            self._woken = False
        now = self.loop.time()
        if self._first_event is None:
            self._first_event = now
        debounce = self.owner.debounce_s
        due = min(now + debounce, self._first_event + 10 * debounce)
        if self._timer is not None:
            self.loop.remove_timeout(self._timer)
        self._timer = self.loop.call_at(due, self._due)

    def _due(self) -> None:
        self._timer = None
        self._first_event = None
        self.owner.scan_soon(self.kb_id, "events")

    def take_pending(self) -> None:
        with self._lock:
            self._pending.clear()

    def start_observer(self) -> None:
        """Start watching the folder (blocking: the observer walks the tree to add its watches)."""
        self.observer = wiki_observer.start(self, self.directory, self.owner.check_s)

    def stop_observer(self) -> None:
        """Stop and join the observer thread (blocking)."""
        observer, self.observer = self.observer, None
        if observer is not None:
            try:
                observer.stop()
                observer.join(timeout=5)
            except Exception:  # noqa: BLE001 - a broken observer is dropped either way
                log.debug("stopping the watcher of KB %s failed", self.kb_id, exc_info=True)

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self.loop.remove_timeout(self._timer)
            self._timer = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kbId": str(self.kb_id),
            "path": self.directory,
            "state": self.state,
            "error": self.error,
            "watching": self.state == "watching",
            "scanning": self.scanning,
            "pendingEvents": self.pending,
            "lastScanTime": iso(self.last_scan_time),
            "lastScan": self.last_scan,
        }


class Health(Loop):
    """Checks every watcher's folder: missing -> `error`; back again -> `watching` and a scan."""

    def __init__(self, owner: Watchers) -> None:
        super().__init__()
        self.owner = owner
        self.interval_s = owner.check_s

    async def tick(self) -> None:

        if not settings.is_enabled("wiki"):  # the `wiki` feature flag is off: no folder checks or scans
            return
        for watcher in list(self.owner.watchers.values()):
            if watcher.deferred and self.owner.watchers.get(watcher.kb_id) is watcher:
                reason, watcher.deferred = watcher.deferred, None
                self.owner.scan_soon(watcher.kb_id, reason)  # the flag is back on: catch up
            await self.owner.check(watcher)


class Watchers:
    """Every linked KB's watcher; owned by the wiki engine."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.config = engine.config
        self.debounce_s = max(0.01, float(self.config.wiki_watch_debounce_s))
        self.check_s = max(0.05, float(self.config.wiki_watch_check_s))
        self.watchers: dict[int, SourceWatcher] = {}
        self.locks: dict[int, asyncio.Lock] = {}
        self.health = Health(self)

    async def start(self) -> None:
        """A watcher for every KB with a linked folder (each scans once to catch up with the downtime)."""
        for kb in KnowledgeBase.select():
            directory = source.linked_directory(kb)
            if directory and not source.still_allowed(self.config, kb, directory):
                log.warning("KB %s: its folder %s is outside its workspace's wiki_source_roots: not watched", kb.id, directory)
            elif directory:
                await self.link(kb.id, directory, source.watching_enabled(kb))
        self.health.start()

    async def stop(self) -> None:
        self.health.stop()
        for kb_id in list(self.watchers):
            await self.unlink(kb_id)

    async def link(self, kb_id: int, directory: str, watch: bool) -> SourceWatcher:
        """(Re)create the KB's watcher and scan the folder once in the background."""
        await self.unlink(kb_id)
        watcher = SourceWatcher(self, kb_id, directory, watch)
        if watch:
            if await run_blocking(os.path.isdir, directory):
                try:
                    await run_blocking(watcher.start_observer)
                except OSError as exc:
                    watcher.state, watcher.error = "error", f"Cannot watch the folder: {exc.strerror or exc}"
            else:
                watcher.state, watcher.error = "error", f"The folder is missing: {directory}"
        await self.unlink(kb_id)  # a link that raced this one
        self.watchers[kb_id] = watcher  # only now: the health check must not see it half started
        if watcher.state != "error":
            self.scan_soon(kb_id, "link")
        return watcher

    async def unlink(self, kb_id: int) -> None:
        watcher = self.watchers.pop(kb_id, None)
        if watcher is not None:
            watcher.cancel_timer()
            await run_blocking(watcher.stop_observer)

    def get(self, kb_id: int) -> SourceWatcher | None:
        return self.watchers.get(kb_id)

    async def check(self, watcher: SourceWatcher) -> None:
        if not watcher.watch or self.watchers.get(watcher.kb_id) is not watcher:
            return
        present = await run_blocking(os.path.isdir, watcher.directory)  # a stat can hang on a network mount
        alive = watcher.observer is not None and watcher.observer.is_alive()
        if watcher.state == "watching" and not (present and alive):
            await run_blocking(watcher.stop_observer)
            watcher.state = "error"
            watcher.error = f"The folder is missing: {watcher.directory}" if not present else "The folder watcher stopped"
        elif watcher.state == "error" and present:
            try:
                await run_blocking(watcher.start_observer)
            except OSError as exc:
                watcher.error = f"Cannot watch the folder: {exc.strerror or exc}"
                return
            watcher.state, watcher.error = "watching", None
            self.scan_soon(watcher.kb_id, "folder back")

    async def _sync(self, kb_id: int, directory: str) -> source.ScanResult:
        """Files are read in an executor in batches; rows are written here in short transactions."""
        result = source.ScanResult(time=utcnow())
        files = await run_blocking(source.list_files, directory, result)
        kb = KnowledgeBase.get_or_none(KnowledgeBase.id == kb_id)
        if kb is None:
            return result
        known = source.known_materials(kb_id)
        stale: list[str] = []
        for i in range(0, len(files), READ_BATCH):
            changes = await run_blocking(source.read_files, self.config, kb_id, files[i : i + READ_BATCH], known, result)
            for change in changes:
                old = source.apply(kb, change, result)
                if old:
                    stale.append(old)
                await asyncio.sleep(0)  # let requests in between the writes
        if not await run_blocking(os.path.isdir, directory):  # gone during the scan: its files are not deleted
            raise source.SourceMissing(f"The folder is missing: {directory}")
        source.mark_removed(known, {rel for rel, _, _ in files}, result)
        if stale:
            await run_blocking(self._discard, kb_id, stale)
        return result

    def _discard(self, kb_id: int, names: list[str]) -> None:
        for name in names:
            raw_service.discard(self.config, kb_id, name)

    def scan_soon(self, kb_id: int, reason: str) -> None:
        """Scan in the background (a failure is kept in the watcher's state, not raised).

        While the `wiki` flag is off, scans the watcher starts itself (file events, link, folder back)
        are held back, as on a process that is not the leader; the health check runs one when the flag is
        on again (it runs on the leader only).
        """

        watcher = self.watchers.get(kb_id)
        if reason != "request" and watcher is not None and not (settings.is_enabled("wiki") and leader.is_leader()):
            # the flag is off, or another process leads (its own watcher scans): held for the health check
            watcher.deferred = watcher.deferred or reason
            return

        async def run() -> None:
            try:
                await self.scan(kb_id, reason)
            except BadRequest:
                pass  # the watcher's state says why
            except Exception as exc:  # noqa: BLE001 - a failed scan must not stop the watcher
                log.warning("wiki scan of KB %s failed", kb_id, exc_info=True)
                watcher = self.watchers.get(kb_id)
                if watcher is not None:
                    watcher.last_scan = {"reason": reason, "error": f"{type(exc).__name__}: {exc}"[:500]}
                    watcher.last_scan_time = utcnow()

        self.engine.spawn(run())

    async def scan(self, kb_id: int, reason: str) -> dict[str, Any]:
        """One scan of the KB's folder, never two at once; queues what needs processing."""
        watcher = self.watchers.get(kb_id)
        if watcher is None:
            raise BadRequest("No source directory is linked to this knowledge base")
        lock = self.locks.setdefault(kb_id, asyncio.Lock())
        async with lock:
            watcher.take_pending()
            watcher.scanning = True
            try:
                result = await self._sync(kb_id, watcher.directory)
            except source.SourceMissing as exc:
                if watcher.watch:
                    watcher.state, watcher.error = "error", str(exc)
                raise BadRequest(str(exc))
            finally:
                watcher.scanning = False
        for raw_id in result.cancel:
            self.engine.cancel(raw_id)
        for raw_id in result.queue:
            self.engine.enqueue(raw_id)
        watcher.last_scan, watcher.last_scan_time = {**result.to_dict(), "reason": reason}, utcnow()
        if result.cancel or result.removed:
            self.engine.emit(kb_id, {"type": "scan", "kbId": str(kb_id), **result.to_dict()})
        return watcher.last_scan
