"""ACP endpoint rows: built-ins, custom endpoints, the working folder confined to <data_dir>/acp/<workspaceId>, the test.

Endpoints are global and run commands on the host, so only a global admin changes or tests them.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

from platform_server.db import database, iso, utcnow
from platform_server.features.acp.models import AcpEndpoint
from platform_server.features.acp.schemas import MASK, AcpCreate, AcpUpdate
from platform_server.features.audit import service as audit
from platform_server.integrations.acp_client import AcpHandshake
from platform_server.ports import files as file_store
from platform_server.serialize import Fields, flag, ident, items, when
from platform_server.web.context import Caller
from platform_server.web.errors import BadRequest, NotFound

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_ENV = 50

BUILTINS: tuple[dict[str, Any], ...] = (
    {
        "name": "claude-code",
        "display_name": "Claude Code",
        "command": "npx",
        "args": ["-y", "@zed-industries/claude-code-acp"],
        "description": "Claude Code through its ACP adapter",
    },
    {
        "name": "gemini-cli",
        "display_name": "Gemini CLI",
        "command": "gemini",
        "args": ["--experimental-acp"],
        "description": "Gemini CLI in ACP mode",
    },
    {
        "name": "codex",
        "display_name": "Codex",
        "command": "npx",
        "args": ["-y", "@zed-industries/codex-acp"],
        "description": "Codex through its ACP adapter",
    },
)


# ---- validation ---------------------------------------------------------------------------


def check_cwd(rel: str) -> str:
    """A normalized folder path relative to the ACP root; no absolute paths, `..`, or odd characters."""
    if rel.startswith("/") or re.match(r"^[A-Za-z]:", rel):
        raise BadRequest("cwd: must be relative to the ACP folder")
    if "\\" in rel or any(ord(c) < 0x20 or c == "\x7f" for c in rel):
        raise BadRequest("cwd: backslashes and control characters are not allowed")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BadRequest("cwd: must stay inside the ACP folder")
    return "/".join(parts)


def _check_command(command: str, args: list[str]) -> str:
    text = command.strip()
    if not text or "\x00" in text:
        raise BadRequest("command: must be a non-empty command without NUL bytes")
    for arg in args:
        if "\x00" in arg or len(arg) > 4096:
            raise BadRequest("args: each argument must be at most 4096 characters without NUL bytes")
    return text


def _merge_env(given: dict[str, str], stored: dict[str, str]) -> dict[str, str]:
    if len(given) > MAX_ENV:
        raise BadRequest(f"env: at most {MAX_ENV} entries")
    out: dict[str, str] = {}
    for key, value in given.items():
        if not ENV_NAME_RE.match(key):
            raise BadRequest(f"env: invalid name '{key[:64]}'")
        if value == MASK:
            if key not in stored:
                raise BadRequest(f"env: '{key}' has no stored value to keep")
            value = stored[key]
        if "\x00" in value or len(value) > 8192:
            raise BadRequest(f"env: invalid value for '{key}'")
        out[key] = value
    return out


def working_dir(workspace_id: int, rel: str) -> pathlib.Path:
    """The endpoint's working folder for one workspace, created inside <data_dir>/acp/<workspaceId> (400 when a
    symlink leads outside): agents delegated to from different workspaces never share files."""
    root = file_store.current().path("acp", int(workspace_id)).resolve()
    root.mkdir(parents=True, exist_ok=True)
    target = root.joinpath(*[p for p in check_cwd(rel).split("/") if p])

    def inside() -> pathlib.Path:
        real = target.resolve()
        if real != root and not real.is_relative_to(root):
            raise BadRequest("cwd: resolves outside the ACP folder")
        return real

    inside()  # checked first, so no folder is ever made through a link
    target.mkdir(parents=True, exist_ok=True)
    return inside()


# ---- rows ---------------------------------------------------------------------------------


def seed_builtins() -> None:
    for spec in BUILTINS:
        if AcpEndpoint.get_or_none(AcpEndpoint.name == spec["name"]) is None:
            with database.atomic():
                AcpEndpoint.create(builtin=True, enabled=False, **spec)


to_dict = Fields(
    id=ident("id"),
    name="name",
    displayName=lambda row: row.display_name or row.name,
    description="description",
    command="command",
    args=items("args"),
    env=lambda row: {k: MASK for k in (row.env or {})},
    cwd="cwd",
    enabled=flag("enabled"),
    builtin=flag("builtin"),
    lastTest=lambda row: row.last_test or None,
    createTime=when("create_time"),
    updateTime=when("update_time"),
)


def get_row(endpoint_id: int) -> AcpEndpoint:
    row = AcpEndpoint.get_or_none(AcpEndpoint.id == endpoint_id)
    if row is None:
        raise NotFound("ACP endpoint not found")
    return row


def list_all() -> list[dict[str, Any]]:
    """Built-ins first, then custom endpoints by name."""
    return [to_dict(r) for r in AcpEndpoint.select().order_by(AcpEndpoint.builtin.desc(), AcpEndpoint.name)]


def _name_free(name: str, own_id: int | None = None) -> None:
    other = AcpEndpoint.get_or_none(AcpEndpoint.name == name)
    if other is not None and other.id != own_id:
        raise BadRequest(f"An ACP endpoint named '{name}' already exists")


def create(caller: Caller, req: AcpCreate) -> dict[str, Any]:
    _name_free(req.name)
    row = AcpEndpoint(
        name=req.name,
        display_name=req.displayName,
        description=req.description,
        command=_check_command(req.command, req.args),
        args=list(req.args),
        env=_merge_env(req.env, {}),
        cwd=check_cwd(req.cwd),
        enabled=req.enabled,
        builtin=False,
    )
    audit.save(caller, "CREATE", "ACP_ENDPOINT", row, f"ACP endpoint {row.name}: {row.command}")
    return to_dict(row)


def update(caller: Caller, endpoint_id: int, req: AcpUpdate) -> dict[str, Any]:
    """Sparse update; a built-in keeps its name; `******` as an env value keeps the stored one."""
    row = get_row(endpoint_id)
    if req.name is not None and req.name != row.name:
        if row.builtin:
            raise BadRequest("name: a built-in endpoint cannot be renamed")
        _name_free(req.name, int(row.id))
        row.name = req.name
    if req.args is not None:
        row.args = list(req.args)
    if req.command is not None or req.args is not None:
        row.command = _check_command(req.command if req.command is not None else row.command, row.args)
    if req.env is not None:
        row.env = _merge_env(req.env, row.env or {})
    if req.cwd is not None:
        row.cwd = check_cwd(req.cwd)
    for field, attr in (("displayName", "display_name"), ("description", "description"), ("enabled", "enabled")):
        value = getattr(req, field)
        if value is not None:
            setattr(row, attr, value)
    changed = ", ".join(req.model_dump(exclude_none=True)) or "no change"
    row.update_time = utcnow()
    audit.save(caller, "UPDATE", "ACP_ENDPOINT", row, f"ACP endpoint {row.name}: {changed}")
    return to_dict(row)


def toggle(caller: Caller, endpoint_id: int, enabled: bool | None) -> dict[str, Any]:
    """Enable or disable; no value flips it (as every toggle: the body is optional)."""
    row = get_row(endpoint_id)
    enabled = (not row.enabled) if enabled is None else enabled
    row.enabled = enabled
    row.update_time = utcnow()
    audit.save(caller, "UPDATE", "ACP_ENDPOINT", row, f"ACP endpoint {row.name} {'enabled' if enabled else 'disabled'}")
    return to_dict(row)


def delete(caller: Caller, endpoint_id: int) -> None:
    row = get_row(endpoint_id)
    if row.builtin:
        raise BadRequest("Built-in ACP endpoints cannot be deleted (disable them instead)")
    audit.save(caller, "DELETE", "ACP_ENDPOINT", row, f"ACP endpoint {row.name}")


def record_test(endpoint_id: int, result: AcpHandshake) -> dict[str, Any]:
    """Keep the outcome on the row and answer `{success, message, protocolVersion, agentInfo?, latencyMs}`."""
    answer: dict[str, Any] = {
        "success": result.success,
        "message": result.message,
        "protocolVersion": result.protocol_version,
        "latencyMs": result.latency_ms,
    }
    if result.agent_info is not None:
        answer["agentInfo"] = result.agent_info
    if result.success:
        answer["agentCapabilities"] = result.agent_capabilities
        answer["authMethods"] = result.auth_methods
    with database.atomic():
        AcpEndpoint.update(
            last_test={"success": result.success, "message": result.message[:500], "protocolVersion": result.protocol_version, "time": iso(utcnow())}
        ).where(AcpEndpoint.id == endpoint_id).execute()
    return answer
