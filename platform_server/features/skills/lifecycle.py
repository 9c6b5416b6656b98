"""Seed the skill templates and built-in skills, and create the skills runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.skills import SKILLS, catalog, curator_runtime
from platform_server.features.skills.runtime import SkillsRuntime
from platform_server.features.workspaces.models import Workspace

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    catalog.seed_templates()
    runtime = SkillsRuntime(platform.config)
    platform.set_runtime(SKILLS, runtime)
    for workspace in Workspace.select(Workspace.id):
        await runtime.ensure_workspace(workspace.id)
    await curator_runtime.start(platform)


async def stop(platform: Platform) -> None:
    await curator_runtime.stop(platform)
    await platform.runtime(SKILLS).close()
