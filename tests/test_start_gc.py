"""`python -m platform_server` starts with garbage collection off and, once listening, freezes what the start
built and collects as usual from then on; the other commands collect as usual."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from platform_server import cli
from tests.helpers.server import free_port

SERVE = """
import asyncio, gc, json, os, signal, sys
import platform_server.__main__  # what `python -m platform_server` runs before main()
from platform_server import cli
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

seen = {"offWhileStarting": not gc.isenabled()}

async def stop_once_listening(port):
    client = AsyncHTTPClient()
    while True:
        try:
            await client.fetch(f"http://127.0.0.1:{port}/api/v1/setup/status")
            break
        except (OSError, HTTPClientError):
            await asyncio.sleep(0.02)
    seen["onWhileServing"] = gc.isenabled()
    seen["frozen"] = gc.get_freeze_count()
    seen["youngThreshold"] = gc.get_threshold()[0]
    os.kill(os.getpid(), signal.SIGTERM)

async def main(port, data_dir):
    config = cli._config(cli._parser().parse_args(["--host", "127.0.0.1", "--port", port, "--data-dir", data_dir]))
    watcher = asyncio.ensure_future(stop_once_listening(port))
    await cli.serve(config)
    await watcher

asyncio.run(main(sys.argv[1], sys.argv[2]))
print(json.dumps(seen))
"""

MIGRATE = """
import gc, sys
import platform_server.__main__
from platform_server import cli
off = not gc.isenabled()
cli.main(["migrate", "--data-dir", sys.argv[1]])
print(off, gc.isenabled())
"""


def test_serving_turns_collection_back_on_once_listening_with_the_start_s_objects_frozen(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", SERVE, str(free_port()), str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["offWhileStarting"] is True and seen["onWhileServing"] is True
    assert seen["frozen"] > 10_000  # the modules, classes and routes of the start
    assert seen["youngThreshold"] == cli.GC_YOUNG_THRESHOLD > 700  # fewer young collections than Python's default


def test_the_other_commands_collect_as_usual(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", MIGRATE, str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "True True"
