"""Canonical templates and the drafting prompt used by `POST /api/v1/workflows/draft/generate`."""

from __future__ import annotations

import json
import re
from typing import Any

TEMPLATES: list[dict[str, Any]] = [
    {
        "key": "single-agent",
        "name": "One agent",
        "description": "Hand the input to one agent and return its answer.",
        "graph": {
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {"id": "work", "type": "agent", "config": {"agentId": None, "message": "{{input.task}}"}},
                {"id": "end", "type": "end", "config": {"output": "{{nodes.work.output}}"}},
            ],
            "edges": [{"from": "start", "to": "work"}, {"from": "work", "to": "end"}],
        },
    },
    {
        "key": "agent-with-approval",
        "name": "Agent, then human approval",
        "description": "An agent drafts; a person approves or rejects before the run succeeds.",
        "graph": {
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {"id": "draft", "type": "agent", "config": {"agentId": None, "message": "Draft: {{input.task}}"}},
                {"id": "review", "type": "approval", "config": {"message": "Approve this draft? {{nodes.draft.output}}", "timeoutSeconds": 86400}},
                {"id": "done", "type": "end", "config": {"output": "{{nodes.draft.output}}"}},
                {"id": "dropped", "type": "end", "config": {"output": "Rejected: {{nodes.review.output.payload}}"}},
            ],
            "edges": [
                {"from": "start", "to": "draft"},
                {"from": "draft", "to": "review"},
                {"from": "review", "to": "done", "condition": "approved"},
                {"from": "review", "to": "dropped", "condition": "rejected"},
            ],
        },
    },
    {
        "key": "classify-and-route",
        "name": "Classify, then route",
        "description": "A model call classifies the input; a condition picks the agent that handles it.",
        "graph": {
            "nodes": [
                {"id": "start", "type": "start", "config": {}},
                {"id": "classify", "type": "llm", "config": {"prompt": "Answer only 'urgent' or 'normal'. Message: {{input.text}}"}},
                {"id": "is_urgent", "type": "condition", "config": {"left": "{{nodes.classify.output}}", "op": "contains", "right": "urgent"}},
                {"id": "urgent", "type": "agent", "config": {"agentId": None, "message": "Urgent: {{input.text}}"}},
                {"id": "normal", "type": "agent", "config": {"agentId": None, "message": "{{input.text}}"}},
                {"id": "end_urgent", "type": "end", "config": {"output": "{{nodes.urgent.output}}"}},
                {"id": "end_normal", "type": "end", "config": {"output": "{{nodes.normal.output}}"}},
            ],
            "edges": [
                {"from": "start", "to": "classify"},
                {"from": "classify", "to": "is_urgent"},
                {"from": "is_urgent", "to": "urgent", "condition": "true"},
                {"from": "is_urgent", "to": "normal", "condition": "false"},
                {"from": "urgent", "to": "end_urgent"},
                {"from": "normal", "to": "end_normal"},
            ],
        },
    },
]

GUIDE = """You design workflow graphs. Answer with one JSON object only, no prose:
{"nodes": [{"id": "...", "type": "...", "config": {...}}], "edges": [{"from": "...", "to": "...", "condition": "..."}]}
Node ids: letters, digits, '_' or '-'. Node types:
- start (exactly one), end (config.output: template, optional)
- agent: config.agentId (one of the agents listed below), config.message (template)
- llm: config.prompt (template), config.system (optional)
- condition: config.left, config.op (eq, ne, contains, not_contains, gt, gte, lt, lte, empty, not_empty), config.right;
  outgoing edges carry condition "true" or "false"
- approval: pauses for a person; config.message, config.timeoutSeconds (optional); outgoing edges carry
  condition "approved", "rejected", "timeout" or "cancelled"
Templates: {{input.<field>}}, {{nodes.<id>.output}}. No cycles; every node reachable from start; every path ends at an end node.
"""


def generation_prompt(agents: list[dict[str, str]]) -> str:
    """The system prompt: the node guide, the workspace's agents and one template as an example."""
    listing = "\n".join(f"- id {a['id']}: {a['name']} - {a['description'][:200]}" for a in agents) or "- (none)"
    example = json.dumps(TEMPLATES[1]["graph"], ensure_ascii=False)
    return f"{GUIDE}\nAgents of this workspace:\n{listing}\n\nExample graph:\n{example}"


def extract_json(text: str) -> Any:
    """The first JSON object in a model answer (fenced or bare), or None."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None
