"""Request bodies of the memory routes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from platform_server.features.memory import store


class FeedbackRequest(BaseModel):
    value: Literal["HELPFUL", "UNHELPFUL"]


class ResolveRequest(BaseModel):
    resolution: Literal["KEEP_A", "KEEP_B", "MERGE", "IGNORE"]
    statement: str | None = Field(
        default=None, min_length=1, max_length=1000, description="MERGE only: the merged statement (else the model writes it)"
    )


class FocusedRequest(BaseModel):
    topic: str = Field(min_length=1, max_length=200)


class EditRequest(BaseModel):
    after: str = Field(min_length=1, max_length=1000)


class FactEditRequest(BaseModel):
    statement: str = Field(min_length=1, max_length=1000)


class FileText(BaseModel):
    content: str = Field(max_length=store.NOTE_CAP)
