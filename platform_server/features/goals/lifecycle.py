"""Start: the goal evaluator loop (`platform.runtime(GOALS_EVALUATOR)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.features.goals import GOALS_EVALUATOR
from platform_server.features.goals.evaluation import GoalEvaluator
from platform_server.features.models import LLM

if TYPE_CHECKING:
    from platform_server.platform import Platform


async def start(platform: Platform) -> None:
    evaluator = GoalEvaluator(platform.runtime(LLM), platform.config)
    platform.set_runtime(GOALS_EVALUATOR, evaluator)
    if platform.config.goal_eval_tick_s > 0:
        evaluator.start()


async def stop(platform: Platform) -> None:
    platform.runtime(GOALS_EVALUATOR).stop()
