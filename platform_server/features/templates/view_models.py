"""What the /api/v1/templates routes answer: the API document's view models (they only document; the routes keep
building plain dicts with `service.to_dict`, and the test suite checks every answer against these models)."""

from __future__ import annotations

from pydantic import Field

from platform_server.serialize import View


class AgentTemplateView(View):
    """A template an agent can be created from."""

    id: str
    name: str
    description: str
    category: str
    icon: str
    agentType: str
    systemPrompt: str
    maxIterations: int
    defaultThinkingLevel: str | None
    tags: str = Field(description="comma-separated")
    toolNames: list[str]
    promptFiles: list[str]
    files: list[str] = Field(description="the workspace files the agent starts with")
    builtin: bool
