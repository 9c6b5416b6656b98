"""Starting an ACP agent for a workspace: its own folder `<data_dir>/acp/<workspaceId>/<cwd>`, in the sandbox."""

from __future__ import annotations

import os
import shutil

from platform_server.blocking import run_blocking
from platform_server.config import Config
from platform_server.features.acp import service
from platform_server.features.acp.models import AcpEndpoint
from platform_server.features.workspaces import service as workspaces
from platform_server.integrations import acp_client, sandbox
from platform_server.integrations.acp_client import AcpError, AcpHandshake, Launch


async def prepare(config: Config, row: AcpEndpoint, workspace_id: int) -> Launch:
    """The sandboxed launch of the endpoint's agent for one workspace; AcpError says why it cannot start."""
    env = {**sandbox.base_env(), **(row.env or {})}  # the endpoint's own values may set PATH or HOME
    command = row.command
    executable = shutil.which(command, path=env.get("PATH")) if os.sep not in command else command
    if executable is None or not os.path.isfile(executable) or not os.access(executable, os.X_OK):
        raise AcpError(f"Command not found or not executable: {command}")
    try:
        await sandbox.ensure_ready(config)
    except sandbox.SandboxUnavailable as exc:
        raise AcpError(str(exc)) from None
    workdir = await run_blocking(service.working_dir, workspace_id, row.cwd)
    await run_blocking(sandbox.prepare_workdir, config, workdir)
    network = config.sandbox_network or "network" in workspaces.host_tools(workspace_id)
    args = list(row.args or [])
    run = sandbox.build(config, [executable, *args], workdir=workdir, network=network, env=env, expose=sandbox.exposed_paths(executable, args))
    return Launch(run.argv, run.env, sandbox.WORKDIR, command)


async def test(config: Config, row: AcpEndpoint, workspace_id: int) -> AcpHandshake:
    """The endpoint test: spawn in the caller's workspace folder and do the `initialize` handshake."""
    try:
        launch = await prepare(config, row, workspace_id)
    except AcpError as exc:
        return AcpHandshake(False, str(exc), 0)
    return await acp_client.handshake(launch, config.acp_test_timeout_s)
