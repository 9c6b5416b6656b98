"""The server's log: one line per record on stderr, secrets redacted, info lines written in batches.

Every request writes an access line; writing each on its own costs a system call per request, more
than a cached list route's own work. Lines are formatted at once (so they keep their time and
order) and written together every `FLUSH_INTERVAL_S`, when `MAX_PENDING` are waiting, or at once
for a warning or worse. Exit (normal or SIGTERM) writes what is pending.
"""

from __future__ import annotations

import logging
import threading
from typing import TextIO

from platform_server.web import redact

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FLUSH_INTERVAL_S = 0.25
MAX_PENDING = 256


class BatchingStreamHandler(logging.StreamHandler):  # type: ignore[type-arg, unused-ignore]
    """A StreamHandler that writes formatted lines in batches (see the module docstring)."""

    def __init__(self, stream: TextIO | None = None, interval_s: float = FLUSH_INTERVAL_S) -> None:
        super().__init__(stream)
        self.interval_s = interval_s
        self._pending: list[str] = []
        self._stopping = threading.Event()
        threading.Thread(target=self._flush_periodically, name="log-writer", daemon=True).start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:  # noqa: BLE001 - logging's own contract: report, never raise
            self.handleError(record)
            return
        self._pending.append(line)  # under the handler's lock (Handler.handle holds it)
        if record.levelno >= logging.WARNING or len(self._pending) >= MAX_PENDING:
            self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:  # noqa: BLE001 - a closed or full stream must not break the server
            pass

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._write_pending()

    def close(self) -> None:
        self._stopping.set()
        self.flush()
        super().close()

    def _flush_periodically(self) -> None:
        while not self._stopping.wait(self.interval_s):
            self.flush()


def configure(level: str, again: bool = False) -> None:
    """Log to stderr at `level` through the batching handler, with secrets redacted. `again`: replace the
    handler (a forked worker: its writer thread stayed in the parent)."""
    skip_unshown_fields()
    handler = BatchingStreamHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    logging.basicConfig(level=level, handlers=[handler], force=again)
    redact.install()


def skip_unshown_fields() -> None:
    """Records leave out what FORMAT does not show (the optimisations logging's documentation lists):
    the caller's file and line, found by walking up the stack for every record (an access line per
    request), the thread and the process."""
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
