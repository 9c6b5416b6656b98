"""Seed the skill templates and built-in skills, and create the skills runtime."""
from __future__ import annotations

from typing import Any

from platform_server.features.skills import catalog
from platform_server.features.skills.runtime import SkillsRuntime
from platform_server.features.workspaces.models import Workspace


async def start(platform: Any) -> None:
    catalog.seed_templates()
    runtime = SkillsRuntime(platform.config)
    platform.services["skills"] = runtime
    for workspace in Workspace.select(Workspace.id):
        await runtime.ensure_workspace(workspace.id)


async def stop(platform: Any) -> None:
    runtime = platform.services.pop("skills", None)
    if runtime is not None:
        await runtime.close()
