"""What the /api/v1/acp/endpoints routes answer: the API document's view models (they only document; the routes
keep building plain dicts with `service.to_dict` and `record_test`, and the test suite checks every answer)."""

from __future__ import annotations

from pydantic import Field, JsonValue

from platform_server.serialize import View


class AcpLastTestView(View):
    """The outcome of the endpoint's last handshake test."""

    success: bool
    message: str
    protocolVersion: int | None
    time: str | None


class AcpEndpointView(View):
    """An ACP agent the platform can launch; env values are masked."""

    id: str
    name: str
    displayName: str
    description: str
    command: str
    args: list[str]
    env: dict[str, str]
    cwd: str
    enabled: bool
    builtin: bool
    lastTest: AcpLastTestView | None
    createTime: str | None
    updateTime: str | None


class AcpTestView(View):
    """A handshake with the agent (`initialize`). `agentInfo`, `agentCapabilities` and `authMethods` are relayed
    as the agent sent them (ACP's own objects)."""

    success: bool
    message: str
    protocolVersion: int | None
    latencyMs: int
    agentInfo: dict[str, JsonValue] | None = Field(None, description="ACP Implementation: name, title, version")
    agentCapabilities: dict[str, JsonValue] | None = Field(None, description="ACP AgentCapabilities (on success)")
    authMethods: list[JsonValue] | None = Field(None, description="ACP AuthMethod list (on success)")
