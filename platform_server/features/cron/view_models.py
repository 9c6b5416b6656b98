"""What the cron-job and trigger routes answer: the API document's view models (they only document; the routes keep
building plain dicts with `service.to_dict`, `run_dict` and `triggers.to_dict`, and the test suite checks every
answer against these models). The camelCase duplicates (`taskType`, `nextRunTime`, `patternJson`, ...) are the
original console's names for the same facts."""

from __future__ import annotations

from pydantic import Field, JsonValue

from platform_server.serialize import View


class CronJobView(View):
    """A scheduled message to an agent."""

    id: str
    workspaceId: str
    name: str
    agentId: str | None
    agentName: str | None
    cronExpression: str
    timezone: str
    message: str
    enabled: bool
    conversationMode: str = Field(description="new or fixed")
    conversationId: str | None
    ownerUserId: str | None
    ownerUsername: str | None
    nextFireTime: str | None
    lastFireTime: str | None
    createTime: str | None
    updateTime: str | None
    taskType: str
    triggerMessage: str
    nextRunTime: str | None
    lastRunTime: str | None


class CronPreviewView(View):
    """A cron expression in words with its next fire instants in the zone."""

    cronExpression: str
    timezone: str
    description: str
    nextRuns: list[str]


class TriggerView(View):
    """A cron or event trigger that runs an agent (or a workflow: then `agentId` is null)."""

    id: str
    workspaceId: str
    name: str
    agentId: str | None
    agentName: str | None
    type: str = Field(description="cron or event")
    cronExpression: str | None
    timezone: str | None
    eventType: str | None
    filter: dict[str, JsonValue] | None = Field(description="payload fields an event must match")
    message: str
    enabled: bool
    conversationMode: str
    conversationId: str | None
    patternVersion: int
    ownerUserId: str | None
    ownerUsername: str | None
    nextFireTime: str | None
    lastFireTime: str | None
    createTime: str | None
    updateTime: str | None
    patternType: str
    patternJson: str | None
    targetType: str = Field(description="agent or workflow")
    targetId: str | None
    payloadTemplate: str


class TriggerFiringView(View):
    """What one event trigger did with an ingested event."""

    triggerId: str
    triggerName: str
    fired: bool
    runId: str | None
    reason: str = Field(description="matched, disabled, already running, duplicate, or why the filter missed")
