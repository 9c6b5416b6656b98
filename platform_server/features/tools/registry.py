"""The runtime tool registry: which tools a model is offered, and running a tool call safely."""

from __future__ import annotations

import asyncio
import json
import logging
import pathlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable

from platform_server.config import Config
from platform_server.features.settings import service as settings
from platform_server.features.tools import service
from platform_server.features.tools.models import Tool
from platform_server.features.tools.schemas import McpToolCreate
from platform_server.features.workspaces import service as workspaces
from platform_server.integrations.llm.types import ToolSpec
from platform_server.memo import memo_on
from platform_server.web.context import ROLE_RANK, Caller

if TYPE_CHECKING:
    from platform_server.platform import Platform

log = logging.getLogger(__name__)

RESULT_CAP_BYTES = 64 * 1024
DEFAULT_TOOL_TIMEOUT_S = 120.0
DEFAULT_UNBOUND_EXCLUDED = frozenset({"shell_exec"})  # never offered unless bound explicitly
# Tools of these sources join the defaults rather than replace them: a binding made only of them (the
# console's Tools tab switching `wiki_search` on) keeps the default tools offered.
ADDITIVE_SOURCES = frozenset({"wiki"})


@dataclass
class ToolContext:
    """Who calls the tool and where: the agent's workspace folder confines file and shell tools."""

    user_id: int
    workspace_id: int
    agent_id: int
    conversation_id: str
    agent_dir: pathlib.Path
    config: Config
    end_user_id: str | None = None  # an end user's turn (webchat, channel): other end users' notes are off limits
    # The calling user's effective workspace role (a global admin counts as owner); None: no role, so no
    # tool with a role floor runs. Sub-agents, team runs and approvals carry the caller's on.
    role: str | None = None
    # The active skills' secrets: in the environment of shell_exec (and so of skill scripts), masked in
    # every tool result, never in a prompt or a log.
    secret_env: dict[str, str] = field(default_factory=dict)
    # Publishes an event into the running turn (tools that report progress); None outside a turn.
    emit: Callable[[str, dict[str, Any]], Any] | None = None
    # Extension-tier tools held back from the model, and how `tool_search` offers some of them.
    deferred: list[ToolSpec] = field(default_factory=list)
    offer: Callable[[list[str]], Any] | None = None


@dataclass
class ToolOutcome:
    success: bool
    result: str


@dataclass
class ToolDefinition:
    """A runnable tool; `run(arguments, ctx)` returns the result text or raises (ToolError for expected failures)."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any], ToolContext], Awaitable[str]]
    source: str = "system"
    min_role: str | None = None  # workspace role the caller needs for the tool's effect (None: any member role)
    end_users: bool = True  # False: never runs in an end user's conversation (webchat, channels), whoever owns it
    feature: str | None = None  # a feature flag: while it is off the tool is neither offered nor run
    # A host tool (workspaces.HOST_TOOLS: shell, acp, mcp_stdio): bound and run only in workspaces
    # where a global admin enabled it.
    host: str | None = None


# An area's agent tools (its handlers.py `AGENT_TOOLS`): each factory gets the platform once its area started
# (so it can hand the tools their collaborators) and returns definitions app.py registers in order.
ToolFactory = Callable[["Platform"], Iterable[ToolDefinition]]


@dataclass(frozen=True)
class EnabledTool:
    description: str
    disclosure_tier: str


@memo_on(Tool)
def _enabled_tools() -> dict[str, EnabledTool]:
    """The Tool table's enabled rows by name (read once per change of the table; do not mutate)."""
    rows = Tool.select(Tool.name, Tool.description, Tool.disclosure_tier).where(Tool.enabled == True)  # noqa: E712
    return {row.name: EnabledTool(row.description or "", row.disclosure_tier) for row in rows}


def _feature_on(flag: str) -> bool:

    return settings.is_enabled(flag)


class ToolError(Exception):
    """An expected tool failure; its message becomes the failed outcome's result as is."""


SECRET_MASK = "******"


def mask_secrets(text: str, secrets: dict[str, str]) -> str:
    """Replace every secret value (4+ characters, the longest first) echoed in a tool's output."""
    for value in sorted((v for v in secrets.values() if len(v) >= 4), key=len, reverse=True):
        text = text.replace(value, SECRET_MASK)
    return text


