"""What the /api/v1/subagents routes answer: the API document's view models (they only document; the routes keep
building plain dicts, and the test suite checks every answer against these models)."""

from __future__ import annotations

from pydantic import Field

from platform_server.serialize import View


class SubagentRunView(View):
    """A sub-agent an agent delegated a task to, in the caller's conversation."""

    subagentId: str
    conversationId: str
    agentId: str | None
    agentName: str
    parentAgentId: str | None
    task: str
    depth: int
    status: str = Field(description="running, completed, failed or interrupted")
    result: str | None
    createTime: str | None
    finishedAt: str | None


class SubagentSpawnPauseView(View):
    conversationId: str
    paused: bool


class SubagentInterruptView(View):
    subagentId: str
    interrupted: bool = Field(description="false when it was no longer running")
