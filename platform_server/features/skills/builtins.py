"""The built-in skills seeded into every workspace and the skill templates (shipped content)."""

from __future__ import annotations

from typing import Any

WEB_RESEARCH = """---
name: web-research
displayName: Web research
description: Research a question on the web with web_fetch, compare sources and cite them.
version: 1.0.0
---

# Web research

Use this skill when the user asks a question that needs current or external information.

1. Restate the question and decide what a complete answer needs.
2. Fetch two or more independent sources with the `web_fetch` tool; prefer primary sources
   (official documentation, papers, the organisation's own site).
3. Note for every claim which source supports it. Flag sources that disagree.
4. Never invent a URL: cite only pages you actually fetched.
5. Answer with a short summary first, then the details, then a "Sources" list of the URLs used.
"""

STRUCTURED_SUMMARY = """---
name: structured-summary
displayName: Structured summary
description: Summarize long text, documents or discussions into a short, structured brief.
version: 1.0.0
---

# Structured summary

Use this skill when asked to summarize, condense or brief someone on a longer text.

Write the summary in this shape:

- **TL;DR**: one or two sentences with the main point.
- **Key points**: at most seven bullets, most important first.
- **Decisions / open questions**: what was decided, what is still open (omit if none).
- **Next steps**: concrete actions with owners when the text names them (omit if none).

Keep the author's meaning; do not add facts that are not in the source. Quote exact figures.
Match the language of the source unless the user asks otherwise.
"""

GIT_WORKFLOW = """---
name: git-workflow
displayName: Git workflow
description: Inspect and change a git repository safely; small commits with clear messages.
version: 1.0.0
requires:
  bins: [git]
---

# Git workflow

Use this skill when working inside a git repository with the `shell_exec` tool.

- Start with `git status` and `git log --oneline -10` to understand the state.
- Never rewrite published history (`push --force`, `reset --hard` on shared branches) without
  the user's explicit confirmation.
- Make small, focused commits. Message: an imperative summary line under 72 characters, a blank
  line, then why the change was made.
- Before committing, show the user `git diff --stat` and the key hunks.
- Resolve merge conflicts by reading both sides; explain the resolution.
"""

BUILTIN_SKILLS: list[str] = [WEB_RESEARCH, STRUCTURED_SUMMARY, GIT_WORKFLOW]

_CODE_REVIEW = """---
name: code-review
displayName: Code review
description: Review a change for correctness, security and readability, with actionable comments.
version: 1.0.0
---

# Code review

1. Understand the intent of the change before judging the details.
2. Check correctness first: edge cases, error handling, concurrency, resource leaks.
3. Check security: input validation, injection, secrets in code, authorization.
4. Then readability: naming, structure, tests that would fail without the change.
5. Write each comment as: location, problem, suggested fix. Mark blocking vs. nit.
"""

_MEETING_NOTES = """---
name: meeting-notes
displayName: Meeting notes
description: Turn a meeting transcript into notes with decisions and action items.
version: 1.0.0
---

# Meeting notes

From the transcript, produce:

## Attendees
## Summary (3-5 sentences)
## Decisions
## Action items (owner, task, due date if stated)
## Open questions

Only record what was said; mark unclear owners as "unassigned".
"""

_API_INTEGRATION = """---
name: api-integration
displayName: API integration
description: Call a third-party HTTP API with a key kept as a skill secret.
version: 1.0.0
requires:
  secrets: [API_KEY]
---

# API integration

Describe here which API this skill talks to, its base URL and the endpoints the agent may use.

- The API key is stored as the skill secret `API_KEY`; never print it or put it in a reply.
- Read the API's rate limits and retry politely on HTTP 429 with a growing delay.
- Validate responses before using them; report API errors to the user in plain words.
"""

# Fixed ids so a template keeps its id across installs.
TEMPLATES: list[dict[str, Any]] = [
    {
        "id": 3001,
        "sort_order": 10,
        "name": "code-review",
        "display_name": "Code review",
        "category": "engineering",
        "description": "Review changes for correctness, security and readability.",
        "content": _CODE_REVIEW,
    },
    {
        "id": 3002,
        "sort_order": 20,
        "name": "meeting-notes",
        "display_name": "Meeting notes",
        "category": "productivity",
        "description": "Turn a transcript into notes, decisions and action items.",
        "content": _MEETING_NOTES,
    },
    {
        "id": 3003,
        "sort_order": 30,
        "name": "api-integration",
        "display_name": "API integration",
        "category": "integration",
        "description": "A starting point for a skill that calls an HTTP API with a secret key.",
        "content": _API_INTEGRATION,
    },
]
