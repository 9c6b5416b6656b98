"""Start: the goal evaluator loop (`platform.services.goals_evaluator`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.goals.evaluation import GoalEvaluator

if TYPE_CHECKING:
    from platform_server.app import Platform


async def start(platform: Platform) -> None:
    evaluator = GoalEvaluator(platform)
    platform.services.goals_evaluator = evaluator
    if platform.config.goal_eval_tick_s > 0:
        evaluator.start()


async def stop(platform: Platform) -> None:
    platform.services.goals_evaluator.stop()
