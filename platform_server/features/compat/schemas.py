"""Answers of the original console's routes that have no feature behind them here (honest, mostly empty)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, JsonValue, RootModel

from platform_server.serialize import View

# A list this server always answers empty (it has no such feature): `maxItems: 0` says so to a client.
Empty = Annotated[list[JsonValue], Field(max_length=0)]


class SsoProvidersView(RootModel[Empty]):
    """Single sign-on providers: none (this server has no SSO)."""


class DocView(View):
    slug: str
    title: str
    group: str


class DocContentView(View):
    slug: str
    title: str
    content: str = Field(description="markdown")


class ContentItemsPageView(View):
    """Content pieces: this server publishes none, so always an empty page."""

    records: Empty
    total: int
    page: int
    size: int


class ContentItemsSummaryView(View):
    total: int
    draft: int
    packaged: int
    published: int


class DshStatusView(View):
    """The DeepSeek harness runtime is not part of this server: never supported, installed or enabled."""

    supported: bool
    installed: bool
    enabled: bool
    state: str = Field(description="UNSUPPORTED")
    artifactManifestConfigured: bool
    config: dict[str, JsonValue] = Field(max_length=0, description="always empty")
    managed: dict[str, JsonValue] = Field(max_length=0, description="always empty")
    message: str


class DshDiagnosticsView(View):
    supported: bool
    executableAvailable: bool
    cordisConfigAvailable: bool


class SearchProvidersView(View):
    """Web-search providers: none is built in."""

    providers: Empty
    resolvedId: str | None
    resolvedSource: str | None


class AgentKbBindingView(View):
    agentId: str
    kbId: str
    enabled: bool
