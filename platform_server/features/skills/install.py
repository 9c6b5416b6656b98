"""Installing skills: ZIP bundles (upload, URL, hub slug), async install tasks, and the hub index.

A bundle is a ZIP with `SKILL.md` at its root or one folder down. Reading refuses the whole archive
when any entry would escape (`..`, absolute names, backslashes, symlink entries), and bounds entry
count, per-file and total uncompressed size against the bytes actually read (zip bombs, lying headers).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid
import zipfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from platform_server import leases
from platform_server.config import Config
from platform_server.db import database, iso, utcnow
from platform_server.features.agents import archives
from platform_server.features.audit import service as audit
from platform_server.features.skills import frontmatter as fm
from platform_server.features.skills import service
from platform_server.features.skills.models import InstallTaskRow, Skill
from platform_server.features.skills.storage import LESSONS_FILE, SKILL_FILE
from platform_server.integrations import net_guard
from platform_server.lazy import lazy_import
from platform_server.leases import LOST_ERROR, RunKind
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest, Conflict, NotFound

if TYPE_CHECKING:
    import aiohttp
    import yarl
else:
    aiohttp = lazy_import("aiohttp")
    yarl = lazy_import("yarl")

MAX_ENTRIES = 1000
_JUNK = ("__MACOSX/",)
_JUNK_NAMES = (".DS_Store", "Thumbs.db")
HUB_INDEX_MAX_BYTES = 5 * 1024 * 1024
TASK_RETENTION_S = 3600.0
MAX_TASKS = 200
RUNNING = ("pending", "downloading", "installing")


@dataclass
class ZipBundle:
    content: str
    files: dict[str, bytes]
    folder: str | None  # the folder holding SKILL.md, when one folder down


def _entry_name(info: zipfile.ZipInfo) -> str:
    raw = info.filename
    try:
        return archives.entry_path(info)
    except archives.UnsafeEntry as exc:
        if exc.kind == "symlink":
            raise BadRequest(f"file: entry '{raw[:200]}' is a symbolic link")
        if exc.kind == "encrypted":
            raise BadRequest(f"file: entry '{raw[:200]}' is encrypted")
        if exc.kind == "nul":
            raise BadRequest("file: an entry name contains a NUL byte")
        raise BadRequest(f"file: unsafe entry '{raw[:200]}': {exc.msg}")


def read_zip(archive: bytes) -> ZipBundle:
    """The SKILL.md text and bundle files of a ZIP (blocking); 400 on anything unsafe or oversized."""
    with archives.open_zip(archive) as zf:
        infos = archives.file_entries(zf, MAX_ENTRIES)
        named = []
        for info in infos:
            rel = _entry_name(info)
            if rel.startswith(_JUNK) or rel.rsplit("/", 1)[-1] in _JUNK_NAMES:
                continue
            named.append((rel, info))
        skill_md = [rel for rel, _ in named if rel == SKILL_FILE or (rel.count("/") == 1 and rel.endswith("/" + SKILL_FILE))]
        if SKILL_FILE in skill_md:
            prefix = ""
        elif len(skill_md) == 1:
            prefix = skill_md[0][: -len(SKILL_FILE)]
        elif not skill_md:
            raise BadRequest("file: no SKILL.md at the root of the ZIP or one folder down")
        else:
            raise BadRequest("file: more than one SKILL.md; put one skill in each ZIP")
        chosen = [(rel[len(prefix) :], info) for rel, info in named if rel.startswith(prefix)]
        declared = sum(i.file_size for _, i in chosen)
        if declared > service.MAX_BUNDLE_BYTES + service.MAX_CONTENT * 4:
            raise BadRequest(f"file: expands to more than {service.MAX_BUNDLE_BYTES} bytes")
        content: str | None = None
        bundle: dict[str, bytes] = {}
        total = 0
        for rel, info in chosen:
            if rel == LESSONS_FILE:
                continue
            limit = service.MAX_CONTENT * 4 if rel == SKILL_FILE else service.MAX_FILE_BYTES
            if info.file_size > limit:
                raise BadRequest(f"file: entry '{rel}' is larger than {limit} bytes")
            data = archives.read_entry(zf, info, rel, limit)
            total += len(data)
            if total > service.MAX_BUNDLE_BYTES:
                raise BadRequest(f"file: expands to more than {service.MAX_BUNDLE_BYTES} bytes")
            if rel == SKILL_FILE:
                try:
                    content = data.decode("utf-8")
                except UnicodeDecodeError:
                    raise BadRequest("file: SKILL.md is not UTF-8 text")
            else:
                bundle[rel] = data
    assert content is not None
    return ZipBundle(content, service.check_bundle(bundle), prefix.rstrip("/") or None)


def install_bundle(caller: Caller, bundle: ZipBundle, source: str, overwrite: bool) -> tuple[Skill, bool]:
    """Create an `installed` skill from a bundle, or replace an installed one with overwrite=true.

    Returns the skill and whether it replaced an existing one.
    """
    doc = fm.parse(bundle.content)
    if not doc.text("name") and not bundle.folder:
        raise BadRequest("file: SKILL.md needs a `name:` in its front matter")
    values = service.prepare_new(bundle.content, None if doc.text("name") else fm.slugify(bundle.folder or ""))
    existing = service.get_by_name(caller, values["name"])
    if existing is None:
        return service.create_skill(caller, values, "installed", source, True, bundle.files), False
    if not overwrite:
        raise Conflict(f"A skill named '{values['name']}' already exists in this workspace (install with overwrite=true to replace it)")
    if existing.skill_type != "installed":
        raise Conflict(f"Skill '{values['name']}' is a {existing.skill_type} skill; only installed skills are replaced")
    with database.atomic():
        skill, _ = service.update(
            caller,
            existing.id,
            {
                "content": values["content"],
                "description": values["description"],
                "version": values["version"],
                "displayName": values["display_name"],
            },
            bundle.files,
        )
        skill.source = source[:255]
        skill.save(only=[Skill.source])
        audit.record(caller, "UPDATE", "SKILL", skill.id, f"skill {skill.name} reinstalled from {source[:200]}")
    return skill, True


def uninstall(caller: Caller, name: str) -> Skill:
    """Delete an installed skill by name."""
    skill = service.get_by_name(caller, name)
    if skill is None:
        raise NotFound("Skill not found")
    if skill.skill_type != "installed":
        raise Conflict(f"Skill '{name}' is a {skill.skill_type} skill; only installed skills are uninstalled")
    return service.delete(caller, skill.id)


# ---- downloads and the hub ------------------------------------------------------------------


async def download(config: Config, url: str, max_bytes: int) -> bytes:
    """GET a URL through the SSRF guard; BadRequest on a refused, failing or oversized download."""
    try:
        result = await net_guard.fetch(
            url,
            allow_hosts=config.web_fetch_allow_hosts,
            max_bytes=max_bytes,
            timeout_s=config.web_fetch_timeout_s,
            headers={"Accept": "*/*"},
        )
    except net_guard.BlockedUrl as exc:
        raise BadRequest(f"url: {exc}")
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise BadRequest(f"Download failed: {type(exc).__name__}: {exc}".rstrip(": "))
    if result.status != 200:
        raise BadRequest(f"Download failed: HTTP {result.status}")
    if result.truncated:
        raise BadRequest(f"Download is larger than {max_bytes} bytes")
    return result.body


def _hub_url(config: Config) -> str:
    if not config.skills_hub_url.strip():
        raise BadRequest("No skills hub is configured (setting skills_hub_url)")
    return config.skills_hub_url.strip()


def _hub_item(raw: Any, base: str) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("slug"), str) or not raw["slug"].strip():
        return None
    link = raw.get("downloadUrl") or raw.get("url")
    try:
        absolute = str(yarl.URL(base).join(yarl.URL(link))) if isinstance(link, str) and link.strip() else None
    except ValueError:
        absolute = None
    tags = raw["tags"] if isinstance(raw.get("tags"), list) else []
    return {
        "slug": raw["slug"].strip()[:128],
        "name": str(raw.get("name") or raw["slug"])[:200],
        "description": str(raw.get("description") or "")[:2000],
        "version": str(raw.get("version") or "")[:50],
        "author": str(raw.get("author") or "")[:200],
        "tags": [str(t)[:50] for t in tags][:20],
        "downloadUrl": absolute,
    }


async def hub_index(config: Config) -> list[dict[str, Any]]:
    """The hub's skills: a JSON list, or `{skills: [...]}`, of `{slug, name, description, version, downloadUrl}`."""
    base = _hub_url(config)
    try:
        body = await download(config, base, HUB_INDEX_MAX_BYTES)
    except BadRequest as exc:
        raise ApiError(f"Skills hub unavailable: {exc.msg}", 503)
    try:
        data = json.loads(body)
    except ValueError:
        raise ApiError("Skills hub unavailable: the index is not JSON", 503)
    raw = data.get("skills") if isinstance(data, dict) else data
    items = [_hub_item(r, base) for r in (raw if isinstance(raw, list) else [])]
    return [i for i in items if i is not None]


