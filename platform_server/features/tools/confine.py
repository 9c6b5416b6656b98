"""Confine a user-supplied relative path to a root folder: `..`, absolute paths, symlinks and NUL never escape."""
from __future__ import annotations

import os
import pathlib


class PathEscape(ValueError):
    """The path is not acceptable or would leave the root."""


def resolve_inside(root: pathlib.Path, rel: str) -> pathlib.Path:
    """The real path of `rel` under `root`, refusing anything that resolves outside it.

    Symlinks are resolved (existing parts of the path), so a link pointing out of the root is
    refused; `""` and `"."` name the root itself.
    """
    if not isinstance(rel, str):
        raise PathEscape("Path must be a string")
    if "\x00" in rel:
        raise PathEscape("Path must not contain NUL characters")
    text = rel.replace("\\", "/").strip()
    if text.startswith("/") or pathlib.PureWindowsPath(rel).drive or text.startswith("~"):
        raise PathEscape(f"Absolute paths are not allowed: {rel}")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathEscape(f"Path must not contain '..': {rel}")
    real_root = pathlib.Path(os.path.realpath(root))
    candidate = pathlib.Path(os.path.realpath(real_root.joinpath(*parts))) if parts else real_root
    if candidate != real_root and real_root not in candidate.parents:
        raise PathEscape(f"Path escapes the agent workspace: {rel}")
    return candidate


def display_path(root: pathlib.Path, path: pathlib.Path) -> str:
    """`path` relative to the (real) root, with forward slashes; `.` for the root."""
    rel = path.relative_to(pathlib.Path(os.path.realpath(root)))
    return rel.as_posix() or "."
