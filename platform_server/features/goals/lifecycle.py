"""Start: the goal evaluator loop (`platform.services["goals.evaluator"]`)."""
from __future__ import annotations

from typing import Any

from platform_server.features.goals.evaluation import GoalEvaluator


async def start(platform: Any) -> None:
    evaluator = GoalEvaluator(platform)
    platform.services["goals.evaluator"] = evaluator
    if platform.config.goal_eval_tick_s > 0:
        evaluator.start()


async def stop(platform: Any) -> None:
    evaluator = platform.services.pop("goals.evaluator", None)
    if evaluator is not None:
        evaluator.stop()