def cap_result(text: str, limit: int = RESULT_CAP_BYTES) -> str:
    """Cut text to `limit` UTF-8 bytes, with a note saying how much was dropped."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", "ignore")
    return kept + f"\n[truncated: result was {len(data)} bytes, showing the first {limit}]"


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def check_arguments(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """A message for the first required argument missing or of the wrong JSON type, else None."""
    for name in schema.get("required", []) or []:
        if args.get(name) is None:
            return f"Missing required argument '{name}'"
    properties = schema.get("properties", {}) or {}
    for name, value in args.items():
        expected = (properties.get(name) or {}).get("type")
        if value is None or not isinstance(expected, str) or expected not in _JSON_TYPES:
            continue
        ok = isinstance(value, _JSON_TYPES[expected]) and not (expected in ("integer", "number") and isinstance(value, bool))
        if not ok:
            return f"Argument '{name}' must be of type {expected}"
    return None


class ToolRegistry:
    """Tool definitions by name, stored as `platform.runtime(TOOLS)`.

    Areas add their tools with `register` (a Tool row is created when missing, enabled, so the
    tool shows in `/api/v1/tools`); admins enable or disable them through the Tool table.
    """

    def __init__(self, timeout_s: float = DEFAULT_TOOL_TIMEOUT_S, result_cap_bytes: int = RESULT_CAP_BYTES) -> None:
        self._tools: dict[str, ToolDefinition] = {}
        self._generation = 0  # moves with every register/unregister (kept tool offers are per generation)
        # `POST /api/v1/tools`: set by the mcp area (a tool that runs one discovered MCP server tool)
        self.create_mcp_tool: Callable[[Caller, McpToolCreate], Tool] | None = None
        self.timeout_s = timeout_s
        self.result_cap_bytes = result_cap_bytes

    def register(self, definition: ToolDefinition) -> None:
        """Add (or replace) a tool definition and make sure its Tool row exists."""

        self._tools[definition.name] = definition
        self._generation += 1
        service.ensure_row(definition.name, definition.description, definition.source, definition.parameters)

    def unregister(self, name: str) -> None:
        """Forget a definition (its Tool row stays; the owning area deletes it if it should go)."""
        self._tools.pop(name, None)
        self._generation += 1

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def required_role(self, name: str) -> str | None:
        """The workspace role a caller needs for this tool's effect (writing files, shell, datasources)."""
        definition = self._tools.get(name)
        return definition.min_role if definition else None

    def refusal(self, name: str, role: str | None, end_user_id: str | None, workspace_id: int | None = None) -> str | None:
        """Why this caller may not run this tool (its role floor, an end user's conversation, a host tool
        the workspace has not enabled), else None.

        The one rule, checked where every call runs (`execute`) and used to filter what a model is offered."""
        definition = self._tools.get(name)
        if definition is None:
            return None
        if definition.min_role and ROLE_RANK.get(role or "", 0) < ROLE_RANK[definition.min_role]:
            return f"Tool '{name}' needs the {definition.min_role} role in this workspace; the caller's role is lower"
        if end_user_id and not definition.end_users:
            return f"Tool '{name}' is not available in an end user's conversation"
        if definition.host and workspace_id is not None:
            return workspaces.host_tool_refusal(workspace_id, definition.host) or None
        return None

    def host_kinds(self, names: list[str]) -> dict[str, str]:
        """The host tools among `names`, with their kind (shell, acp, mcp_stdio)."""
        return {n: d.host for n in names if (d := self._tools.get(n)) is not None and d.host}

    def specs_for(self, bound: list[str], tools_disabled: bool, implied: tuple[str, ...] = ()) -> list[ToolSpec]:
        """The tools offered at the start of a turn: the core tier, plus `tool_search` when extension
        tools are held back (see `deferred_for`)."""
        core, deferred = self.tiered_specs(bound, tools_disabled, implied)
        search = self._tools.get("tool_search")
        if deferred and search is not None:
            core.append(ToolSpec(search.name, search.description, search.parameters))
        return core

    def deferred_for(self, bound: list[str], tools_disabled: bool, implied: tuple[str, ...] = ()) -> list[ToolSpec]:
        """The extension-tier tools this agent could use, offered only after `tool_search` asks for them."""
        return self.tiered_specs(bound, tools_disabled, implied)[1]

    def tiered_specs(self, bound: list[str], tools_disabled: bool, implied: tuple[str, ...] = ()) -> tuple[list[ToolSpec], list[ToolSpec]]:
        """The tools offered to a model for one agent turn (see `_tiered_specs`), kept until a tool row, a
        feature flag or a definition changes (every turn asks); the lists are the caller's to change."""
        core, deferred = _kept_tiered_specs(self, self._generation, tuple(bound), tools_disabled, tuple(implied))
        return list(core), list(deferred)

    def _defaults(self) -> list[str]:
        return sorted(n for n, d in self._tools.items() if d.source == "system" and n not in DEFAULT_UNBOUND_EXCLUDED)

    def _tiered_specs(
        self, bound: tuple[str, ...], tools_disabled: bool, implied: tuple[str, ...] = ()
    ) -> tuple[tuple[ToolSpec, ...], tuple[ToolSpec, ...]]:
        """The tools offered to a model for one agent turn.

        Rules, in order:
        - only tools that are registered here and enabled in the Tool table are ever offered;
        - when `bound` (the agent's tool bindings, by name) names a tool of a source outside
          ADDITIVE_SOURCES, exactly those tools, in the bound order (unknown or disabled names are skipped);
        - otherwise (nothing bound, or only tools that join the defaults, e.g. `wiki_search`) every
          enabled `system` tool except `shell_exec` (which is offered only when bound explicitly), by
          name, then the bound ones;
        - `implied` (tools that come with what the agent has, e.g. `wiki_read` with a knowledge base)
          are added after those;
        - `tools_disabled=True` (the agent's `toolsDisabled`) then keeps only `system` tools.
        The description sent is the Tool row's (admins may edit it), the parameters the definition's.
        """
        rows = _enabled_tools()
        flags: dict[str, bool] = {}
        exact = any((d := self._tools.get(n)) is None or d.source not in ADDITIVE_SOURCES for n in bound)
        names = list(dict.fromkeys([*(bound if exact else [*self._defaults(), *bound]), *implied]))
        specs: list[ToolSpec] = []
        deferred: list[ToolSpec] = []
        for name in names:
            definition = self._tools.get(name)
            row = rows.get(name)
            if definition is None or row is None:
                continue
            if tools_disabled and definition.source != "system":
                continue
            if definition.feature and not flags.setdefault(definition.feature, _feature_on(definition.feature)):
                continue
            spec = ToolSpec(name, row.description or definition.description, definition.parameters)
            (deferred if row.disclosure_tier == "extension" else specs).append(spec)
        return tuple(specs), tuple(deferred)

    async def execute(self, name: str, arguments_json: str, ctx: ToolContext) -> ToolOutcome:
        """Run one tool call; never raises for a tool failure (the failure text is the result)."""
        outcome = await self._execute(name, arguments_json, ctx)
        if ctx is not None and ctx.secret_env:
            outcome.result = mask_secrets(outcome.result, ctx.secret_env)
        return outcome

    async def _execute(self, name: str, arguments_json: str, ctx: ToolContext) -> ToolOutcome:
        definition = self._tools.get(name)
        if definition is None:
            return ToolOutcome(False, f"Unknown tool: {name}")
        if name not in _enabled_tools():
            return ToolOutcome(False, f"Tool is disabled: {name}")
        if definition.feature and not _feature_on(definition.feature):
            return ToolOutcome(False, f"Feature {definition.feature} is disabled")
        refused = self.refusal(name, ctx.role, ctx.end_user_id, ctx.workspace_id)
        if refused is not None:  # every path (turns, sub-agents, team runs, tool_search, approvals) ends here
            return ToolOutcome(False, refused)
        text = (arguments_json or "").strip()
        try:
            args = json.loads(text) if text else {}
        except ValueError as exc:
            return ToolOutcome(False, f"Invalid JSON arguments for {name}: {exc}")
        if not isinstance(args, dict):
            return ToolOutcome(False, f"Arguments for {name} must be a JSON object")
        problem = check_arguments(definition.parameters, args)
        if problem:
            return ToolOutcome(False, f"{name}: {problem}")
        try:
            result = await asyncio.wait_for(definition.run(args, ctx), timeout=self.timeout_s)
        except ToolError as exc:
            return ToolOutcome(False, cap_result(str(exc) or f"{name} failed", self.result_cap_bytes))
        except asyncio.TimeoutError:
            return ToolOutcome(False, f"Tool {name} timed out after {self.timeout_s:g} seconds")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a tool failure is a result, not a crash
            log.warning("tool %s failed", name, exc_info=True)
            return ToolOutcome(False, cap_result(f"Tool {name} failed: {type(exc).__name__}: {exc}", self.result_cap_bytes))
        return ToolOutcome(True, cap_result(str(result), self.result_cap_bytes))


@memo_on(Tool, "feature_flag")
def _kept_tiered_specs(
    registry: ToolRegistry, generation: int, bound: tuple[str, ...], tools_disabled: bool, implied: tuple[str, ...]
) -> tuple[tuple[ToolSpec, ...], tuple[ToolSpec, ...]]:
    return registry._tiered_specs(bound, tools_disabled, implied)
