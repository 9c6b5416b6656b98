"""The skills cache on disk: `<data_dir>/skills/<workspaceId>/<name>/` mirrors the database.

Every function here is blocking (run it off the IOLoop) and takes plain values; paths go through
`features/agents/files.py`, so names from the database or a ZIP can never leave their folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platform_server.config import Config
from platform_server.features.agents import files
from platform_server.features.agents import service as agents
from platform_server.ports import files as file_store
from platform_server.web.errors import ApiError

SKILL_FILE = "SKILL.md"
LESSONS_FILE = "LESSONS.md"
MAX_LESSONS_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Bundle:
    """What a skill folder holds: the SKILL.md text and the other files."""

    workspace_id: int
    name: str
    content: str
    files: dict[str, bytes]


def skills_root(config: Config) -> Path:
    return file_store.current().path("skills")


def skill_dir(config: Config, workspace_id: int, name: str) -> Path:
    """The cache folder of one skill (not created), confined to the skills root."""
    root = skills_root(config)
    return files.resolve_inside(root, f"{int(workspace_id)}/{name}")


def _prune_empty_dirs(root: Path) -> None:
    for current, dirs, _ in os.walk(root, topdown=False, followlinks=False):
        if Path(current) == root:
            continue
        with contextlib.suppress(OSError):
            if not os.listdir(current) and not os.path.islink(current):
                os.rmdir(current)


def write_bundle(config: Config, bundle: Bundle) -> None:
    """Make the folder hold exactly SKILL.md and the bundle files (LESSONS.md is kept)."""
    root = skill_dir(config, bundle.workspace_id, bundle.name)
    root.mkdir(parents=True, exist_ok=True)
    files.write_bytes(root, SKILL_FILE, bundle.content.encode("utf-8"))
    for rel, data in bundle.files.items():
        files.write_bytes(root, rel, data)
    keep = {SKILL_FILE, LESSONS_FILE, *bundle.files}
    for rel, _ in list(files.walk_files(root)):
        if rel not in keep:
            with contextlib.suppress(ApiError, OSError):
                files.delete_path(root, rel)
    _prune_empty_dirs(root)


def remove_dir(config: Config, workspace_id: int, name: str) -> None:
    """Delete a skill's cache folder (a symlink in its place is unlinked, never followed)."""
    path = skill_dir(config, workspace_id, name)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        path.unlink()
        return
    shutil.rmtree(path, ignore_errors=True)


def sync_all(config: Config, bundles: list[Bundle], workspace_id: int) -> dict[str, Any]:
    """Write every bundle and remove folders of skills that no longer exist in the workspace."""
    for bundle in bundles:
        write_bundle(config, bundle)
    names = {b.name for b in bundles}
    removed = 0
    base = skills_root(config) / str(int(workspace_id))
    if base.is_dir() and not base.is_symlink():
        for entry in os.scandir(base):
            if entry.name not in names:
                remove_dir(config, workspace_id, entry.name)
                removed += 1
    return {"synced": len(bundles), "removed": removed}


def read_folder(config: Config, workspace_id: int, name: str, max_file: int, max_total: int) -> Bundle | None:
    """What the folder holds now (None without a SKILL.md); oversized files are skipped."""
    root = skill_dir(config, workspace_id, name)
    text = files.read_text_capped(root, SKILL_FILE, max_file)
    if text is None:
        return None
    found: dict[str, bytes] = {}
    total = 0
    for rel, st in files.walk_files(root) if root.is_dir() else []:
        if rel in (SKILL_FILE, LESSONS_FILE) or st.st_size > max_file or total + st.st_size > max_total:
            continue
        try:
            found[rel] = files.read_bytes(root, rel, max_file)
        except ApiError:
            continue
        total += len(found[rel])
    return Bundle(workspace_id, name, text, found)


def folder_info(config: Config, workspace_id: int, name: str, expected: Bundle) -> dict[str, Any]:
    """Path, files with sizes, and whether the folder matches the database."""
    root = skill_dir(config, workspace_id, name)
    listed = files.list_files(root) if root.is_dir() and not root.is_symlink() else []
    on_disk = {i["path"] for i in listed} - {LESSONS_FILE}
    in_sync = on_disk == {SKILL_FILE, *expected.files}
    if in_sync:
        size = max([len(expected.content.encode("utf-8")), *(len(d) for d in expected.files.values())]) + 1
        current = read_folder(config, workspace_id, name, size, 1 << 40)
        in_sync = current is not None and current.content == expected.content and current.files == expected.files
    return {
        "path": f"skills/{int(workspace_id)}/{name}",
        "exists": root.is_dir(),
        "files": listed,
        "fileCount": len(listed),
        "totalBytes": sum(i["size"] for i in listed),
        "inSync": in_sync,
    }


def read_lessons(config: Config, workspace_id: int, name: str) -> str | None:
    return files.read_text_capped(skill_dir(config, workspace_id, name), LESSONS_FILE, MAX_LESSONS_BYTES)


def clear_lessons(config: Config, workspace_id: int, name: str) -> bool:
    """Remove LESSONS.md; True when there was one."""
    root = skill_dir(config, workspace_id, name)
    try:
        files.delete_path(root, LESSONS_FILE)
    except ApiError:
        return False
    return True


def export_to_agent(config: Config, agent_id: int, bundle: Bundle) -> list[dict[str, Any]]:
    """Copy SKILL.md and the bundle into the agent's workspace under `skills/<name>/`."""
    root = agents.agent_dir(config, agent_id)
    prefix = f"skills/{bundle.name}/"
    files.write_bytes(root, prefix + SKILL_FILE, bundle.content.encode("utf-8"))
    for rel, data in bundle.files.items():
        files.write_bytes(root, prefix + rel, data)
    return files.list_files(root / "skills" / bundle.name) if (root / "skills" / bundle.name).is_dir() else []
