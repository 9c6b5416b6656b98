"""LLM Wiki routes: knowledge bases, raw materials, processing (page routes in page_handlers)."""

from __future__ import annotations

import urllib.parse

from platform_server.blocking import run_blocking
from platform_server.features.tools.registry import ToolFactory
from platform_server.features.wiki import (
    WIKI,
    extra_handlers,
    kbs,
    lifecycle,
    maintenance_handlers,
    page_handlers,
    pipeline_handlers,
    raw,
    research_handlers,
    source_handlers,
    transform_handlers,
    views,
)
from platform_server.features.wiki.engine import WikiEngine
from platform_server.features.wiki.schemas import PROGRESS_EVENTS, KbConfigUpdate, KbCreate, KbUpdate, RawText
from platform_server.features.wiki.text import TEXT_TYPES, named_for, slugify
from platform_server.platform import Flag
from platform_server.web.base import ApiHandler
from platform_server.web.errors import BadRequest
from platform_server.web.live import LiveFeedHandler
from platform_server.web.openapi_answers import NOTHING, list_of, one
from platform_server.web.routing import gated, route
from platform_server.web.sse import SseWriter

TAGS = ("LLM Wiki",)
KB = "/api/v1/wiki/knowledge-bases"


class WikiHandler(ApiHandler):
    tags = TAGS

    @property
    def engine(self) -> WikiEngine:
        return self.platform.runtime(WIKI)


class KbsHandler(WikiHandler):
    access = {"GET": "viewer", "POST": "member"}
    answers = {"GET": list_of(views.WikiKbView), "POST": one(views.WikiKbView)}
    body_models = {"POST": KbCreate}

    def get(self) -> None:
        """Knowledge bases of the workspace."""
        self.ok(kbs.list_kbs(self.require_caller()))

    def post(self) -> None:
        """Create a knowledge base (optionally bound to agents by `agentIds`)."""
        kb = kbs.create(self.require_caller(), self.body(KbCreate))
        self.engine.llm.preload_local_embedding()  # its first material will need the model: it loads meanwhile
        self.ok(kb)


class KbHandler(WikiHandler):
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    answers = {"GET": one(views.WikiKbView), "PUT": one(views.WikiKbView), "DELETE": NOTHING}
    body_models = {"PUT": KbUpdate}

    def get(self, id: int) -> None:
        """One knowledge base."""
        self.ok(kbs.to_dict(kbs.get_kb(self.require_caller(), id)))

    def put(self, id: int) -> None:
        """Update name, description or the bound agents (`agentIds` replaces them)."""
        self.ok(kbs.update(self.require_caller(), id, self.body(KbUpdate)))

    async def delete(self, id: int) -> None:
        """Delete a knowledge base with its materials and pages (creator or workspace admin)."""
        for raw_id in kbs.delete(self.require_caller(), id):
            self.engine.cancel(raw_id)
        await self.engine.watchers.unlink(id)
        await run_blocking(kbs.remove_files, self.config, id)
        self.ok(None)


class KbConfigHandler(WikiHandler):
    access = {"GET": "viewer", "PUT": "member"}
    answers = {"GET": one(views.WikiKbConfigView), "PUT": one(views.WikiKbConfigView)}
    body_models = {"PUT": KbConfigUpdate}

    def get(self, id: int) -> None:
        """Chunking, models, page language and auto-processing of the KB."""
        self.ok(kbs.get_config(self.require_caller(), id))

    def put(self, id: int) -> None:
        """Sparse config update; null clears a model override (another embedding model re-embeds in the background)."""
        self.ok(kbs.put_config(self.require_caller(), id, self.body(KbConfigUpdate)))
        self.platform.runtime(WIKI).reembed.wake()


class AgentKbsHandler(WikiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(views.WikiAgentKbView)}

    def get(self, agentId: int) -> None:
        """The agent's knowledge bases: its primaryKbId first, then the bound ones."""
        self.ok(kbs.for_agent(self.require_caller(), agentId))


class BindableHandler(WikiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(views.WikiKbView)}

    def get(self) -> None:
        """Knowledge bases the agent (`?agentId=`) is not bound to yet."""
        self.ok(kbs.bindable(self.require_caller(), self.query_long("agentId")))


# ---- raw materials ----------------------------------------------------------------------------


