"""Agent workspace routes: files under `/workspace/files/**` and the memory snapshot (ZIP) routes."""

from __future__ import annotations

import mimetypes
import re
from pathlib import Path
from typing import Any, Callable, TypeVar

import pydantic

from platform_server.blocking import run_blocking
from platform_server.db import database
from platform_server.features.agents import files, memory, service
from platform_server.features.agents.schemas import (
    AgentMemoryImportPlanView,
    AgentMemoryImportView,
    AgentPersonalFileContentView,
    AgentPersonalFileView,
    AgentWorkspaceFileTextView,
    AgentWorkspaceFileView,
    FileContent,
)
from platform_server.features.audit import service as audit
from platform_server.web.base import ApiHandler
from platform_server.web.bodies import first_validation_error
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, Forbidden
from platform_server.web.openapi_answers import NOTHING, list_of, one

T = TypeVar("T")

TAGS = ("Agents",)
MAX_READ_BYTES = 50 * 1024 * 1024
# Types served as themselves; everything else is text/plain or octet-stream (no HTML or SVG from our origin).
# application/json is not among them: on this route it names the envelope (`AgentWorkspaceFileTextView`); a .json
# file goes out as text/plain
_INLINE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}


def _content_type(rel: str, data: bytes) -> str:
    guessed, _ = mimetypes.guess_type(rel)
    if guessed in _INLINE_TYPES:
        return guessed
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain; charset=UTF-8"


def _audit(caller: Caller, action: str, agent_id: int, detail: str) -> None:
    with database.atomic():
        audit.record(caller, action, "AGENT_FILE", agent_id, detail)


class FilesHandler(ApiHandler):
    answers = {"GET": list_of(AgentWorkspaceFileView)}
    access = {"GET": "viewer"}
    tags = TAGS

    async def get(self, agentId: int) -> None:
        """Files of the agent's workspace: `[{path, size, modifiedTime}]`."""
        agent = service.get_agent(self.require_caller(), agentId)
        root = service.agent_dir(self.config, agent.id)
        self.ok(await run_blocking(files.list_files, root))


PEOPLE = "memory/people"


def _personal_files(root: Path, user_id: int) -> list[dict[str, Any]]:
    """One user's private memory files of the agent: `ownerKey` is `user:<id>`, `filename` the path below it."""
    start = f"{PEOPLE}/{int(user_id)}"
    if not (root / PEOPLE / str(int(user_id))).is_dir():
        return []
    rows = []
    for rel, st in files.walk_files(root, start):
        name = rel[len(start) + 1 :]
        rows.append({**files.file_info(rel, st), "filename": name, "ownerKey": f"user:{int(user_id)}", "scope": "PERSONAL", "enabled": True})
    return sorted(rows, key=lambda r: r["filename"])


class PersonalFilesHandler(ApiHandler):
    answers = {"GET": list_of(AgentPersonalFileView)}
    access = {"GET": "viewer"}
    tags = TAGS

    async def get(self, agentId: int) -> None:
        """The caller's own private memory files of the agent (metadata; nobody else's, admins included)."""
        caller = self.require_caller()
        agent = service.get_agent(caller, agentId)
        root = service.private_dir(self.config, agent.id)
        self.ok(await run_blocking(_personal_files, root, caller.user_id))


# The document states both: the file's path below the user's folder (up to 4 names of 1-60 characters, none '.', no
# '\\', ':' or control character: inside files.split_rel's byte limits, never a drive or the folder itself) and the
# owner as user:<id>
_NAME = r"([^./\\:\x00-\x1f\x7f][^/\\:\x00-\x1f\x7f]{0,59}|\.[^/\\:\x00-\x1f\x7f]{1,59})"
PERSONAL_FILENAME_PATTERN = f"^{_NAME}(/{_NAME}){{0,3}}$"
PERSONAL_FILENAME_RE = re.compile(PERSONAL_FILENAME_PATTERN)
OWNER_KEY_PATTERN = r"^user:[0-9]{1,18}$"
OWNER_KEY_RE = re.compile(OWNER_KEY_PATTERN)


