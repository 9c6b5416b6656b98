"""The workflow graph: node types, the compiler's diagnostics, templates, conditions and edge choice.

A graph is `{nodes: [{id, type, config}], edges: [{from, to, condition?}]}`. Node types:

- `start`: the entry (exactly one); its output is the run's input.
- `end`: finishes the run as `succeeded`; `config.output` (a template) is the run's output, else the
  output of the last agent or llm step (else the run's input).
- `agent`: `config.agentId`, `config.message` (template): one chat turn of that agent (tools pass the guard).
- `llm`: `config.prompt` (template), optional `config.system`, `config.modelName`, `config.modelProvider`.
- `condition`: `config.left`, `config.op`, `config.right` (templates); branches `true` / `false`.
- `approval`: pauses the run until resumed; optional `config.message`, `config.timeoutSeconds`;
  branches `approved` / `rejected` / `timeout` / `cancelled`.

Templates: `{{input}}`, `{{input.x}}`, `{{nodes.<id>.output}}`, `{{nodes.<id>.output.<field>}}`.
Execution follows one path: after a node, the edge labelled with its branch, else its unlabelled
edge (after an approval node the unlabelled edge means `approved` only).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

NODE_TYPES = ("start", "end", "agent", "llm", "condition", "approval")
BRANCHES: dict[str, tuple[str, ...]] = {
    "condition": ("true", "false"),
    "approval": ("approved", "rejected", "timeout", "cancelled"),
}
OPS = ("eq", "ne", "contains", "not_contains", "gt", "gte", "lt", "lte", "empty", "not_empty")
NUMERIC_OPS = ("gt", "gte", "lt", "lte")
UNARY_OPS = ("empty", "not_empty")
MAX_NODES = 200
MAX_EDGES = 500
MAX_TIMEOUT_S = 30 * 86400
NODE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TEMPLATE = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")
REQUIRED: dict[str, tuple[str, ...]] = {
    "agent": ("agentId", "message"),
    "llm": ("prompt",),
    "condition": ("left", "op"),
}
TEMPLATED: dict[str, tuple[str, ...]] = {
    "end": ("output",),
    "agent": ("message",),
    "llm": ("prompt", "system"),
    "condition": ("left", "right"),
    "approval": ("message",),
}


@dataclass
class Diagnostic:
    severity: str  # error | warning
    code: str
    message: str
    node_id: str | None = None
    edge_index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "message": self.message, "nodeId": self.node_id, "edgeIndex": self.edge_index}


@dataclass
class Graph:
    """A graph the compiler accepted (or partly parsed): nodes by id and edges in order."""

    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: list[dict[str, Any]] = field(default_factory=list)

    @property
    def start(self) -> str | None:
        return next((n for n, v in self.nodes.items() if v["type"] == "start"), None)

    def outgoing(self, node_id: str) -> list[dict[str, Any]]:
        return [e for e in self.edges if e["from"] == node_id]


@dataclass
class CompileResult:
    graph: Graph
    diagnostics: list[Diagnostic]

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": sum(d.severity == "error" for d in self.diagnostics),
            "warnings": sum(d.severity == "warning" for d in self.diagnostics),
            "nodeCount": len(self.graph.nodes),
            "edgeCount": len(self.graph.edges),
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


AgentCheck = Callable[[int], str | None]  # agent id -> None when usable, else the problem


def compile_graph(raw: Any, check_agent: AgentCheck) -> CompileResult:
    """Parse and check a draft; every problem becomes a diagnostic (nothing raises)."""
    diags: list[Diagnostic] = []
    graph = Graph()
    if not isinstance(raw, dict) or not isinstance(raw.get("nodes", []), list) or not isinstance(raw.get("edges", []), list):
        diags.append(Diagnostic("error", "INVALID_GRAPH", "A graph is an object with `nodes` and `edges` arrays"))
        return CompileResult(graph, diags)
    nodes, edges = raw.get("nodes") or [], raw.get("edges") or []
    if len(nodes) > MAX_NODES or len(edges) > MAX_EDGES:
        diags.append(Diagnostic("error", "TOO_LARGE", f"At most {MAX_NODES} nodes and {MAX_EDGES} edges"))
        return CompileResult(graph, diags)
    _parse_nodes(nodes, graph, diags)
    _parse_edges(edges, graph, diags)
    starts = [n for n, v in graph.nodes.items() if v["type"] == "start"]
    if not starts:
        diags.append(Diagnostic("error", "MISSING_START", "The graph needs one `start` node"))
    elif len(starts) > 1:
        diags.append(Diagnostic("error", "MULTIPLE_START", "The graph has more than one `start` node", starts[1]))
    if not any(v["type"] == "end" for v in graph.nodes.values()):
        diags.append(Diagnostic("error", "MISSING_END", "The graph needs at least one `end` node"))
    _check_branches(graph, diags)
    _check_cycles(graph, diags)
    _check_reachability(graph, diags)
    for node_id, node in graph.nodes.items():
        _check_config(node_id, node, graph, check_agent, diags)
    return CompileResult(graph, diags)


def _parse_nodes(nodes: list[Any], graph: Graph, diags: list[Diagnostic]) -> None:
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            diags.append(Diagnostic("error", "INVALID_NODE", f"Node #{i} is not an object"))
            continue
        node_id, node_type, config = node.get("id"), node.get("type"), node.get("config", {})
        if not isinstance(node_id, str) or not NODE_ID.match(node_id):
            diags.append(Diagnostic("error", "INVALID_NODE_ID", f"Node #{i}: id must be 1-64 letters, digits, '_' or '-'"))
            continue
        if node_id in graph.nodes:
            diags.append(Diagnostic("error", "DUPLICATE_NODE_ID", f"Node id '{node_id}' is used twice", node_id))
            continue
        if node_type not in NODE_TYPES:
            diags.append(
                Diagnostic(
                    "error",
                    "UNKNOWN_NODE_TYPE",
                    f"Node '{node_id}' has unknown type {json.dumps(node_type)}; known: {', '.join(NODE_TYPES)}",
                    node_id,
                )
            )
            node_type = "unknown"
        if config is None:
            config = {}
        if not isinstance(config, dict):
            diags.append(Diagnostic("error", "INVALID_CONFIG", f"Node '{node_id}': config must be an object", node_id))
            config = {}
        graph.nodes[node_id] = {"id": node_id, "type": node_type, "config": config}


def _parse_edges(edges: list[Any], graph: Graph, diags: list[Diagnostic]) -> None:
    for i, edge in enumerate(edges):
        if not isinstance(edge, dict):
            diags.append(Diagnostic("error", "INVALID_EDGE", f"Edge #{i} is not an object", edge_index=i))
            continue
        src, dst, cond = edge.get("from"), edge.get("to"), edge.get("condition")
        missing = [str(x) for x in (src, dst) if not isinstance(x, str) or x not in graph.nodes]
        if missing:
            diags.append(Diagnostic("error", "DANGLING_EDGE", f"Edge #{i} refers to unknown node(s): {', '.join(missing)}", edge_index=i))
            continue
        if cond is not None and not isinstance(cond, str):
            diags.append(Diagnostic("error", "INVALID_EDGE_CONDITION", f"Edge #{i}: condition must be a string", src, i))
            continue
        cond = cond or None
        src_type, dst_type = graph.nodes[str(src)]["type"], graph.nodes[str(dst)]["type"]  # both checked above
        if dst_type == "start":
            diags.append(Diagnostic("error", "EDGE_INTO_START", f"Edge #{i} leads into the start node", dst, i))
        if src_type == "end":
            diags.append(Diagnostic("error", "EDGE_FROM_END", f"Edge #{i} leaves an end node", src, i))
        allowed = BRANCHES.get(src_type, ())
        if cond is not None and cond not in allowed:
            hint = f"one of {', '.join(allowed)}" if allowed else "none (only condition and approval nodes branch)"
            diags.append(Diagnostic("error", "INVALID_EDGE_CONDITION", f"Edge #{i} from '{src}' has condition '{cond}'; allowed: {hint}", src, i))
            continue
        graph.edges.append({"from": src, "to": dst, "condition": cond, "index": i})


def _check_branches(graph: Graph, diags: list[Diagnostic]) -> None:
    for node_id, node in graph.nodes.items():
        out = graph.outgoing(node_id)
        labels = [e["condition"] for e in out]
        for label in set(labels):
            if labels.count(label) > 1:
                what = f"branch '{label}'" if label else "unlabelled edge"
                diags.append(Diagnostic("error", "AMBIGUOUS_BRANCH", f"Node '{node_id}' has more than one {what}; a run follows one path", node_id))
        if node["type"] in ("end", "unknown"):
            continue
        if not out:
            diags.append(Diagnostic("error", "DEAD_END", f"Node '{node_id}' has no outgoing edge and is not an end", node_id))
        elif node["type"] == "condition" and None not in labels and not {"true", "false"} <= set(labels):
            diags.append(Diagnostic("warning", "MISSING_BRANCH", f"Condition '{node_id}' has no edge for one outcome; the run fails there", node_id))
        elif node["type"] == "approval" and None not in labels and "approved" not in labels:
            diags.append(Diagnostic("error", "MISSING_BRANCH", f"Approval '{node_id}' has no path for `approved`", node_id))


def _check_cycles(graph: Graph, diags: list[Diagnostic]) -> None:
    state: dict[str, int] = {}  # 1 visiting, 2 done
    reported: set[str] = set()
    for root in graph.nodes:
        if state.get(root):
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        state[root] = 1
        while stack:
            node, i = stack[-1]
            out = graph.outgoing(node)
            if i < len(out):
                stack[-1] = (node, i + 1)
                nxt = out[i]["to"]
                if state.get(nxt) == 1 and nxt not in reported:
                    reported.add(nxt)
                    diags.append(Diagnostic("error", "CYCLE", f"The graph has a cycle through '{nxt}'", nxt, out[i]["index"]))
                elif not state.get(nxt):
                    state[nxt] = 1
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                stack.pop()


def _check_reachability(graph: Graph, diags: list[Diagnostic]) -> None:
    start = graph.start
    if start is None:
        return
    seen, todo = {start}, [start]
    while todo:
        for e in graph.outgoing(todo.pop()):
            if e["to"] not in seen:
                seen.add(e["to"])
                todo.append(e["to"])
    for node_id in graph.nodes:
        if node_id not in seen:
            diags.append(Diagnostic("error", "UNREACHABLE_NODE", f"Node '{node_id}' cannot be reached from start", node_id))


def _check_config(node_id: str, node: dict[str, Any], graph: Graph, check_agent: AgentCheck, diags: list[Diagnostic]) -> None:
    config, node_type = node["config"], node["type"]
    for key in REQUIRED.get(node_type, ()):
        value = config.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            diags.append(Diagnostic("error", "INVALID_CONFIG", f"Node '{node_id}' ({node_type}) needs config.{key}", node_id))
    for key in TEMPLATED.get(node_type, ()):
        value = config.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            diags.append(Diagnostic("error", "INVALID_CONFIG", f"Node '{node_id}': config.{key} must be a string", node_id))
            continue
        for ref in references(value):
            if ref not in graph.nodes:
                diags.append(Diagnostic("error", "UNKNOWN_REFERENCE", f"Node '{node_id}': config.{key} refers to unknown node '{ref}'", node_id))
    if node_type == "condition" and config.get("op") is not None:
        op = config.get("op")
        if op not in OPS:
            diags.append(Diagnostic("error", "INVALID_CONFIG", f"Node '{node_id}': op must be one of {', '.join(OPS)}", node_id))
        elif op not in UNARY_OPS and config.get("right") is None:
            diags.append(Diagnostic("error", "INVALID_CONFIG", f"Node '{node_id}': op '{op}' needs config.right", node_id))
    if node_type == "approval" and config.get("timeoutSeconds") is not None:
        t = config.get("timeoutSeconds")
        if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= MAX_TIMEOUT_S:
            diags.append(Diagnostic("error", "INVALID_CONFIG", f"Node '{node_id}': timeoutSeconds must be an integer 1..{MAX_TIMEOUT_S}", node_id))
    if node_type == "llm":
        for key in ("modelName", "modelProvider"):
            if config.get(key) is not None and not isinstance(config.get(key), str):
                diags.append(Diagnostic("error", "INVALID_CONFIG", f"Node '{node_id}': {key} must be a string", node_id))
    if node_type == "agent" and config.get("agentId") is not None:
        agent_id = agent_id_of(config)
        problem = "agentId must be an agent id" if agent_id is None else check_agent(agent_id)
        if problem:
            diags.append(Diagnostic("error", "AGENT_ACL", f"Node '{node_id}': {problem}", node_id))


def agent_id_of(config: dict[str, Any]) -> int | None:
    raw = config.get("agentId")
    if isinstance(raw, bool):
        return None
    text = str(raw).strip() if isinstance(raw, (str, int)) else ""
    return int(text) if text.isascii() and text.isdigit() and int(text) < 2**63 else None  # isdigit() alone passes '²'


def references(template: str) -> list[str]:
    """Node ids a template refers to through `{{nodes.<id>...}}`."""
    out = []
    for path in TEMPLATE.findall(template):
        parts = path.split(".")
        if parts[0] == "nodes" and len(parts) >= 2:
            out.append(parts[1])
    return out


# ---- execution helpers ------------------------------------------------------------


def text_of(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def lookup(path: str, run_input: Any, outputs: dict[str, Any]) -> Any:
    """The value at `input.a.b` or `nodes.<id>.output.a` (None when absent)."""
    parts = path.split(".")
    if parts[0] == "input":
        value, rest = run_input, parts[1:]
    elif parts[0] == "nodes" and len(parts) >= 3 and parts[2] == "output":
        if parts[1] not in outputs:
            return None
        value, rest = outputs[parts[1]], parts[3:]
    else:
        return None
    for key in rest:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def render(template: Any, run_input: Any, outputs: dict[str, Any]) -> str:
    """Substitute `{{...}}` placeholders; unknown ones become empty text."""
    if template is None:
        return ""
    return TEMPLATE.sub(lambda m: text_of(lookup(m.group(1), run_input, outputs)), str(template))


def _number(text: str, side: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError(f"{side} side '{text[:100]}' is not a number") from None


def evaluate(op: str, left: str, right: str) -> bool:
    """One comparison; ValueError when a numeric comparison gets text."""
    if op == "eq":
        return left.strip() == right.strip()
    if op == "ne":
        return left.strip() != right.strip()
    if op == "contains":
        return right.strip().lower() in left.lower()
    if op == "not_contains":
        return right.strip().lower() not in left.lower()
    if op == "empty":
        return not left.strip()
    if op == "not_empty":
        return bool(left.strip())
    a, b = _number(left, "left"), _number(right, "right")
    return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]


def next_node(graph: dict[str, Any], node_id: str, node_type: str, branch: str | None) -> str | None:
    """The node after `node_id` for the branch taken (None: no edge for it)."""
    edges = [e for e in graph.get("edges", []) if e.get("from") == node_id]
    labelled = next((e for e in edges if branch and e.get("condition") == branch), None)
    if labelled is not None:
        return labelled["to"]
    if node_type == "approval" and branch != "approved":
        return None
    default = next((e for e in edges if not e.get("condition")), None)
    return default["to"] if default else None


def normalized(graph: Graph) -> dict[str, Any]:
    """The stored form of a compiled graph (what a revision keeps)."""
    return {
        "nodes": list(graph.nodes.values()),
        "edges": [{"from": e["from"], "to": e["to"], **({"condition": e["condition"]} if e["condition"] else {})} for e in graph.edges],
    }
