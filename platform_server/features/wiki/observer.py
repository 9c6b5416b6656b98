"""The watchdog side of a source-folder watcher (imported when the first folder is watched, not at start)."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from watchdog.events import (
    EVENT_TYPE_CLOSED_NO_WRITE,
    EVENT_TYPE_OPENED,
    DirModifiedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from platform_server.features.wiki import source

if TYPE_CHECKING:
    from platform_server.features.wiki.watcher import SourceWatcher

log = logging.getLogger(__name__)

QUIET_EVENTS = (EVENT_TYPE_OPENED, EVENT_TYPE_CLOSED_NO_WRITE)  # reading a file (our own scans) is no change


class _Events(FileSystemEventHandler):
    """Runs in the observer thread: note the relative path, wake the IOLoop once per burst."""

    def __init__(self, watcher: SourceWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in QUIET_EVENTS or isinstance(event, DirModifiedEvent):
            return
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        found = [self.watcher.relative(os.fsdecode(p)) for p in paths if p]
        rels = [r for r in found if r is not None and not source.ignored(tuple(r.split("/")))]
        if rels:
            self.watcher.note(rels)


def start(watcher: SourceWatcher, directory: str, poll_s: float) -> BaseObserver:
    """A started observer of `directory` reporting to `watcher` (blocking: it walks the tree to add its watches)."""
    handler = _Events(watcher)
    try:
        observer: BaseObserver = Observer()
        observer.schedule(handler, directory, recursive=True)
        observer.start()
    except OSError:  # e.g. out of inotify instances: poll instead
        log.warning("wiki watcher of KB %s falls back to polling", watcher.kb_id, exc_info=True)
        observer = PollingObserver(timeout=max(1.0, poll_s))
        observer.schedule(handler, directory, recursive=True)
        observer.start()
    return observer