async def hub_search(config: Config, caller: Caller, keyword: str | None, limit: int) -> dict[str, Any]:
    items = await hub_index(config)
    kw = (keyword or "").strip().lower()
    if kw:
        items = [i for i in items if kw in " ".join([i["slug"], i["name"], i["description"], *i["tags"]]).lower()]
    installed = {s.name for s in Skill.select(Skill.name).where(Skill.workspace_id == caller.workspace_id)}
    for item in items:
        item["installed"] = fm.slugify(item["slug"]) in installed or item["slug"] in installed
    return {"hubUrl": _hub_url(config), "total": len(items), "items": items[:limit]}


# ---- install tasks --------------------------------------------------------------------------


def _iso(ts: float) -> str | None:
    return iso(dt.datetime.fromtimestamp(ts, dt.timezone.utc).replace(tzinfo=None))


def _running_installs() -> list[str]:
    return [r.task_id for r in InstallTaskRow.select(InstallTaskRow.task_id).where(InstallTaskRow.status.in_(RUNNING))]


def fail_lost(task_ids: list[str]) -> int:
    """Installs whose process stopped (a lapsed lease, or a restart): failed, saying so (nothing half-written stays:
    a skill is written in one transaction)."""
    if not task_ids:
        return 0
    done = InstallTaskRow.update(status="failed", message=LOST_ERROR, update_time=utcnow()).where(
        InstallTaskRow.task_id.in_(task_ids) & InstallTaskRow.status.in_(RUNNING)
    )
    return int(done.execute())


