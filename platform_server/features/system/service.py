"""Health of the process and whether a headless browser can be launched here."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import tempfile
import time
from typing import Any

from platform_server import __version__
from platform_server.db import database
from platform_server.integrations.llm import local
from platform_server.ports import database as database_port
from platform_server.ports import vectors

BROWSER_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def health(started_at: float, storage: dict[str, Any] | None = None) -> dict[str, Any]:
    """Database reachability, storage (DEGRADED: read-only, with the reason), version and uptime."""
    try:
        database.execute_sql("SELECT 1").fetchone()
        db_state = "UP"
    except Exception as exc:  # noqa: BLE001 - reported, not raised: this is the health route
        db_state = f"DOWN: {type(exc).__name__}"
    status = "UP" if db_state == "UP" else "DOWN"
    if status == "UP" and storage is not None and storage["status"] != "UP":
        status = "DEGRADED"
    return {
        "status": status,
        "database": db_state,
        "storage": storage,
        "version": __version__,
        "uptimeSeconds": round(time.time() - started_at, 3),
    }


async def browser_health(timeout_s: float = 20.0) -> dict[str, Any]:
    """Try to launch a headless browser and render about:blank."""
    executable = next((p for p in map(shutil.which, BROWSER_CANDIDATES) if p), None)
    if executable is None:
        return {"available": False, "launched": False, "executable": None, "error": "no Chromium executable found"}
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="browser-health-") as profile:
        proc = await asyncio.create_subprocess_exec(
            executable,
            *BROWSER_FLAGS,
            f"--user-data-dir={profile}",
            "--dump-dom",
            "about:blank",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            return {"available": True, "launched": False, "executable": executable, "error": "launch timed out"}
    launched = proc.returncode == 0 and b"<html" in out.lower()
    return {
        "available": True,
        "launched": launched,
        "executable": executable,
        "durationMs": int((time.monotonic() - start) * 1000),
        "error": None if launched else err.decode("utf-8", "replace")[-500:],
    }


def info(data_dir: str, local_model_path: str) -> dict[str, Any]:
    """Where the server keeps its data and what the embedded model is (blocking: walks the file system)."""
    root = os.path.realpath(data_dir)
    folders = []
    if os.path.isdir(root):
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                folders.append({"name": entry.name, "path": os.path.join(root, entry.name)})
    chat = local_model_path or local.find_default_gguf()
    embedding = local.find_default_embedding_model()
    return {
        "version": __version__,
        "dataDir": root,
        "databasePath": database_port.current().location(),  # the file, or PostgreSQL's URL without its password
        "vectorSearch": vectors.name(),  # "pgvector" (PostgreSQL with the extension) or "in-process"
        "folders": folders,
        "localModel": {
            "runtimeInstalled": importlib.util.find_spec("llama_cpp") is not None,
            "chatModelPath": chat,
            "chatModelFound": bool(chat and os.path.isfile(chat)),
            "chatModelConfigured": bool(local_model_path),
            "chatModelLoaded": bool(chat and chat in local._llamas),
            "embeddingModelPath": embedding,
            "embeddingModelFound": bool(embedding),
        },
    }
