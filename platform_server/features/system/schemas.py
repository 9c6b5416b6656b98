"""Answers of the system routes: health, the browser probe and where the server keeps its data."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from platform_server.serialize import View


class StorageHealthView(View):
    status: str = Field(description="UP, or DEGRADED while writes are refused")
    readOnly: bool
    reason: str | None
    freeBytes: int | None
    minFreeBytes: int | None


class SystemHealthView(View):
    status: str = Field(description="UP, DEGRADED or DOWN")
    database: str = Field(description="UP, or `DOWN: <error>`")
    storage: StorageHealthView | None
    version: str
    uptimeSeconds: float


class BrowserHealthView(View):
    available: bool = Field(description="a Chromium executable was found")
    launched: bool
    executable: str | None
    durationMs: int | None = Field(default=None, description="how long the trial launch took; absent when none ran to the end")
    error: str | None


class DataFolderView(View):
    name: str
    path: str


class LocalModelInfoView(View):
    runtimeInstalled: bool
    chatModelPath: str | None
    chatModelFound: bool
    chatModelConfigured: bool
    chatModelLoaded: bool
    embeddingModelPath: str | None
    embeddingModelFound: bool


class SystemInfoView(View):
    version: str
    dataDir: str
    databasePath: str
    vectorSearch: Literal["pgvector", "in-process"]  # where wiki vector search runs: PostgreSQL's pgvector, or matrices in this process
    folders: list[DataFolderView]
    localModel: LocalModelInfoView
