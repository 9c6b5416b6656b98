"""The curator's process side (`platform.runtime(SKILLS_CURATOR)`): dry runs, scheduled scans, applying, merging."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import TYPE_CHECKING, Any, Callable

from platform_server.db import database, utcnow
from platform_server.features.audit import service as audit
from platform_server.features.models import LLM
from platform_server.features.models.errors import LlmFailure, failure_text
from platform_server.features.models.runtime import resolve_targets
from platform_server.features.settings import service as settings_service
from platform_server.features.skills import SKILLS, SKILLS_CURATOR, curator, service, snapshots
from platform_server.features.skills import frontmatter as fm
from platform_server.features.skills.curator_models import CuratorState, ManagedSkill
from platform_server.features.skills.models import Skill
from platform_server.features.usage import meter
from platform_server.features.workspaces.models import Workspace
from platform_server.ids import next_id
from platform_server.integrations.llm.types import ChatMessage, ChatRequest, LlmError
from platform_server.loops import Loop
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError

if TYPE_CHECKING:
    from platform_server.config import Config
    from platform_server.features.models.runtime import LlmRouter
    from platform_server.features.skills.runtime import SkillsRuntime
    from platform_server.platform import Platform

log = logging.getLogger(__name__)

MERGE_SKILL_CAP = 12_000  # characters of each SKILL.md sent to the model

MERGE_SYSTEM = """You merge near-duplicate skills of an AI agent into one skill.
Write one SKILL.md: a front matter block, then markdown instructions.

---
name: <keep the first skill's name>
description: <one sentence: when to use this skill>
---

# <Title>

<The union of the useful instructions of all skills given, without repetition.
Keep every concrete rule, step and requirement; drop nothing that one of them needed.>

