"""A restart answers sooner: libraries only some routes or turns use are imported on first use (platform_server.lazy)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from platform_server import lazy
from platform_server.lazy import lazy_import

START = """
import asyncio, json, sys
import tornado.netutil
from platform_server import lazy
from platform_server.app import listen, make_app, start_features, stop_features, warm_up
from platform_server.config import load_config
from platform_server.features.auth import service as auth

async def main(data_dir):
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    config = load_config(None, env={}, overrides={"host": "127.0.0.1", "port": sockets[0].getsockname()[1],
                                                  "data_dir": data_dir, "password_hash_rounds": 4, "log_level": "WARNING"})
    app, platform = make_app(config)
    await start_features(platform)
    server = listen(app, config, sockets)
    listening = {"deferred": sorted(m for m in lazy.DEFERRED if m in sys.modules), "hashed": 4 in auth._DUMMY_HASHES}
    await warm_up(platform)
    warmed = {"deferred": sorted(m for m in lazy.DEFERRED if m in sys.modules), "hashed": 4 in auth._DUMMY_HASHES}
    server.stop()
    await stop_features(platform)
    print(json.dumps({"listening": listening, "warmed": warmed}))

asyncio.run(main(sys.argv[1]))
"""


def test_a_start_imports_none_of_the_deferred_libraries_until_the_warm_up_after_listening(tmp_path: Path) -> None:
    for _start in ("first start (migrations)", "restart"):
        out = subprocess.run([sys.executable, "-c", START, str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["listening"] == {"deferred": [], "hashed": False}
        assert result["warmed"] == {"deferred": sorted(lazy.WARM_UP), "hashed": True}


@pytest.fixture
def slow_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module whose import takes 0.3 s and sets its attribute only at the end."""
    name = f"slow_lazy_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("import time\ntime.sleep(0.3)\nREADY = 'yes'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_a_lazy_module_is_imported_at_the_first_attribute_read_not_before(slow_module: str) -> None:
    module: Any = lazy_import(slow_module)
    assert slow_module not in sys.modules
    assert module.READY == "yes"
    assert slow_module in sys.modules


def test_a_read_while_another_thread_is_importing_waits_for_the_whole_module(slow_module: str) -> None:
    importer = threading.Thread(target=__import__, args=(slow_module,))
    importer.start()
    while slow_module not in sys.modules:  # the other thread is inside the module's body now
        pass
    module: Any = lazy_import(slow_module)  # a module of ours imported meanwhile (as a route's first use does)
    assert module.READY == "yes"  # not AttributeError on the half-initialised module
    importer.join()


def test_a_missing_library_raises_import_error_at_first_use_so_callers_can_report_it() -> None:
    missing: Any = lazy_import("no_such_library_for_the_lazy_test")
    with pytest.raises(ImportError):
        missing.anything


VIEWS = """
import json
from platform_server.app import collect_routes
from platform_server.serialize import View

collect_routes()  # every area's handlers and schemas imported, as a start does
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
views = list(subclasses(View))
print(json.dumps({"views": len(views), "built": sorted(v.__name__ for v in views if v.__pydantic_complete__)}))
"""


def test_a_start_builds_no_answer_model_until_the_api_document_or_a_check_asks() -> None:
    out = subprocess.run([sys.executable, "-c", VIEWS], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["views"] > 0 and result["built"] == []


FIRST_CALL = """
import asyncio, importlib.abc, json, sys, threading
seen = {}

class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "aiohttp":
            seen["thread"] = threading.current_thread() is threading.main_thread()
        return None

sys.meta_path.insert(0, Spy())
from platform_server.integrations.llm._http import HttpTransport
from platform_server.integrations.llm.types import LlmError

async def main():
    transport = HttpTransport("p", "http://127.0.0.1:9", {}, timeout_s=5, first_byte_timeout_s=5, idle_timeout_s=5)
    try:
        await transport.open("GET", "/v1/models", None, transport.deadline())
    except LlmError:
        pass  # nothing listens there: the call fails, after the import
    print(json.dumps({"imported": "thread" in seen, "on_the_loop": seen.get("thread")}))

asyncio.run(main())
"""


def test_a_provider_call_before_the_warm_up_imports_its_http_library_off_the_ioloop() -> None:
    """The first chat turn after a start used to import aiohttp on the loop (or wait there for the warm-up's import)."""
    out = subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"imported": True, "on_the_loop": False}


NUMPY_THREADS = """
import os
import platform_server.app
before = len(os.listdir("/proc/self/task"))
import numpy
numpy.ones((512, 64), dtype=numpy.float32) @ numpy.ones(64, dtype=numpy.float32)
print(len(os.listdir("/proc/self/task")) - before)
"""


def test_numpy_loads_without_a_thread_pool_of_its_own(tmp_path: Path) -> None:
    """A wiki search's matrix product ran on OpenBLAS's thread per core, which spin and take the IOLoop's cores."""
    pytest.importorskip("numpy")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", NUMPY_THREADS], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip().splitlines()[-1]) == 0
