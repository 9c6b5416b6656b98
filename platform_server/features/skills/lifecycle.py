"""Seed the skill templates and built-in skills, create the skills runtime, fail installs a stopped process left running."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server import leases, storage
from platform_server.features.skills import SKILLS, SKILLS_INSTALL_SWEEP, catalog, curator_runtime, install
from platform_server.features.skills.runtime import SkillsRuntime
from platform_server.features.workspaces.models import Workspace
from platform_server.ports import leader

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    catalog.seed_templates()
    runtime = SkillsRuntime(platform.config)
    platform.set_runtime(SKILLS, runtime)
    for workspace in Workspace.select(Workspace.id):
        await runtime.ensure_workspace(workspace.id)
    await curator_runtime.start(platform)
    if leader.is_leader():  # installs a stopped process left running fail (a joining process leaves the others' alone)
        storage.start_write(platform.storage, "failing skill installs left running", install.fail_left_running)
    if sweep := leases.start_sweep(platform.config, install.RUNS):  # several processes: a killed process's installs fail
        platform.set_runtime(SKILLS_INSTALL_SWEEP, sweep)


async def stop(platform: Platform) -> None:
    if sweep := platform.find_runtime(SKILLS_INSTALL_SWEEP):
        sweep.stop()
    await curator_runtime.stop(platform)
    await platform.runtime(SKILLS).close()
