"""Skills: reusable instruction bundles (SKILL.md plus files) that agents bind and the runtime appends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.skills.curator_runtime import Curator
    from platform_server.features.skills.runtime import SkillsRuntime
    from platform_server.leases import Sweep


SKILLS: RuntimeKey[SkillsRuntime] = RuntimeKey("skills")
SKILLS_CURATOR: RuntimeKey[Curator] = RuntimeKey("skills_curator")
SKILLS_INSTALL_SWEEP: RuntimeKey[Sweep] = RuntimeKey("skills_install_sweep")