class PersonalFileHandler(ApiHandler):
    answers = {"GET": one(AgentPersonalFileContentView)}
    access = {"GET": "viewer"}
    tags = TAGS
    query_params = {
        "GET": [
            {
                "name": "filename",
                "in": "query",
                "required": True,
                "description": "The memory file",
                "schema": {"type": "string", "pattern": PERSONAL_FILENAME_PATTERN},
            },
            {
                "name": "ownerKey",
                "in": "query",
                "required": True,
                "description": "Whose (only the caller's own)",
                "schema": {"type": "string", "pattern": OWNER_KEY_PATTERN},
            },
        ]
    }

    async def get(self, agentId: int) -> None:
        """One of the caller's own private memory files as `{filename, ownerKey, content}`."""
        caller = self.require_caller()
        agent = service.get_agent(caller, agentId)
        filename, owner = self.get_query_argument("filename", "", strip=False), self.get_query_argument("ownerKey", "", strip=False)
        if not PERSONAL_FILENAME_RE.fullmatch(filename):
            raise BadRequest("filename: must be a path of 1-4 names of 1-60 characters (no '.', '\\', ':' or control characters)")
        if not OWNER_KEY_RE.fullmatch(owner):
            raise BadRequest("ownerKey: must be user:<id>")
        user_id = owner.removeprefix("user:")
        if int(user_id) != caller.user_id:
            raise Forbidden("A user's private memory is readable only by that user")
        rel = f"{PEOPLE}/{int(user_id)}/{filename}"
        data = await run_blocking(files.read_bytes, service.private_dir(self.config, agent.id), rel, MAX_READ_BYTES)
        self.ok({"filename": filename, "ownerKey": owner, "content": data.decode("utf-8", "replace")})