Answer with the SKILL.md content only."""


class Curator(Loop):
    """Runs dry runs on request and scheduled scans from tick(); tests set `clock` and call tick()."""

    def __init__(self, skills: SkillsRuntime, router: LlmRouter, config: Config) -> None:
        super().__init__()
        self.skills = skills
        self.router = router
        self.config = config
        self.interval_s = max(1.0, float(self.config.skills_curator_tick_s))
        self.clock: Callable[[], dt.datetime] = utcnow
        self._locks: dict[int, asyncio.Lock] = {}

    @property
    def settings(self) -> curator.Settings:
        return curator.Settings.of(self.config)

    def _lock(self, workspace_id: int) -> asyncio.Lock:
        return self._locks.setdefault(workspace_id, asyncio.Lock())

    # ---- entry points -----------------------------------------------------------------------

    async def dry_run(self, caller: Caller) -> dict[str, Any]:
        """Plan now and store the report; nothing is changed."""
        async with self._lock(caller.workspace_id):
            now = self.clock()
            state = curator.state_of(caller.workspace_id)
            consolidate = bool(state and state.consolidate)
            actions = curator.plan(caller.workspace_id, now, self.settings, consolidate)
            with database.atomic():
                run = curator.save_run(
                    next_id(),
                    caller.workspace_id,
                    "dry-run",
                    False,
                    consolidate,
                    caller,
                    None,
                    actions,
                    self.settings,
                    now,
                    self.config.skills_curator_keep_reports,
                )
            return curator.run_dict(run)

    async def tick(self) -> list[str]:
        """Scan every workspace whose scheduled scan is due; returns the report ids written."""
        if not settings_service.is_enabled("skills_curator"):
            return []
        now = self.clock()
        written: list[str] = []
        live = {w.id for w in Workspace.select(Workspace.id)}
        for state in list(CuratorState.select().where(CuratorState.paused == 0)):
            due = curator.next_run(state, self.settings)
            if state.workspace_id not in live or due is None or due > now:
                continue
            try:
                run_id = await self.scheduled_scan(state.workspace_id, now)
            except Exception:  # noqa: BLE001 - one workspace failing must not stop the others
                log.exception("curator scan of workspace %s failed", state.workspace_id)
                continue
            if run_id is not None:
                written.append(run_id)
        return written

    async def scheduled_scan(self, workspace_id: int, now: dt.datetime) -> str | None:
        """One scheduled pass: a preview, or (active) archive and merge what the plan proposes."""
        async with self._lock(workspace_id):
            state = curator.ensure_state(workspace_id)
            if not ManagedSkill.select().where(ManagedSkill.workspace_id == workspace_id).exists():
                CuratorState.update(last_scheduled_at=now).where(CuratorState.id == state.id).execute()
                return None
            consolidate = bool(state.consolidate)
            actions = curator.plan(workspace_id, now, self.settings, consolidate)
            run_id = next_id()
            snapshot_id = None
            if state.active:
                snapshot_id = await self._apply(workspace_id, run_id, actions)
            with database.atomic():
                run = curator.save_run(
                    run_id,
                    workspace_id,
                    "scheduled",
                    bool(state.active),
                    consolidate,
                    None,
                    snapshot_id,
                    actions,
                    self.settings,
                    now,
                    self.config.skills_curator_keep_reports,
                )
            return str(run.id)

    # ---- applying ---------------------------------------------------------------------------

    async def _apply(self, workspace_id: int, run_id: int, actions: list[dict[str, Any]]) -> int | None:
        """Archive and merge the proposed actions (a restore point first); outcomes are written into `actions`."""
        todo = [a for a in actions if a["outcome"] == "proposed"]
        if not todo:
            return None
        with database.atomic():
            snap = snapshots.capture(workspace_id, "curator", f"Before curator run {run_id}", None, self.config.skills_curator_keep_snapshots)
        merges: dict[str, list[dict[str, Any]]] = {}
        for item in todo:
            if item["action"] == "merge":
                merges.setdefault(item["mergeInto"]["id"], []).append(item)
        for keeper_id, items in merges.items():
            await self._merge(workspace_id, run_id, int(keeper_id), items)
        for item in todo:
            if item["action"] == "archive":
                with database.atomic():
                    self._archive(workspace_id, run_id, item, "; ".join(item["reasons"]))
        return snap.id

    def _blocker(self, workspace_id: int, skill_id: int) -> tuple[Skill | None, str | None]:
        """The skill if it may still be archived now, else why not (state re-read at apply time)."""
        skill = Skill.get_or_none((Skill.id == skill_id) & (Skill.workspace_id == workspace_id))
        if skill is None:
            return None, "the skill was deleted meanwhile"
        if skill.archived:
            return None, "already archived"
        if skill.pinned:
            return None, "pinned: a pinned skill is never auto-archived"
        if not ManagedSkill.select().where(ManagedSkill.skill == skill.id).exists():
            return None, "released from curation meanwhile"
        bound = service.bound_enabled_agents(skill)
        if bound:
            return None, (f"bound to {len(bound)} enabled agent(s) ({', '.join(a.name for a in bound)}): the curator never archives a skill in use")
        return skill, None

    def _archive(self, workspace_id: int, run_id: int, item: dict[str, Any], why: str) -> bool:
        """Archive one skill for the curator (call inside a transaction); records the outcome on the item."""
        skill, blocker = self._blocker(workspace_id, int(item["skillId"]))
        if skill is None:
            item["outcome"], item["note"] = "skipped", blocker
            return False
        Skill.update(archived=1, archived_at=utcnow(), update_time=utcnow()).where(Skill.id == skill.id).execute()
        audit.record(
            None, "UPDATE", "SKILL", skill.id, f"skill {skill.name}: archived by the curator (run {run_id}): {why}", workspace_id=workspace_id
        )
        item["outcome"] = "applied"
        return True

    async def _merge(self, workspace_id: int, run_id: int, keeper_id: int, items: list[dict[str, Any]]) -> None:
        """Merge duplicates into their keeper through the LLM, then archive them; failures are reported, not raised."""
        keeper = Skill.get_or_none((Skill.id == keeper_id) & (Skill.workspace_id == workspace_id) & (Skill.archived == 0))
        if keeper is None:
            for item in items:
                item["outcome"], item["note"] = "skipped", "the skill to merge into is gone or archived"
            return
        eligible = []
        for item in items:
            skill, blocker = self._blocker(workspace_id, int(item["skillId"]))
            if skill is None:
                item["outcome"], item["note"] = "skipped", blocker
            else:
                eligible.append((item, skill))
        if not eligible:
            return
        try:
            with meter.scope("curator", workspace_id):
                values = await self._merged_values(keeper, [s for _, s in eligible])
        except (LlmError, ApiError) as exc:
            message = failure_text(exc, "skill curation")
            for item, _ in eligible:
                item["outcome"], item["note"] = "failed", f"consolidation failed: {message}"[:500]
            return
        with database.atomic():
            fresh = Skill.get_or_none((Skill.id == keeper.id) & (Skill.archived == 0))
            if fresh is None or fresh.content != keeper.content:
                for item, _ in eligible:
                    item["outcome"], item["note"] = "skipped", "the skill to merge into changed meanwhile"
                return
            Skill.update(update_time=utcnow(), **values).where(Skill.id == keeper.id).execute()
            names = [s.name for _, s in eligible]
            audit.record(
                None,
                "UPDATE",
                "SKILL",
                keeper.id,
                f"skill {keeper.name}: merged {', '.join(names)} into it (curator run {run_id})",
                workspace_id=workspace_id,
            )
            for item, _ in eligible:
                self._archive(workspace_id, run_id, item, f"merged into {keeper.name}")
        updated = Skill.get_or_none(Skill.id == keeper.id)
        if updated is not None:
            await self.skills.sync_skill(updated)

    async def _merged_values(self, keeper: Skill, others: list[Skill]) -> dict[str, Any]:
        """Ask the default chat model for one SKILL.md that merges the keeper and its duplicates."""

        parts = [f"Skill {i + 1}: {s.name}\n\n{s.content[:MERGE_SKILL_CAP]}" for i, s in enumerate([keeper, *others])]
        request = ChatRequest(
            model="",
            messages=[ChatMessage("system", MERGE_SYSTEM), ChatMessage("user", "\n\n-----\n\n".join(parts))],
            max_tokens=3000,
            temperature=0.2,
        )
        _, result = await self.router.chat(resolve_targets(None, None, []), request)
        text = fm.strip_fences(result.content or "").strip()
        if not text:
            raise LlmFailure("The model returned no merged skill")
        try:
            doc = fm.parse(text)
        except ApiError:
            doc = fm.SkillDoc({}, text, False)
        if not doc.has_front_matter:
            text = fm.compose({}, text)
        values = service.prepare_new(
            text,
            keeper.name,
            display_name=doc.text("displayName") or doc.text("display_name") or keeper.display_name,
            description=doc.text("description") or keeper.description,
            version=keeper.version,
        )
        values.pop("name", None)
        return values


async def start(platform: Platform) -> None:
    loop = Curator(platform.runtime(SKILLS), platform.runtime(LLM), platform.config)
    platform.set_runtime(SKILLS_CURATOR, loop)
    loop.start()


async def stop(platform: Platform) -> None:
    platform.runtime(SKILLS_CURATOR).stop()