def fail_left_running() -> int:
    """At the leader's start: installs a stopped process left running."""
    return fail_lost(_running_installs())


RUNS = RunKind("skill-install:", _running_installs, fail_lost)  # leased while they run here (platform_server/leases.py)


@dataclass
class InstallTask:
    id: str
    workspace_id: int
    user_id: int
    source: str
    status: str = "pending"  # pending | downloading | installing | completed | failed | cancelled
    message: str = "Queued"
    skill_id: int | None = None
    skill_name: str | None = None
    replaced: bool = False
    committed: bool = False  # the skill is written: too late to cancel
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    task: asyncio.Task[None] | None = None

    def set(self, status: str, message: str) -> bool:
        """Record the task's new state (stored: any process answers its status); False, changing nothing, when it
        already ended (cancelled through another process)."""
        now = time.time()
        stamp = dt.datetime.fromtimestamp(now, dt.timezone.utc).replace(tzinfo=None)
        fields = {"status": status, "message": message, "source": self.source, "skill_id": self.skill_id, "skill_name": self.skill_name}
        done = InstallTaskRow.update(**fields, replaced=self.replaced, committed=self.committed, update_time=stamp).where(
            (InstallTaskRow.task_id == self.id) & InstallTaskRow.status.in_(RUNNING)
        )
        if not done.execute():
            return False
        self.status, self.message, self.updated = status, message, now
        return True

    @classmethod
    def of(cls, row: InstallTaskRow) -> InstallTask:
        created, updated = (t.replace(tzinfo=dt.timezone.utc).timestamp() for t in (row.create_time, row.update_time))
        return cls(row.task_id, row.workspace_id, row.user_id, row.source, row.status, row.message, row.skill_id, row.skill_name,
                   bool(row.replaced), bool(row.committed), created, updated)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "taskId": self.id,
            "status": self.status,
            "message": self.message,
            "source": self.source,
            "skillId": None if self.skill_id is None else str(self.skill_id),
            "skillName": self.skill_name,
            "replaced": self.replaced,
            "createTime": _iso(self.created),
            "updateTime": _iso(self.updated),
            "finished": self.status not in RUNNING,
        }


Blocking = Callable[..., Awaitable[Any]]


class CancelledElsewhere(Exception):
    """The task was cancelled through another process (its row says so): stop before writing the skill."""


