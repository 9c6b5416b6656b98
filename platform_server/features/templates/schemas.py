"""Request bodies of the templates routes."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator


class ApplyTemplate(BaseModel):
    name: str | None = Field(default=None, max_length=100)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        return v.strip() or None if v is not None else None
