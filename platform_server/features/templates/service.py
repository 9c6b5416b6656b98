"""Agent templates: the seeded presets, listing, and creating an agent from one."""

from __future__ import annotations

from typing import Any

from platform_server.config import Config
from platform_server.db import database
from platform_server.features.agents import files
from platform_server.features.agents import service as agents
from platform_server.features.agents.schemas import AgentCreate
from platform_server.features.templates.models import AgentTemplate
from platform_server.serialize import Fields, flag, ident, items
from platform_server.web.context import Caller
from platform_server.web.errors import NotFound

_CODER_AGENTS_MD = """# Working agreement

- Read the relevant files before changing them; keep changes small and focused.
- Explain what you changed and why, and how to verify it.
- Prefer the standard library and the project's existing style.
- Never run destructive commands without saying so first.
"""

_RESEARCH_AGENTS_MD = """# Research method

1. Restate the question and what a good answer needs.
2. Gather sources with `web_fetch`; note each source's URL.
3. Separate facts from interpretation; flag conflicting sources.
4. Save longer findings to `notes/` with `write_file`.
5. Answer with a short summary first, then details and the sources.
"""

_WRITER_STYLE_MD = """# Style guide

- Plain, active sentences; one idea per paragraph.
- Match the reader's level; define terms on first use.
- Offer an outline before long pieces, then draft, then tighten.
"""

# Fixed ids so a template keeps its id across installs (ids are Longs like every other id).
SEEDS: list[dict[str, Any]] = [
    {
        "id": 1001,
        "sort_order": 10,
        "name": "General assistant",
        "category": "general",
        "icon": "🤖",
        "description": "A helpful all-round assistant that can tell the time and read web pages.",
        "agent_type": "react",
        "max_iterations": 10,
        "default_thinking_level": None,
        "tags": "general,assistant",
        "system_prompt": "You are a helpful, precise assistant. Answer clearly and concisely. "
        "When you are unsure, say so. Use tools only when they help answer the question.",
        "tool_names": ["get_current_time", "web_fetch"],
        "prompt_files": ["MEMORY.md"],
        "files": {},
    },
    {
        "id": 1002,
        "sort_order": 20,
        "name": "Coder",
        "category": "engineering",
        "icon": "💻",
        "description": "A software engineer that reads, writes and runs code in its workspace.",
        "agent_type": "react",
        "max_iterations": 25,
        "default_thinking_level": "medium",
        "tags": "code,engineering",
        "system_prompt": "You are an expert software engineer. Work in your workspace: list and read files "
        "before editing, write complete files, and run commands when shell access is enabled. "
        "Show code in fenced blocks and explain trade-offs briefly.",
        "tool_names": ["list_files", "read_file", "write_file", "shell_exec"],
        "prompt_files": ["AGENTS.md"],
        "files": {"AGENTS.md": _CODER_AGENTS_MD},
    },
    {
        "id": 1003,
        "sort_order": 30,
        "name": "Researcher",
        "category": "research",
        "icon": "🔎",
        "description": "Investigates a question with web sources and keeps notes.",
        "agent_type": "react",
        "max_iterations": 20,
        "default_thinking_level": "high",
        "tags": "research,web",
        "system_prompt": "You are a careful researcher. Find and compare sources, cite the URLs you used, "
        "and distinguish established facts from opinion or speculation.",
        "tool_names": ["web_fetch", "get_current_time", "list_files", "read_file", "write_file"],
        "prompt_files": ["AGENTS.md"],
        "files": {"AGENTS.md": _RESEARCH_AGENTS_MD},
    },
    {
        "id": 1004,
        "sort_order": 40,
        "name": "Writer",
        "category": "writing",
        "icon": "📝",
        "description": "Drafts, edits and polishes text, keeping drafts in its workspace.",
        "agent_type": "react",
        "max_iterations": 10,
        "default_thinking_level": "low",
        "tags": "writing,editing",
        "system_prompt": "You are a skilled writer and editor. Adapt tone to the audience, keep structure "
        "clear, and when editing, explain the most important changes.",
        "tool_names": ["list_files", "read_file", "write_file"],
        "prompt_files": ["STYLE.md"],
        "files": {"STYLE.md": _WRITER_STYLE_MD},
    },
    {
        "id": 1005,
        "sort_order": 50,
        "name": "Planner",
        "category": "productivity",
        "icon": "🗺️",
        "description": "Breaks a goal into a plan of steps, then executes and reports each step.",
        "agent_type": "plan_execute",
        "max_iterations": 15,
        "default_thinking_level": "medium",
        "tags": "planning,productivity",
        "system_prompt": "You are a methodical planner. First write a short numbered plan of concrete steps, "
        "then carry out each step, recording the outcome, and finish with a summary of what was done.",
        "tool_names": ["get_current_time", "list_files", "read_file", "write_file"],
        "prompt_files": [],
        "files": {},
    },
]


def seed() -> None:
    """Insert the built-in templates, refreshing their content (idempotent)."""
    with database.atomic():
        for row in SEEDS:
            values = {k: v for k, v in row.items() if k != "id"}
            AgentTemplate.insert(id=row["id"], builtin=True, **values).on_conflict(
                conflict_target=[AgentTemplate.id],
                update={getattr(AgentTemplate, k): v for k, v in values.items()},
            ).execute()


to_dict = Fields(
    id=ident("id"),
    name="name",
    description="description",
    category="category",
    icon="icon",
    agentType="agent_type",
    systemPrompt="system_prompt",
    maxIterations="max_iterations",
    defaultThinkingLevel="default_thinking_level",
    tags="tags",
    toolNames=items("tool_names"),
    promptFiles=items("prompt_files"),
    files=lambda t: sorted((t.files or {}).keys()),
    builtin=flag("builtin"),
)


def list_templates() -> list[dict[str, Any]]:
    return [to_dict(t) for t in AgentTemplate.select().order_by(AgentTemplate.sort_order, AgentTemplate.id)]


def apply(caller: Caller, template_id: int, name: str | None) -> tuple[dict[str, Any], dict[str, str]]:
    """Create an agent in the caller's workspace from a template; returns it and the files to write."""
    t = AgentTemplate.get_or_none(AgentTemplate.id == template_id)
    if t is None:
        raise NotFound("Template not found")
    req = AgentCreate.model_validate(
        {
            "name": name or t.name,
            "description": t.description,
            "agentType": t.agent_type,
            "systemPrompt": t.system_prompt,
            "maxIterations": t.max_iterations,
            "icon": t.icon,
            "tags": t.tags,
            "defaultThinkingLevel": t.default_thinking_level,
        }
    )
    with database.atomic():
        agent = agents.create(caller, req, template_id=t.id)
        agent_id = int(agent["id"])
        if t.tool_names:
            agents.set_tools(caller, agent_id, list(t.tool_names))
        if t.prompt_files:
            agents.set_prompt_files(caller, agent_id, list(t.prompt_files))
    return agents.to_dict(agents.get_agent(caller, agent_id)), dict(t.files or {})


def write_files(config: Config, agent_id: int, contents: dict[str, str]) -> None:
    """Write a template's starter files into the new agent's workspace (blocking)."""
    root = agents.agent_dir(config, agent_id)
    for rel, text in contents.items():
        files.write_bytes(root, rel, text.encode("utf-8"))