class InstallTasks:
    """Install tasks: stored (`skill_install_task`), run by the process that started them, which holds their lease."""

    def __init__(self, config: Config, blocking: Blocking, after_install: Callable[[Skill], Awaitable[None]]) -> None:
        self.config = config
        self.blocking = blocking
        self.after_install = after_install
        self.tasks: dict[str, InstallTask] = {}  # the ones running here

    def _prune(self) -> None:
        old = utcnow() - dt.timedelta(seconds=TASK_RETENTION_S)
        InstallTaskRow.delete().where(InstallTaskRow.status.not_in(RUNNING) & (InstallTaskRow.update_time < old)).execute()
        if InstallTaskRow.select().count() >= MAX_TASKS:
            raise ApiError("Too many install tasks, please try again later", 429)

    def get(self, caller: Caller, task_id: str) -> InstallTask:
        row = InstallTaskRow.get_or_none(InstallTaskRow.task_id == task_id)
        if row is None or row.workspace_id != caller.workspace_id:
            raise NotFound("Install task not found")
        return InstallTask.of(row)

    async def resolve(self, url: str | None, slug: str | None) -> str:
        if url:
            return url
        wanted = (slug or "").strip()
        for item in await hub_index(self.config):
            if item["slug"] == wanted:
                if not item["downloadUrl"]:
                    raise BadRequest(f"Hub skill '{wanted}' has no download URL")
                return item["downloadUrl"]
        raise BadRequest(f"Hub has no skill '{wanted[:128]}'")

    def start(self, caller: Caller, url: str | None, slug: str | None, overwrite: bool) -> InstallTask:
        """Start downloading and installing in the background; poll `status/{taskId}`."""
        if bool(url) == bool(slug):
            raise BadRequest("Give exactly one of url and slug")
        if slug:
            _hub_url(self.config)
        self._prune()
        task = InstallTask(uuid.uuid4().hex, caller.workspace_id, caller.user_id, url or f"hub:{slug}")
        InstallTaskRow.create(task_id=task.id, workspace_id=task.workspace_id, user_id=task.user_id, source=task.source)
        self.tasks[task.id] = task
        leases.hold(RUNS, task.id)
        task.task = asyncio.get_running_loop().create_task(self._run(task, caller, url, slug, overwrite))
        return task

    async def _run(self, task: InstallTask, caller: Caller, url: str | None, slug: str | None, overwrite: bool) -> None:
        try:
            self._step(task, "downloading", "Resolving the hub skill" if slug else "Downloading")
            target = await self.resolve(url, slug)
            task.source = target
            self._step(task, "downloading", "Downloading")
            archive = await download(self.config, target, self.config.skills_install_max_bytes)
            self._step(task, "installing", "Installing")
            bundle = await self.blocking(read_zip, archive)
            with database.atomic():  # the skill and "too late to cancel" in one commit; a cancel stored before wins
                if InstallTaskRow.get(InstallTaskRow.task_id == task.id).status not in RUNNING:
                    raise CancelledElsewhere()
                skill, replaced = install_bundle(caller, bundle, target, overwrite)
                task.committed = True
                task.skill_id, task.skill_name, task.replaced = skill.id, skill.name, replaced
                task.set("installing", "Installing")
            await self.after_install(skill)
            task.set("completed", f"Installed skill '{skill.name}'")
        except (asyncio.CancelledError, CancelledElsewhere):
            task.set("cancelled", "Cancelled")
        except ApiError as exc:
            task.set("failed", exc.msg)
        except Exception as exc:  # noqa: BLE001 - a task reports every failure in its status
            task.set("failed", f"Install failed: {type(exc).__name__}")
        finally:
            self.tasks.pop(task.id, None)
            leases.release(RUNS, task.id)

    @staticmethod
    def _step(task: InstallTask, status: str, message: str) -> None:
        if not task.set(status, message):
            raise CancelledElsewhere()

    def cancel(self, caller: Caller, task_id: str) -> InstallTask:
        """Cancel a running install from any process: the row says so at once; the process running it stops it (here at
        once, elsewhere before its next step, and before it writes the skill)."""
        task = self.get(caller, task_id)
        if task.status in RUNNING and not task.committed:
            InstallTaskRow.update(status="cancelled", message="Cancelled", update_time=utcnow()).where(
                (InstallTaskRow.task_id == task_id) & InstallTaskRow.status.in_(RUNNING) & (InstallTaskRow.committed == 0)
            ).execute()
            running = self.tasks.get(task_id)
            if running is not None and running.task is not None:
                running.task.cancel()
        return self.get(caller, task_id)

    async def close(self) -> None:
        running = [t.task for t in self.tasks.values() if t.task is not None and not t.task.done()]
        for t in running:
            t.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
