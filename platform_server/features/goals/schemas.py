"""Request bodies of the goals routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

MAX_CRITERIA = 50


class GoalCreate(BaseModel):
    conversationId: str = Field(min_length=1, max_length=128)
    agentId: str | int
    title: str = Field(min_length=1, max_length=500)
    criteria: list[str] | None = Field(default=None, max_length=MAX_CRITERIA)
    maxAttempts: int | None = Field(default=None, ge=1, le=1000)  # evaluations before `exhausted`


class GoalUpdate(BaseModel):
    title: str | None = Field(default=None, min_length=1, max_length=500)
    criteria: list[str] | None = Field(default=None, max_length=MAX_CRITERIA)
    maxAttempts: int | None = Field(default=None, ge=1, le=1000)
    status: Literal["completed", "exhausted"] | None = None


class CriterionRequest(BaseModel):
    criterion: str = Field(min_length=1, max_length=500)


class AbandonRequest(BaseModel):
    reason: str | None = Field(default=None, max_length=1000)