class RawListHandler(WikiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(views.WikiRawView)}

    def get(self, kbId: int) -> None:
        """Raw materials with the number of pages generated from each (`?status=` filters)."""
        self.ok(raw.list_raw(self.require_caller(), kbId, self.get_query_argument("status", None)))


class RawAdder(WikiHandler):
    async def add(self, kb_id: int, title: str, source_type: str, file_name: str, data: bytes) -> None:
        caller = self.require_caller()
        kb = kbs.get_kb(caller, kb_id)
        prep = await run_blocking(raw.prepare, self.config, kb.id, data, file_name)
        try:
            row, auto = raw.create(caller, kb, title, source_type, file_name, prep)
        except Exception:
            await run_blocking(raw.discard, self.config, kb.id, prep.stored_name)
            raise
        if auto:
            self.engine.enqueue(row.id)
        self.ok(raw.to_dict(row, 0))


class RawTextHandler(RawAdder):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiRawView)}
    body_models = {"POST": RawText}

    async def post(self, kbId: int) -> None:
        """Add a text material `{title, text}`; processed at once when the KB's autoProcess is on."""
        req = self.body(RawText)
        if not req.text.strip():
            raise BadRequest("text: must not be blank")
        await self.add(kbId, req.title, "text", f"{slugify(req.title)[:60] or 'material'}.txt", req.text.encode("utf-8"))


class RawUploadHandler(RawAdder):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiRawView)}
    max_body_setting = "upload_max_bytes"
    spool_body = True

    async def post(self, kbId: int) -> None:
        """Upload a file (multipart `file`, optional `title`): text, markdown, HTML or PDF."""
        kbs.get_kb(self.require_caller(), kbId)  # an unknown or foreign KB is a 404 before the body is looked at
        args, files = await self.multipart()
        if not files.get("file"):
            raise BadRequest("file: must not be null")
        f = files["file"][0]
        name = named_for((f.filename or "").strip() or "upload.txt", f.content_type)
        title = (args.get("title") or [b""])[0].decode("utf-8", "replace").strip() or name
        await self.add(kbId, title[:200], "upload", name, await run_blocking(f.read))


class RawHandler(WikiHandler):
    access = {"DELETE": "member"}
    answers = {"DELETE": NOTHING}

    async def delete(self, kbId: int, rawId: int) -> None:
        """Delete a material, its chunks and citations (pages generated from it stay)."""
        row = raw.delete(self.require_caller(), kbId, rawId)
        self.engine.cancel(rawId)
        await run_blocking(raw.discard, self.config, row.kb_id, row.stored_name)
        self.ok(None)


class RawDownloadHandler(WikiHandler):
    access = {"GET": "viewer"}
    download_methods = frozenset({"GET"})
    # a material goes out as the type it was stored with: one of the types an upload or a source sync can have
    download_types = {"GET": tuple(sorted(set(TEXT_TYPES.values())))}

    async def get(self, kbId: int, rawId: int) -> None:
        """The material's original bytes."""
        row = raw.get_raw(self.require_caller(), kbId, rawId)
        data = await run_blocking(raw.stored_path(self.config, row).read_bytes)
        name = row.file_name or "material"
        ascii_name = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:100] or "material"
        self.set_header("Content-Type", row.content_type)
        self.set_header("Content-Disposition", f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{urllib.parse.quote(name)}")
        self.set_header("Content-Security-Policy", "default-src 'none'; sandbox")
        self.finish(data)


class RawCancelHandler(WikiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiRawView)}

    def post(self, kbId: int, rawId: int) -> None:
        """Cancel processing; valid only while the material is `processing`."""
        caller = self.require_caller()
        raw.check_cancellable(caller, kbId, rawId)
        row = raw.mark_cancelled(caller, rawId)
        self.engine.cancel(rawId)
        self.ok(raw.to_dict(row) if row else None)


class RawReprocessHandler(WikiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiRawView)}

    def post(self, kbId: int, rawId: int) -> None:
        """Queue the material again; `force=true` bypasses the unchanged-content short-circuit."""
        row = raw.requeue(self.require_caller(), kbId, rawId, bool(self.query_bool("force")))
        self.engine.enqueue(row.id)
        self.ok(raw.to_dict(row))


# ---- processing -------------------------------------------------------------------------------


