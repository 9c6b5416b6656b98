"""Request bodies and answers of the workflows routes."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, WithJsonSchema, field_validator, model_validator
from pydantic.json_schema import JsonDict, SkipJsonSchema

from platform_server.serialize import View
from platform_server.web.errors import BadRequest


class WorkflowCreate(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    description: str = Field(default="", max_length=2000)
    enabled: bool = True


class WorkflowUpdate(BaseModel):
    name: str | None = Field(default=None, min_length=1, max_length=100)
    description: str | None = Field(default=None, max_length=2000)
    enabled: bool | None = None


def _exactly_one_graph(schema: JsonDict) -> None:
    """Exactly one of the two keys; an absent one has no default to document (a null is refused)."""
    schema["oneOf"] = [{"required": ["graph"]}, {"required": ["graphJson"]}]
    props = schema.get("properties")
    for prop in props.values() if isinstance(props, dict) else ():
        if isinstance(prop, dict):
            prop.pop("default", None)


class DraftBody(BaseModel):
    """A graph `{nodes, edges}` as `graph` or `graphJson`, exactly one of them."""

    model_config = ConfigDict(json_schema_extra=_exactly_one_graph)

    graph: dict[str, Any] | SkipJsonSchema[None] = None
    # The document says object: the JSON text of one is read too (the original console sends it so), but OpenAPI 3.0
    # cannot say "a string holding a JSON object", and any other string is refused
    graphJson: Annotated[dict[str, Any] | str | None, WithJsonSchema({"type": "object", "additionalProperties": True})] = Field(
        default=None, description="the graph (its JSON text is accepted too)"
    )

    @field_validator("graph", "graphJson", mode="before")
    @classmethod
    def _given(cls, value: Any) -> Any:
        # given means an object: a null is not "the other one" (the document's oneOf counts the keys present)
        if value is None:
            raise ValueError("must be an object (leave it out instead of null)")
        return value

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


# ---- answers (web/openapi_answers.py): service.to_dict / run_dict / step_dict, graph.CompileResult ----------------
# A graph is the user's own document ({nodes: [{id, type, config}], edges: [...]}, checked by the compiler, which
# reports problems as diagnostics rather than refusing it), and run inputs and step values are the data the user's
# graph passes along: those stay free-form JSON.

GRAPH = "the workflow graph as written: {nodes: [{id, type, config}], edges: [{from, to, ...}]}"


class WorkflowView(View):
    id: str
    workspaceId: str
    name: str
    description: str
    enabled: bool
    latestRevisionId: str | None = Field(description="the published revision runs use; null before the first publish")
    creatorUserId: str | None
    createTime: str | None
    updateTime: str | None


class WorkflowRevisionView(View):
    """A published, immutable version of the graph."""

    id: str
    version: int
    graph: dict[str, JsonValue] = Field(description=GRAPH)
    createdBy: str | None
    createTime: str | None


class WorkflowDetailView(WorkflowView):
    draft: dict[str, JsonValue] = Field(description="the editable graph: " + GRAPH)
    latestRevision: WorkflowRevisionView | None


class WorkflowDiagnosticView(View):
    severity: str = Field(description="error or warning")
    code: str
    message: str
    nodeId: str | None
    edgeIndex: int | None


class WorkflowCompileView(View):
    ok: bool = Field(description="no error: the draft may be published")
    errors: int
    warnings: int
    nodeCount: int
    edgeCount: int
    diagnostics: list[WorkflowDiagnosticView]


class WorkflowPublishedView(WorkflowDetailView):
    compile: WorkflowCompileView


class WorkflowGeneratedView(View):
    """A drafted graph (not saved) with its compile result; `raw` is the model's answer when it held no graph."""

    graph: dict[str, JsonValue] | None = Field(description=GRAPH)
    compile: WorkflowCompileView
    raw: str | None


class WorkflowTemplateView(View):
    key: str
    name: str
    description: str
    graph: dict[str, JsonValue] = Field(description=GRAPH)


class WorkflowRunView(View):
    """A run; `pauseToken` only for a caller who may resume it, the pause fields only while paused."""

    id: str
    workflowId: str
    revisionId: str
    workspaceId: str
    startedBy: str | None
    status: str
    input: JsonValue = Field(description="the input the run was started with")
    output: JsonValue = Field(description="the output of the run's last node")
    error: str | None
    pauseToken: str | None
    pausedStepId: str | None
    pauseDeadline: str | None
    createTime: str | None
    updateTime: str | None
    finishedAt: str | None
    pausedNodeId: str | None = None
    pauseReason: str | None = None


class WorkflowStepView(View):
    id: str
    runId: str
    seq: int
    nodeId: str
    nodeType: str
    status: str
    input: JsonValue = Field(description="what the node was given (its config with the values filled in)")
    output: JsonValue = Field(description="what the node produced")
    error: str | None
    outcome: str | None
    conversationId: str | None
    startedAt: str | None
    finishedAt: str | None
    durationMs: int | None


class WorkflowRunDetailView(WorkflowRunView):
    steps: list[WorkflowStepView]
