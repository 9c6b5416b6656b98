"""Libraries that only some routes or turns use, imported on first use so a restart answers sooner.

A module names such a library at its top, beside its other imports:

    if TYPE_CHECKING:
        import aiohttp
    else:
        aiohttp = lazy_import("aiohttp")

The name then reads like the module (`aiohttp.ClientSession(...)`, `except aiohttp.ClientError`): the
first attribute read imports it, under the interpreter's import lock, so threads may race for it. The type
checker sees the real module. `warm_up` imports, off the IOLoop, what the first chat turn needs, once the
server listens (`app.warm_up`, from cli.serve). tests/test_lazy_imports.py checks that a start imports none of
`DEFERRED`; docs/DEVELOPING.md "Layout and call direction" has the rule.
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType
from typing import Any

from platform_server.blocking import run_blocking

log = logging.getLogger(__name__)

# Imported by no module at start (each through lazy_import or a lazily imported module of ours).
DEFERRED = (
    "aiohttp",
    "numpy",
    "yaml",
    "pypdf",
    "segno",
    "watchdog",
    "mcp",
    "httpx2",
    "pocketsphinx",
    "piper",
    "llama_cpp",
    "model2vec",
    "docx",
    "pptx",
    "openpyxl",
    "ebooklib",
)

# What the first chat turn needs (the LLM client's HTTP transport): imported right after listening.
WARM_UP = ("aiohttp",)


class LazyModule:
    """Stands for a module until an attribute is read; then every read goes to the imported module."""

    def __init__(self, name: str) -> None:
        self.__dict__["_lazy_name"] = name

    def _lazy_module(self) -> ModuleType:
        # import_module waits while another thread is still importing it (a half-initialised module in
        # sys.modules is never handed out), so a warm-up in a worker thread is safe to race.
        module: ModuleType | None = self.__dict__.get("_lazy_loaded")
        if module is None:
            module = self.__dict__["_lazy_loaded"] = importlib.import_module(self.__dict__["_lazy_name"])
        return module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._lazy_module(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:  # monkeypatching in tests reaches the real module
        setattr(self._lazy_module(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self._lazy_module(), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_lazy_name']!r}>"


def lazy_import(name: str) -> Any:
    """The module `name`, imported when an attribute of it is first read."""
    return LazyModule(name)


async def loaded(module: Any) -> None:
    """Import a lazy module in a worker thread unless it is imported already: a first use on the IOLoop then finds
    it ready instead of holding the loop for the import, or for the warm-up thread's import of it to end."""
    if isinstance(module, LazyModule) and module.__dict__.get("_lazy_loaded") is None:
        await run_blocking(module._lazy_module)


async def warm_up(names: tuple[str, ...] = WARM_UP) -> None:
    """Import `names` in a worker thread (the IOLoop keeps serving); a failure is logged, not raised."""
    for name in names:
        try:
            await run_blocking(importlib.import_module, name)
        except Exception:  # noqa: BLE001 - the first use imports it again and reports there
            log.exception("warming up %s failed", name)