class ProcessHandler(WikiHandler):
    access = {"POST": "member"}
    answers = {"POST": one(views.WikiProcessView)}

    def post(self, kbId: int) -> None:
        """Queue the KB's materials that need work; `force=true` re-queues all of them."""
        force = bool(self.query_bool("force"))
        ids = raw.requeue_kb(self.require_caller(), kbId, force)
        for raw_id in ids:
            self.engine.enqueue(raw_id)
        self.ok({"kbId": str(kbId), "queued": len(ids), "rawIds": [str(i) for i in ids], "force": force})


class StatusHandler(WikiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": one(views.WikiProcessingStatusView)}

    def get(self, kbId: int) -> None:
        """Counts per state, whether the KB is idle, and the step each material is at."""
        kb = kbs.get_kb(self.require_caller(), kbId)
        self.ok(self.engine.status(kb.id))


class JobsHandler(WikiHandler):
    access = {"GET": "viewer"}
    answers = {"GET": list_of(views.WikiJobView)}

    def get(self, kbId: int) -> None:
        """Processing jobs with their steps, newest first (`rawId`, `limit` up to 200)."""
        limit = self.query_long("limit")
        limit = 50 if limit is None else limit
        if not 1 <= limit <= 200:
            raise BadRequest("limit: must be between 1 and 200")
        self.ok(raw.jobs(self.require_caller(), kbId, self.query_long("rawId"), limit))


class ProgressHandler(LiveFeedHandler, WikiHandler):
    access = {"GET": "viewer"}
    sse_methods = frozenset({"GET"})
    events = {"GET": PROGRESS_EVENTS}
    query_token = True

    async def get(self, kbId: int) -> None:
        """SSE: a `snapshot`, then `material` and `step` frames until an `idle` frame ends the stream."""
        kb = kbs.get_kb(self.require_caller(), kbId)

        async def opening(writer: SseWriter) -> bool:
            if not await writer.send("snapshot", self.engine.status(kb.id)):
                return False
            if self.engine.busy(kb.id):
                return True
            await writer.send("idle", {"type": "idle", "kbId": str(kb.id)})
            return False

        await self.feed(self.engine.subscribe(kb.id), self.config.heartbeat_s, opening, last=lambda event: event.name == "idle")


ROUTES = gated(
    "wiki",
    [
        route(KB, KbsHandler),
        route(f"{KB}/agent/{{agentId}}", AgentKbsHandler),
        route(f"{KB}/bindable", BindableHandler),
        route(f"{KB}/{{id}}", KbHandler),
        route(f"{KB}/{{id}}/config", KbConfigHandler),
        route(f"{KB}/{{kbId}}/raw", RawListHandler),
        route(f"{KB}/{{kbId}}/raw/text", RawTextHandler),
        route(f"{KB}/{{kbId}}/raw/upload", RawUploadHandler),
        route(f"{KB}/{{kbId}}/raw/{{rawId}}", RawHandler),
        route(f"{KB}/{{kbId}}/raw/{{rawId}}/download", RawDownloadHandler),
        route(f"{KB}/{{kbId}}/raw/{{rawId}}/cancel", RawCancelHandler),
        route(f"{KB}/{{kbId}}/raw/{{rawId}}/reprocess", RawReprocessHandler),
        route(f"{KB}/{{kbId}}/process", ProcessHandler),
        route(f"{KB}/{{kbId}}/processing-status", StatusHandler),
        route(f"{KB}/{{kbId}}/progress", ProgressHandler),
        route("/api/v1/wiki/kb/{kbId}/jobs", JobsHandler),
        *page_handlers.ROUTES,
        *extra_handlers.ROUTES,
        *source_handlers.ROUTES,
        *research_handlers.ROUTES,
        *transform_handlers.ROUTES,
        *pipeline_handlers.ROUTES,
        *maintenance_handlers.ROUTES,
    ],
)

FLAGS = [
    Flag("wiki", True, "Knowledge bases (LLM wiki) and the wiki_search tool"),
    # named as the original console names it (its Feature Flags page toggles only this one and wiki.ocr.enabled)
    Flag("wiki.hot_cache.enabled", True, "The wiki hot cache (a digest of each KB's key pages) in its agents' prompts"),
]
AGENT_TOOLS: list[ToolFactory] = [lifecycle.agent_tools]
