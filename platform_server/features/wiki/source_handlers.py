"""LLM Wiki routes of a KB's linked source directory: link, scan, the watcher's state."""

from __future__ import annotations

from typing import Any

from platform_server.blocking import run_blocking
from platform_server.features.wiki import WIKI, kbs, source, views
from platform_server.features.wiki.schemas import SourceDirectoryRequest
from platform_server.features.wiki.watcher import Watchers
from platform_server.web.base import ApiHandler
from platform_server.web.errors import Conflict
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route

TAGS = ("LLM Wiki",)
KB = "/api/v1/wiki/knowledge-bases"


class SourceHandler(ApiHandler):
    tags = TAGS

    @property
    def watchers(self) -> Watchers:
        return self.platform.runtime(WIKI).watchers

    def state(self, kb_id: int) -> dict[str, Any]:
        watcher = self.watchers.get(kb_id)
        caller = self.require_caller()
        roots = [str(r) for r in source.roots(self.config, caller.workspace_id, caller.is_global_admin)]
        if watcher is None:
            return {
                "kbId": str(kb_id),
                "path": None,
                "state": "unlinked",
                "error": None,
                "watching": False,
                "scanning": False,
                "pendingEvents": 0,
                "lastScanTime": None,
                "lastScan": None,
                "roots": roots,
            }
        return {**watcher.to_dict(), "roots": roots}

    def linked(self, kb_id: int) -> None:
        if self.watchers.get(kb_id) is None:
            # the KB's state, not the request: the same call succeeds once a folder is linked
            raise Conflict("No source directory is linked to this knowledge base: PUT .../source-directory {path}")


class SourceDirectoryHandler(SourceHandler):
    access = {"PUT": "member"}
    answers = {"PUT": one(views.WikiSourceKbView)}
    body_models = {"PUT": SourceDirectoryRequest}

    async def put(self, id: int) -> None:
        """Link a folder `{path, watch}` (inside the workspace's `wiki_source_roots`) and watch it; `{path: null}` unlinks."""
        req = self.body(SourceDirectoryRequest)
        caller = self.require_caller()
        kbs.get_kb(caller, id)
        resolved = None
        if req.path is not None:
            resolved = await run_blocking(source.resolve_directory, self.config, req.path, caller.workspace_id, caller.is_global_admin)
        kb = source.set_directory(caller, id, resolved, req.watch)
        if resolved is None:
            await self.watchers.unlink(kb.id)
        else:
            await self.watchers.link(kb.id, str(resolved), req.watch)
        self.ok({**kbs.to_dict(kb), "watcher": self.state(kb.id)})


class ScanHandler(SourceHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiScanView)}

    async def post(self, id: int) -> None:
        """Scan the linked folder now and answer what changed (added, updated, removed, skipped, failed)."""
        kb = kbs.get_kb(self.require_caller(), id)
        self.linked(kb.id)
        self.ok(await self.watchers.scan(kb.id, "request"))


class WatcherHandler(SourceHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(views.WikiWatcherView)}

    def get(self, id: int) -> None:
        """The watcher's state (`watching`, `paused`, `error`, or `unlinked`), last scan and pending events."""
        kb = kbs.get_kb(self.require_caller(), id)
        self.ok(self.state(kb.id))


class WatcherScanHandler(SourceHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiWatcherScanView)}

    def post(self, id: int) -> None:
        """Queue one watcher scan in the background; answers the watcher's state."""
        kb = kbs.get_kb(self.require_caller(), id)
        self.linked(kb.id)
        self.watchers.scan_soon(kb.id, "request")
        self.ok({**self.state(kb.id), "scanQueued": True})


ROUTES = [
    route(f"{KB}/{{id}}/source-directory", SourceDirectoryHandler),
    route(f"{KB}/{{id}}/scan", ScanHandler),
    route(f"{KB}/{{id}}/source-watcher", WatcherHandler),
    route(f"{KB}/{{id}}/source-watcher/scan", WatcherScanHandler),
]
