"""Goals: what a user wants an agent to reach, and the evaluator that judges progress from conversations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.goals.evaluation import GoalEvaluator


GOALS_EVALUATOR: RuntimeKey[GoalEvaluator] = RuntimeKey("goals_evaluator")
