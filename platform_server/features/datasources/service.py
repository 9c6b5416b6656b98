"""Datasources: workspace-scoped, secrets masked, tested for real, queried read-only by the `query_datasource` tool."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import JsonValue

from platform_server.blocking import run_blocking
from platform_server.config import Config
from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.datasources import sqlite_guard
from platform_server.features.datasources.models import Datasource
from platform_server.features.datasources.schemas import HTTP_URL_RE, config_kinds
from platform_server.features.tools.registry import ToolError
from platform_server.features.workspaces import service as workspaces
from platform_server.integrations import net_guard
from platform_server.integrations.secret_origin import carry
from platform_server.ports import files as file_store
from platform_server.serialize import Fields, ident, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, Conflict, Forbidden, NotFound

QUERY_TIMEOUT_S = sqlite_guard.QUERY_TIMEOUT_S
MASK = "********"


def roots(config: Config, workspace_id: int) -> list[Path]:
    """Folders a SQLite datasource of one workspace may live in: `<data_dir>/datasources/<workspaceId>`
    and `<root>/<workspaceId>` of each `datasource_roots` folder (no workspace reaches another's files)."""
    bases = [file_store.current().path("datasources"), *(Path(r) for r in config.datasource_roots)]
    return [(base / str(int(workspace_id))).resolve() for base in bases]


def check_sqlite_path(config: Config, raw: str, workspace_id: int) -> str:
    """An existing file inside one of the workspace's roots (relative paths: from `<data_dir>/datasources/<ws>`)."""
    if not raw or "\x00" in raw:  # schemas.SQLITE_CONFIG
        raise BadRequest("config.path: required")
    allowed = roots(config, workspace_id)
    base = allowed[0]
    path = (base / raw).resolve() if not Path(raw).is_absolute() else Path(raw).resolve()
    # Where the path points and whether a file is there are facts of the machine, not of the request's shape
    if not any(r in path.parents for r in allowed):
        raise Forbidden("config.path: must be inside <data_dir>/datasources/<workspaceId> or <datasource root>/<workspaceId>")
    if not path.is_file():
        raise NotFound("config.path: no such file")
    try:
        return sqlite_guard.check_file(path, config.data_dir, allowed)
    except sqlite_guard.Refused as exc:
        raise BadRequest(f"config.path: {exc}") from None


def clean_config(config: Config, kind: str, raw: dict[str, Any], workspace_id: int, old: dict[str, Any] | None = None) -> dict[str, Any]:
    if kind == "sqlite":
        return {"path": check_sqlite_path(config, str(raw.get("path") or ""), workspace_id)}
    base_url = raw.get("baseUrl")  # schemas.HTTP_CONFIG states these rules
    if not isinstance(base_url, str) or not HTTP_URL_RE.fullmatch(base_url) or len(base_url) > 2000:
        raise BadRequest("config.baseUrl: must be an http(s) URL")
    headers = raw.get("headers", {})
    if not isinstance(headers, dict) or len(headers) > 20:
        raise BadRequest("config.headers: must be an object of at most 20 headers")
    # Header values stored for another origin are not sent to this one (integrations.secret_origin).
    given, previous = carry(headers, (old or {}).get("headers", {}), MASK, (old or {}).get("baseUrl"), base_url.rstrip("/"))
    headers = given or {}
    clean = {}
    for key, value in headers.items():
        if not isinstance(value, str) or len(value) > 4000:  # names: OpenAPI 3.0 has no propertyNames to state a limit
            raise BadRequest("config.headers: values must be strings of at most 4000 characters")
        clean[str(key)] = previous.get(key, "") if value == MASK else value  # the mask keeps the stored value
    return {"baseUrl": base_url.rstrip("/"), "headers": clean}


def _masked_config(d: Datasource) -> dict[str, Any]:
    config = dict(d.config or {})
    if "headers" in config:
        config["headers"] = {k: MASK for k in config["headers"]}
    return config


to_dict = Fields(
    id=ident("id"),
    workspaceId=ident("workspace_id"),
    name="name",
    type="type",
    description="description",
    config=_masked_config,
    enabled="enabled",
    lastTestOk="last_test_ok",
    lastTestTime=when("last_test_time"),
    createTime=when("create_time"),
    updateTime=when("update_time"),
)
# The answer model: the map reads plain attributes (no wrapper per field when serving), so their types are given here.
DatasourceView = to_dict.view(
    "DatasourceView",
    name=(str, ...),
    type=(Literal["sqlite", "http"], ...),
    description=(str, ...),
    config=(dict[str, JsonValue], pydantic.Field(description="the connection settings as given, secrets masked")),
    enabled=(bool, ...),
    lastTestOk=(bool | None, pydantic.Field(description="the last test's outcome; null before the first")),
)


def _get(caller: Caller, ds_id: int) -> Datasource:
    row = Datasource.get_or_none((Datasource.id == ds_id) & (Datasource.workspace_id == caller.workspace_id))
    if row is None:
        raise NotFound("Datasource not found")
    return row


def list_for(caller: Caller) -> list[dict[str, Any]]:
    q = Datasource.select().where(Datasource.workspace_id == caller.workspace_id).order_by(Datasource.name)
    return [to_dict(d) for d in q]


def get(caller: Caller, ds_id: int) -> dict[str, Any]:
    return to_dict(_get(caller, ds_id))


def _unique_name(caller: Caller, name: str, exclude: int | None = None) -> None:
    q = Datasource.select().where((Datasource.workspace_id == caller.workspace_id) & (Datasource.name == name))
    if exclude is not None:
        q = q.where(Datasource.id != exclude)
    if q.exists():
        raise Conflict("name: a datasource with this name exists in the workspace")  # another row's state: 409


def create(caller: Caller, config: Config, name: str, kind: str, description: str, raw: dict[str, Any], enabled: bool) -> dict[str, Any]:
    clean = clean_config(config, kind, raw, caller.workspace_id)
    with database.atomic():
        _unique_name(caller, name)
        row = Datasource.create(
            workspace_id=caller.workspace_id,
            name=name,
            type=kind,
            description=description,
            config=clean,
            enabled=enabled,
            creator_user_id=caller.user_id,
        )
        audit.record(caller, "CREATE", "DATASOURCE", row.id, f"{kind} datasource {name}")
    return to_dict(row)


def update(caller: Caller, config: Config, ds_id: int, changes: dict[str, Any]) -> dict[str, Any]:
    row = _get(caller, ds_id)
    if "config" in changes:
        kinds = config_kinds(changes["config"])
        if not kinds:
            raise BadRequest("config: must be a sqlite config {path} or an http config {baseUrl, headers}")
        if row.type not in kinds:  # well formed, the other type's: what the datasource is refuses it
            raise Conflict(f"config: a datasource of type {row.type} takes a {row.type} config")
    clean = clean_config(config, row.type, changes["config"], row.workspace_id, row.config) if "config" in changes else None
    with database.atomic():
        if "name" in changes:
            _unique_name(caller, changes["name"], exclude=row.id)
            row.name = changes["name"]
        if "description" in changes:
            row.description = changes["description"]
        if "enabled" in changes:
            row.enabled = changes["enabled"]
        if clean is not None:
            row.config = clean
        row.update_time = utcnow()
        row.save()
        audit.record(caller, "UPDATE", "DATASOURCE", row.id, ", ".join(sorted(changes)))
    return to_dict(row)


def toggle(caller: Caller, config: Config, ds_id: int, enabled: bool | None) -> dict[str, Any]:
    """Enable or disable; no value flips it, as the API's other toggles do."""
    row = _get(caller, ds_id)
    return update(caller, config, ds_id, {"enabled": (not row.enabled) if enabled is None else enabled})


def delete(caller: Caller, ds_id: int) -> None:
    row = _get(caller, ds_id)
    with database.atomic():
        row.delete_instance()
        audit.record(caller, "DELETE", "DATASOURCE", ds_id, row.name)


# ---- connections -------------------------------------------------------------------------


def _sqlite_query(config: Config, row: Datasource, sql: str) -> dict[str, Any]:
    """One read-only statement on the row's file, checked again now (blocking: call in an executor)."""
    return sqlite_guard.run_query(row.config["path"], sql, config.data_dir, roots(config, row.workspace_id))


async def _http_get(config: Config, row: Datasource, path: str) -> net_guard.FetchResult:
    url = row.config["baseUrl"] + ("/" + path.lstrip("/") if path.strip("/") else "")
    return await net_guard.fetch(
        url, allow_hosts=config.web_fetch_allow_hosts, headers=row.config.get("headers"), max_bytes=512 * 1024, timeout_s=QUERY_TIMEOUT_S
    )


async def test(caller: Caller, config: Config, ds_id: int) -> dict[str, Any]:
    """Connect for real; record and return the outcome."""
    row = _get(caller, ds_id)
    started = time.monotonic()
    try:
        if row.type == "sqlite":
            result = await run_blocking(_sqlite_query, config, row, "SELECT count(*) FROM sqlite_master")
            message = f"{result['rows'][0][0]} schema objects"
        else:
            fetched = await _http_get(config, row, "")
            if fetched.status >= 400:
                raise ValueError(f"HTTP {fetched.status}")
            message = f"HTTP {fetched.status}"
        ok = True
    except (sqlite3.Error, sqlite_guard.Refused, net_guard.BlockedUrl, ValueError, OSError, TimeoutError) as exc:
        ok, message = False, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - a failed connection is the answer, not a crash
        ok, message = False, f"{type(exc).__name__}: {exc}"
    Datasource.update(last_test_ok=ok, last_test_time=utcnow()).where(Datasource.id == row.id).execute()
    return {"success": ok, "message": message, "latencyMs": int((time.monotonic() - started) * 1000)}


async def query_tool(config: Config, args: dict[str, Any], ctx: Any) -> str:
    """The `query_datasource` tool: a read-only SQL statement or an HTTP GET path."""

    row = Datasource.get_or_none((Datasource.workspace_id == ctx.workspace_id) & (Datasource.name == args["datasource"]))
    if row is None or not row.enabled:
        raise ToolError(f"No enabled datasource named {args['datasource']!r} in this workspace")
    query = str(args["query"])
    refusal = workspaces.host_tool_refusal(ctx.workspace_id, "sql") if row.type == "sqlite" else ""
    if refusal:  # SQL datasources are a host tool: a global admin enables them per workspace
        raise ToolError(refusal)
    try:
        if row.type == "sqlite":
            return json.dumps(await run_blocking(_sqlite_query, config, row, query), default=str)
        fetched = await _http_get(config, row, query)
        return f"HTTP {fetched.status}\n" + fetched.body.decode(fetched.charset or "utf-8", "replace")
    except sqlite3.Error as exc:
        if sqlite_guard.is_refusal(exc):
            raise ToolError(f"query not authorized: {sqlite_guard.REFUSAL}")
        raise ToolError(f"query failed: {exc}")
    except sqlite_guard.Refused as exc:
        raise ToolError(f"refused: {exc}")
    except net_guard.BlockedUrl as exc:
        raise ToolError(f"refused: {exc}")