class FileHandler(ApiHandler):
    # GET: the file's bytes, or its text in the envelope when JSON is the first type accepted
    answers = {"GET": one(AgentWorkspaceFileTextView), "PUT": one(AgentWorkspaceFileView), "DELETE": NOTHING}
    access = {"GET": "viewer", "PUT": "member", "DELETE": "member"}
    body_models = {"PUT": FileContent}
    download_methods = frozenset({"GET"})
    download_types = {"GET": (*sorted(_INLINE_TYPES), "text/plain", "application/octet-stream")}  # _content_type
    path_schemas = {"path": files.route_path_schema()}  # each method checks the same (files.check_route_path)
    tags = TAGS

    async def _file_op(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking file operation; what the folder holds (a folder in the way, a non-empty one) is a 409."""
        try:
            return await run_blocking(fn, *args)
        except files.PathInTheWay as exc:
            raise Conflict(exc.msg) from None

    def _root(self, agent_id: int, path: str) -> Path:
        files.check_route_path(path)
        agent = service.get_agent(self.require_caller(), agent_id)
        return service.agent_dir(self.config, agent.id)

    async def get(self, agentId: int, path: str) -> None:
        """The bytes of one workspace file (`{filename, content}` when JSON is the first type accepted)."""
        root = self._root(agentId, path)
        data = await self._file_op(files.read_bytes, root, path, MAX_READ_BYTES)
        accept = (self.request.headers.get("Accept") or "").split(",")[0].split(";")[0].strip().lower()
        if accept == "application/json":  # the original console reads the text from the envelope
            text = data.decode("utf-8", "replace")
            self.ok({"filename": "/".join(files.split_rel(path)), "content": text, "fileSize": len(data)})
            return
        self.set_header("Content-Type", _content_type(path, data))
        self.set_header("Content-Security-Policy", "sandbox; default-src 'none'")
        self.finish(data)

    def _content(self) -> bytes:
        ctype = (self.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype and ctype != "application/json" and not ctype.endswith("+json"):
            return self.body_bytes
        raw = self.json_body()
        if not isinstance(raw, dict):
            raise BadRequest("Request body must be a JSON object")
        try:
            return FileContent.model_validate(raw).content.encode("utf-8")
        except pydantic.ValidationError as exc:
            raise BadRequest(first_validation_error(exc))
        except UnicodeEncodeError:
            raise BadRequest("content: not valid text")

    async def put(self, agentId: int, path: str) -> None:
        """Save a file: `{content}` as JSON text, or the raw bytes with a non-JSON content type."""
        caller = self.require_caller()
        root = self._root(agentId, path)
        files.split_rel(path)
        data = self._content()
        created = await self._file_op(files.write_bytes, root, path, data)
        info = await self._file_op(files.stat_file, root, path)
        _audit(caller, "CREATE" if created else "UPDATE", agentId, f"{info['path']} ({len(data)} bytes)")
        self.ok(info)

    async def delete(self, agentId: int, path: str) -> None:
        """Delete a file (or an empty folder) of the workspace."""
        caller = self.require_caller()
        root = self._root(agentId, path)
        await self._file_op(files.delete_path, root, path)
        _audit(caller, "DELETE", agentId, "/".join(files.split_rel(path)))
        self.ok(None)


class MemoryExportHandler(ApiHandler):
    access = {"GET": "viewer"}
    download_methods = frozenset({"GET"})
    download_types = {"GET": ("application/zip",)}
    tags = TAGS

    async def get(self, agentId: int) -> None:
        """A ZIP of the agent's memory (`MEMORY.md` and `memory/**`)."""
        agent = service.get_agent(self.require_caller(), agentId)
        data = await run_blocking(memory.export_zip, service.agent_dir(self.config, agent.id))
        self.set_header("Content-Type", "application/zip")
        self.set_header("Content-Disposition", f'attachment; filename="agent-{agent.id}-memory.zip"')
        self.finish(data)


class _MemoryImportBase(ApiHandler):
    access = {"POST": "member"}
    max_body_setting = "upload_max_bytes"
    spool_body = True
    tags = TAGS

    async def _archive(self) -> bytes:
        ctype = (self.request.headers.get("Content-Type") or "").lower()
        if ctype.startswith("multipart/form-data"):
            _, uploads = await self.multipart()
            parts = uploads.get("file") or []
            if not parts:
                raise BadRequest("file: a ZIP archive is required")
            return await run_blocking(parts[0].read)
        return await self.raw_body()

    async def _plan(self, write: bool) -> dict[str, Any]:
        caller = self.require_caller()
        agent = service.get_agent(caller, int(self.path_kwargs["agentId"]))
        root = service.agent_dir(self.config, agent.id)
        archive = await self._archive()
        plan = await run_blocking(memory.plan_import, root, archive, write)
        result = plan.to_dict()
        if write:
            written = await run_blocking(memory.apply_import, root, plan)
            result["imported"] = written
            with database.atomic():
                audit.record(caller, "UPDATE", "AGENT_MEMORY", agent.id, f"memory import: {written} files written")
        return result


class MemoryImportPreviewHandler(_MemoryImportBase):
    answers = {"POST": one(AgentMemoryImportPlanView)}

    async def post(self, agentId: int) -> None:
        """What an import would create, overwrite and refuse, without writing (multipart `file` or raw ZIP)."""
        self.ok(await self._plan(write=False))


class MemoryImportHandler(_MemoryImportBase):
    answers = {"POST": one(AgentMemoryImportView)}

    async def post(self, agentId: int) -> None:
        """Import a memory ZIP (merge; entries outside `MEMORY.md`/`memory/**` are refused)."""
        self.ok(await self._plan(write=True))


__all__ = ["FileHandler", "FilesHandler", "MemoryExportHandler", "MemoryImportHandler", "MemoryImportPreviewHandler"]
