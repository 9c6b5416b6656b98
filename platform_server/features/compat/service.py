"""Answers for routes the original web console calls that have no feature behind them here.

Each answer is honest: an empty list where nothing is configured (SSO providers, content items,
search providers), "not available" where a runtime does not exist (the DeepSeek harness), and
the project's own documents for the docs viewer. README, API notes, lists them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from platform_server.web.errors import NotFound

_ROOT = Path(__file__).resolve().parents[3]
# The docs viewer's documents: slug -> (file under the project root, title). A fixed table, so no
# path ever comes from the request.
DOCS: dict[str, tuple[str, str]] = {
    "readme": ("README.md", "Agent platform server"),
    "developing": ("docs/DEVELOPING.md", "Developing"),
    "benchmarks": ("docs/benchmarks.md", "Benchmarks"),
}


def docs_list() -> list[dict[str, Any]]:
    """The documents that exist in this installation, as `{slug, title, group}`."""
    return [{"slug": slug, "title": title, "group": "Docs"} for slug, (rel, title) in DOCS.items() if (_ROOT / rel).is_file()]


def doc_content(slug: str) -> dict[str, Any]:
    """One document's markdown as `{slug, title, content}`; 404 for an unknown slug."""
    entry = DOCS.get(slug)
    if entry is None or not (_ROOT / entry[0]).is_file():
        raise NotFound("Document not found")
    rel, title = entry
    return {"slug": slug, "title": title, "content": (_ROOT / rel).read_text(encoding="utf-8")}


def content_items_page(page: int, size: int) -> dict[str, Any]:
    """This server publishes no content pieces: always an empty page."""
    return {"records": [], "total": 0, "page": page, "size": size}


def content_items_summary() -> dict[str, int]:
    return {"total": 0, "draft": 0, "packaged": 0, "published": 0}


def dsh_status() -> dict[str, Any]:
    """The DeepSeek harness runtime does not exist in this server: not installed, cannot be enabled."""
    return {
        "supported": False,
        "installed": False,
        "enabled": False,
        "state": "UNSUPPORTED",
        "artifactManifestConfigured": False,
        "config": {},
        "managed": {},
        "message": "The DeepSeek harness runtime is not part of this server",
    }


def dsh_diagnostics() -> dict[str, Any]:
    return {"supported": False, "executableAvailable": False, "cordisConfigAvailable": False}


def search_providers() -> dict[str, Any]:
    """No web-search provider is built in."""
    return {"providers": [], "resolvedId": None, "resolvedSource": None}
