"""The skills area's process state (`platform.runtime(SKILLS)`): secret key, seeding, cache sync, installs."""

from __future__ import annotations

import logging
from typing import Any

from platform_server.blocking import run_blocking
from platform_server.config import Config
from platform_server.features.skills import catalog, secrets, service, storage
from platform_server.features.skills.install import InstallTasks
from platform_server.features.skills.models import Skill

log = logging.getLogger(__name__)


blocking = run_blocking  # file work off the IOLoop (the name the skills area's modules use)


class SkillsRuntime:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.key = secrets.load_key(config.data_dir)
        self.seeded: set[int] = set()
        self.installs = InstallTasks(config, blocking, self.sync_skill)

    async def ensure_workspace(self, workspace_id: int) -> None:
        """Seed the built-in skills into a workspace the first time the skills area sees it."""
        if workspace_id in self.seeded:
            return
        if catalog.seed_builtins(workspace_id):
            await self.sync_workspace(workspace_id)
        self.seeded.add(workspace_id)

    async def sync_skill(self, skill: Skill) -> None:
        """Mirror one skill's SKILL.md and bundle files into its cache folder."""
        await blocking(storage.write_bundle, self.config, service.bundle_of(skill))

    async def sync_workspace(self, workspace_id: int) -> dict[str, Any]:
        bundles = [service.bundle_of(s) for s in service.workspace_skills(workspace_id)]
        return await blocking(storage.sync_all, self.config, bundles, workspace_id)

    async def remove_folder(self, workspace_id: int, name: str) -> None:
        await blocking(storage.remove_dir, self.config, workspace_id, name)

    async def close(self) -> None:
        await self.installs.close()
