"""Request bodies of the workflows routes."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from platform_server.web.errors import BadRequest


class WorkflowCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    enabled: bool = True


class WorkflowUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    enabled: bool | None = None


class DraftBody(BaseModel):
    """A graph `{nodes, edges}` as `graph` (object) or `graphJson` (object or JSON text)."""

    graph: dict[str, Any] | None = None
    graphJson: dict[str, Any] | str | None = None

    @model_validator(mode="after")
    def _one(self) -> "DraftBody":
        if (self.graph is None) == (self.graphJson is None):
            raise ValueError("exactly one of graph or graphJson is required")
        return self

    def value(self) -> dict[str, Any]:
        if self.graph is not None:
            return self.graph
        raw = self.graphJson
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                raise BadRequest("graphJson: not valid JSON") from None
        if not isinstance(raw, dict):
            raise BadRequest("graphJson: must be a JSON object")
        return raw


class GenerateRequest(BaseModel):
    description: str = Field(min_length=1, max_length=4000)


class ResumeRequest(BaseModel):
    pauseToken: str | None = Field(default=None, max_length=100)
    outcome: Literal["approved", "rejected", "timeout", "cancelled"]
    payload: Any = None


class RunRequest(BaseModel):
    input: Any = None
