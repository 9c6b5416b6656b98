"""The built-in system tools: time, the agent's workspace files, and the (off by default, sandboxed) shell."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import pathlib
import signal
import stat
import zoneinfo
from typing import Any, Callable, TypeVar

from platform_server.blocking import run_blocking
from platform_server.features.agents import files
from platform_server.features.agents import service as agents
from platform_server.features.tools.registry import ToolContext, ToolDefinition, ToolError
from platform_server.features.tools.web_fetch import WEB_FETCH
from platform_server.features.workspaces import service as workspaces
from platform_server.integrations import sandbox
from platform_server.web.errors import ApiError, BadRequest, NotFound

T = TypeVar("T")

READ_CAP_BYTES = 256 * 1024
WRITE_CAP_BYTES = 10 * 1024 * 1024
LIST_CAP_ENTRIES = 1000
SHELL_OUTPUT_CAP_BYTES = 64 * 1024


# ---- get_current_time -------------------------------------------------------------------


async def get_current_time(args: dict[str, Any], ctx: ToolContext) -> str:
    name = (args.get("timezone") or ctx.config.timezone or "UTC").strip()
    try:
        zone = zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ToolError(f"Unknown time zone: {name} (use an IANA name such as Europe/Paris)") from None
    now = dt.datetime.now(zone)
    return f"{now.isoformat(timespec='seconds')} ({name}, {now.strftime('%A')})"


# ---- workspace files (the same files as /api/v1/agents/{id}/workspace/files/**) ---------


def _root(ctx: ToolContext) -> pathlib.Path:
    ctx.agent_dir.mkdir(parents=True, exist_ok=True)
    return ctx.agent_dir


def _check_private(ctx: ToolContext, rel: str) -> None:
    """An end user's turn reaches only its own `memory/users/<key>/` notes, never another end user's."""
    if not ctx.end_user_id:
        return
    parts = [p.lower() for p in files.split_rel(rel)] if rel not in ("", ".", "./") else []
    if parts[:2] == ["memory", "users"] and (len(parts) < 3 or parts[2] != agents.end_user_key(ctx.end_user_id).lower()):
        raise ToolError(f"Another end user's notes are private: {rel}")


def _confined(fn: Callable[..., T], *args: Any) -> T:
    """Run a confined file operation; its API errors (escape, symlink, missing) become tool failures."""
    try:
        return fn(*args)
    except ApiError as exc:
        raise ToolError(f"{exc.msg}: {args[1]}" if len(args) > 1 else exc.msg) from None


def _list(root: pathlib.Path, rel: str) -> str:
    parts = files.split_rel(rel) if rel not in ("", ".", "./") else []
    target = files.resolve_inside(root, rel) if parts else root
    if not target.exists():
        raise NotFound("No such directory")
    if not target.is_dir():
        raise BadRequest("Not a directory")
    lines: list[str] = []
    entries = sorted(os.scandir(target), key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
    entries = [e for e in entries if not e.name.startswith(".tmp-")]
    for entry in entries[:LIST_CAP_ENTRIES]:
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            lines.append(f"{entry.name} (symlink)")
        elif stat.S_ISDIR(info.st_mode):
            lines.append(f"{entry.name}/")
        else:
            lines.append(f"{entry.name} ({info.st_size} bytes)")
    if len(entries) > LIST_CAP_ENTRIES:
        lines.append(f"[{len(entries) - LIST_CAP_ENTRIES} more entries not shown]")
    header = f"Directory {'/'.join(parts) or '.'}: {len(entries)} entries"
    return "\n".join([header, *lines]) if lines else header + " (empty)"


async def list_files(args: dict[str, Any], ctx: ToolContext) -> str:
    _check_private(ctx, args.get("path") or ".")
    return await run_blocking(_confined, _list, _root(ctx), args.get("path") or ".")


def _read(root: pathlib.Path, rel: str) -> str:
    try:
        data = files.read_bytes(root, rel, READ_CAP_BYTES)
        note = ""
    except BadRequest as exc:
        if not exc.msg.startswith("File is larger"):
            raise
        size = files.stat_file(root, rel)["size"]
        text = files.read_text_capped(root, rel, READ_CAP_BYTES)
        if text is None:
            raise
        data = text.encode("utf-8")
        note = f"\n[truncated: file is {size} bytes, showing the first {READ_CAP_BYTES}]"
    if b"\x00" in data[:8192]:
        raise BadRequest("Binary file; only text files can be read")
    return data.decode("utf-8", "replace") + note


async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    _check_private(ctx, str(args["path"]))
    return await run_blocking(_confined, _read, _root(ctx), args["path"])


def _write(root: pathlib.Path, rel: str, content: bytes) -> str:
    created = files.write_bytes(root, rel, content)
    shown = "/".join(files.split_rel(rel))
    return f"{'Created' if created else 'Overwrote'} {shown} ({len(content)} bytes)"


async def write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolError("Argument 'content' must be a string")
    _check_private(ctx, str(args["path"]))
    data = content.encode("utf-8", "replace")
    if len(data) > WRITE_CAP_BYTES:
        raise ToolError(f"Content too large: {len(data)} bytes (limit {WRITE_CAP_BYTES})")
    return await run_blocking(_confined, _write, _root(ctx), args["path"], data)


# ---- shell_exec ---------------------------------------------------------------------------


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


async def shell_exec(args: dict[str, Any], ctx: ToolContext) -> str:
    """Run the command with /bin/sh in the sandbox: the agent's folder read-write at /workspace, nothing else."""
    if not ctx.config.shell_exec_enabled:
        raise ToolError("shell_exec is disabled on this server (an administrator can enable it with the shell_exec_enabled setting)")
    command = args["command"]
    if not command.strip() or "\x00" in command:
        raise ToolError("Argument 'command' must be a non-empty command line")
    try:
        await sandbox.ensure_ready(ctx.config)
    except sandbox.SandboxUnavailable as exc:
        raise ToolError(f"{exc}. The command was not run.") from None
    root = _root(ctx)
    await run_blocking(sandbox.prepare_workdir, ctx.config, root)
    network = ctx.config.sandbox_network or "network" in workspaces.host_tools(ctx.workspace_id)
    env = {**ctx.secret_env, **sandbox.base_env()}
    run = sandbox.build(ctx.config, ["/bin/sh", "-c", command], workdir=root, network=network, env=env)
    proc = await asyncio.create_subprocess_exec(
        *run.argv,
        env=run.env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    chunks: list[bytes] = []
    size = 0

    async def pump() -> None:
        nonlocal size
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            if size < SHELL_OUTPUT_CAP_BYTES:
                chunks.append(chunk[: SHELL_OUTPUT_CAP_BYTES - size])
            size += len(chunk)
        await proc.wait()

    timeout = ctx.config.shell_exec_timeout_s
    try:
        await asyncio.wait_for(pump(), timeout=timeout)
    except asyncio.TimeoutError:
        _kill_group(proc)
        await proc.wait()
        output = b"".join(chunks).decode("utf-8", "replace")
        raise ToolError(f"Command timed out after {timeout:g} seconds and was killed\n{output}".rstrip()) from None
    finally:
        _kill_group(proc)
    output = b"".join(chunks).decode("utf-8", "replace")
    if size > SHELL_OUTPUT_CAP_BYTES:
        output += f"\n[truncated: output was {size} bytes, showing the first {SHELL_OUTPUT_CAP_BYTES}]"
    text = f"exit code: {proc.returncode}\n{output}".rstrip()
    if proc.returncode != 0:
        note = sandbox.limit_note(ctx.config, proc.returncode, output)
        raise ToolError(f"{text}\n[{note}]" if note else text)
    return text


# ---- definitions --------------------------------------------------------------------------


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_PATH = {"type": "string", "description": "Path relative to the agent's workspace folder"}

BUILTIN_TOOLS: tuple[ToolDefinition, ...] = (
    ToolDefinition(
        "get_current_time",
        "Get the current date and time, optionally in an IANA time zone (for example Europe/Paris).",
        _schema({"timezone": {"type": "string", "description": "IANA time zone name; default: the server's"}}, []),
        get_current_time,
    ),
    ToolDefinition(
        "list_files",
        "List the files and folders in the agent's workspace folder (or a sub-folder of it).",
        _schema({"path": {**_PATH, "description": "Folder relative to the agent's workspace; default: its root"}}, []),
        list_files,
    ),
    ToolDefinition(
        "read_file",
        "Read a text file from the agent's workspace folder.",
        _schema({"path": _PATH}, ["path"]),
        read_file,
    ),
    ToolDefinition(
        "write_file",
        "Write a text file in the agent's workspace folder, creating folders as needed (replaces an existing file).",
        _schema({"path": _PATH, "content": {"type": "string", "description": "The full file content"}}, ["path", "content"]),
        write_file,
        min_role="member",
    ),
    WEB_FETCH,
    ToolDefinition(
        "shell_exec",
        "Run a shell command in a sandbox whose working folder (/workspace) is the agent's workspace folder; returns its exit code and output.",
        _schema({"command": {"type": "string", "description": "The command line, run with /bin/sh"}}, ["command"]),
        shell_exec,
        min_role="member",
        end_users=False,
        host="shell",
    ),
)
