"""The file store port: the data directory, where uploads, agent workspaces, media, wiki archives, skills
and the working folders of MCP and ACP servers live.

Areas ask the store for their folder (`files.current().path("wiki", kb_id)`) instead of joining names
onto `config.data_dir` themselves: one place resolves the root and refuses a part that would leave it.
Today it is a local folder; with several processes (issue 31) it is a folder every process mounts (a
shared volume), and another implementation may map the same names elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class FileStore(Protocol):
    @property
    def root(self) -> Path:
        """The store's folder, resolved (symlinks followed) once."""

    def path(self, *parts: str | int) -> Path:
        """`<root>/<part>/...` (not created); each part one plain name or an id, never a separator or `..`
        (ValueError: a bug, not user input, since areas name their own folders)."""


class LocalFileStore:
    """The default: the configured data directory on this machine."""

    def __init__(self, root: str) -> None:
        self._root = Path(root).resolve()  # once: a chat turn asks for its agent's folder several times

    @property
    def root(self) -> Path:
        return self._root

    def path(self, *parts: str | int) -> Path:
        names = [str(int(p)) if isinstance(p, int) else p for p in parts]
        for name in names:
            if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
                raise ValueError(f"not a plain name inside the data directory: {name!r}")
        return self._root.joinpath(*names)


_current: FileStore = LocalFileStore("data")


def use(store: FileStore) -> None:
    """Install the process's file store (at startup, from `data_dir`)."""
    global _current
    _current = store


def current() -> FileStore:
    return _current
