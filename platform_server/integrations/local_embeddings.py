"""The local embedding model in a worker process of its own.

Loaded in the server, the model held the GIL for ~3 s on the first wiki material after each start (every stream
froze) and kept ~700 MB of tokenizer tables in the server for good. In a child process the server only writes
texts to a pipe and reads vectors back: a thread waits on the pipe without the GIL, the model's memory is the
child's, and a child that dies is started again on the next call.

This module is also the child's program (`python -m platform_server.integrations.local_embeddings`), so it imports
nothing of the server at module level: the child stays small.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import gc
import json
import logging
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import model2vec
else:
    model2vec = lazy_import("model2vec")

log = logging.getLogger(__name__)

# The longest text the model reads, in tokens (model2vec's default; the shipped encoder's too).
MAX_TOKENS = 512
# A call's answer: the vectors, and the tokens the model read (None when its reader cannot tell).
Embedded = tuple[list[list[float]], int | None]


class EmbeddingWorkerError(RuntimeError):
    """The worker could not embed (it failed to load the model, or it died)."""


class EmbeddingWorkerStopped(EmbeddingWorkerError):
    """The child process ended before it answered."""


# ---- the server's side ----------------------------------------------------------


class EmbeddingWorker:
    """One child process that holds the model; one request at a time over its stdin/stdout."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        # Calls queue for one daemon thread of their own, not in the default executor: a wiki import of many
        # materials must not take every thread that bcrypt, file reads and SQLite work need, and a call still
        # waiting on the child never holds up the server's exit (the child ends when the pipe closes).
        self._jobs: queue.SimpleQueue[tuple[concurrent.futures.Future[Embedded], str, list[str]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def _child(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            # The package's own folder first: the child imports this module wherever the server was started from.
            root = str(Path(__file__).resolve().parents[2])
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
            self._proc = subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                close_fds=True,
                # Not a session of its own: a signal to the server's process group reaches the child too, and
                # the child ends by itself when the server's end of the pipe closes.
            )
        return self._proc

    def call(self, path: str, texts: list[str]) -> Embedded:
        """Blocking: the vectors of texts with the model at path (an empty list only loads the model), and
        the tokens the model read when it can tell.

        A child found dead (killed, out of memory) is replaced and the request sent once more."""
        try:
            return self._call_once(path, texts)
        except EmbeddingWorkerStopped:
            return self._call_once(path, texts)

    def _call_once(self, path: str, texts: list[str]) -> Embedded:
        with self._lock:
            proc = self._child()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps({"path": path, "texts": texts}).encode() + b"\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
            except OSError as exc:
                line = b""
                log.warning("the embedding worker's pipe failed: %s", exc)
            if not line:
                self._stop_child()
                raise EmbeddingWorkerStopped("the embedding worker stopped (it is started again on the next call)")
        answer = json.loads(line)
        if "error" in answer:
            raise EmbeddingWorkerError(str(answer["error"]))
        tokens = answer.get("tokens")
        return list(answer["vectors"]), int(tokens) if isinstance(tokens, int) else None

    def submit(self, path: str, texts: list[str]) -> concurrent.futures.Future[Embedded]:
        """Queue a call; the future holds the vectors and the token count."""
        fut: concurrent.futures.Future[Embedded] = concurrent.futures.Future()
        with self._thread_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve_jobs, name="embedding-worker", daemon=True)
                self._thread.start()
        self._jobs.put((fut, path, texts))
        return fut

    def _serve_jobs(self) -> None:
        while True:
            fut, path, texts = self._jobs.get()
            if not fut.set_running_or_notify_cancel():
                continue  # its caller went away while it waited
            try:
                fut.set_result(self.call(path, texts))
            except BaseException as exc:  # noqa: BLE001 - every failure goes to the caller
                fut.set_exception(exc)

    async def encode(self, path: str, texts: list[str]) -> list[list[float]]:
        """The vectors of texts, computed in the child while the loop keeps serving."""
        return (await self.encode_counted(path, texts))[0]

    async def encode_counted(self, path: str, texts: list[str]) -> Embedded:
        """The vectors of texts and the tokens the model read (None when its reader cannot tell)."""
        return await asyncio.wrap_future(self.submit(path, texts))

    def preload(self, path: str) -> None:
        """Start the child and load the model in the background (returns at once)."""

        def done(fut: concurrent.futures.Future[Embedded]) -> None:
            if fut.exception() is not None:
                log.warning("the local embedding model did not load: %s", fut.exception())

        self.submit(path, []).add_done_callback(done)

    def _stop_child(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(5)

    def close(self) -> None:
        """End the child (the next call starts a new one)."""
        with self._lock:
            self._stop_child()


_worker: EmbeddingWorker | None = None
_worker_lock = threading.Lock()


def worker() -> EmbeddingWorker:
    """The process's one embedding worker: servers in one process (the tests) share the child and its model."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = EmbeddingWorker()
        return _worker


# ---- the child's side -----------------------------------------------------------

Encoder = Callable[[list[str]], Embedded]


def load_encoder(path: str) -> Encoder:
    """The encoder of the model2vec folder at path.

    A Unigram model (the shipped one) is read by static_embeddings: model2vec's vectors in ~75 MB instead of
    ~700 MB. Any other model2vec folder is read by model2vec itself.
    """
    from platform_server.integrations import static_embeddings

    try:
        lean = static_embeddings.StaticModel(path, MAX_TOKENS)
    except static_embeddings.Unsupported as exc:
        log.info("embedding model %s is read by model2vec: %s", path, exc)
    else:
        # The lean reader counts the tokens it read (usage records count them, not a length estimate).
        return lambda texts: (lean.encode(texts).tolist(), lean.tokens_read) if texts else ([], 0)
    try:
        model = model2vec.StaticModel.from_pretrained(path)
    except ImportError:
        raise EmbeddingWorkerError("local embedding runtime not installed (model2vec is missing)") from None
    return lambda texts: (model.encode(texts).tolist(), None) if texts else ([], 0)


def _trim() -> None:
    """Hand the load's freed heap (the parsed tokenizer.json) back to the system: ~8 MB less resident."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: the memory is reused by the process instead


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """Answer one JSON line per request line until the server closes the pipe."""
    encoders: dict[str, Encoder] = {}
    for line in requests:
        req = json.loads(line)
        try:
            encoder = encoders.get(req["path"])
            if encoder is None:
                encoder = encoders[req["path"]] = load_encoder(req["path"])
                _trim()
            vectors, tokens = encoder(list(req["texts"]))
            answer: dict[str, Any] = {"vectors": vectors, "tokens": tokens}
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the server as an error answer
            answer = {"error": f"cannot embed with {req['path']}: {type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer).encode() + b"\n")
        answers.flush()


def main() -> None:
    # Background work: on a busy machine the server's own requests get the CPU first (a model load or a large
    # material must not slow every answer the way it once froze them).
    os.nice(10)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a library that prints writes to stderr, never into the answers
    serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
