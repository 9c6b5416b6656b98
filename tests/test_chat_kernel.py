"""The chat turn's path is readable in one place: the service is built from its collaborators (never the
whole platform), and a turn's database writes go through one store module."""
from __future__ import annotations

import ast
import inspect
import pathlib

from platform_server.features.chat.service import ChatService

CHAT = pathlib.Path(__file__).resolve().parents[1] / "platform_server" / "features" / "chat"
# Entry points that hold the platform by design: handlers and lifecycle (they hand the service its
# collaborators), and the sub-agents' shared tool setup (`tool_calls.agent_tools`).
HOLDS_PLATFORM = {"handlers.py", "admin.py", "lifecycle.py", "tool_calls.py"}
# store.py writes; models.py declares tables; uploads.py is the upload route's own write, not a turn's.
WRITES = {"store.py", "models.py", "uploads.py"}
TABLES = {"Conversation", "Message", "ContextSummary"}
WRITE_METHODS = {"update", "delete", "create", "insert", "insert_many", "save", "delete_instance", "replace"}
WRITE_HELPERS = {"insert_row", "update_row", "one_transaction"}


def _trees() -> dict[str, ast.Module]:
    return {p.name: ast.parse(p.read_text()) for p in sorted(CHAT.glob("*.py"))}


def test_the_chat_service_is_built_from_its_collaborators_and_keeps_no_platform() -> None:
    params = set(inspect.signature(ChatService.__init__).parameters)
    assert {"config", "llm", "tools", "store"} <= params and "platform" not in params
    offenders = []
    for name, tree in _trees().items():
        if name in HOLDS_PLATFORM:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Name, ast.arg)) and (node.id if isinstance(node, ast.Name) else node.arg) == "platform":
                offenders.append(f"{name}:{node.lineno}")
            elif isinstance(node, ast.Attribute) and node.attr == "platform":
                offenders.append(f"{name}:{node.lineno}")
    assert offenders == [], offenders


def test_a_turns_database_writes_are_all_in_the_store_module() -> None:
    offenders = []
    for name, tree in _trees().items():
        if name in WRITES:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Name) and f.id in WRITE_HELPERS:
                    offenders.append(f"{name}:{node.lineno} {f.id}")
                elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                    if f.value.id in TABLES and f.attr in WRITE_METHODS or (f.value.id == "database" and f.attr == "atomic"):
                        offenders.append(f"{name}:{node.lineno} {f.value.id}.{f.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value.lstrip().upper().startswith(("INSERT ", "UPDATE ", "DELETE ")):
                    offenders.append(f"{name}:{node.lineno} SQL write")
    assert offenders == [], offenders


# mypy checks these with disallow_any_explicit (mypy.ini); this names the offender without a mypy run.
TYPED_WITHOUT_ANY = [CHAT, CHAT.parents[1] / "integrations" / "llm", CHAT.parents[1] / "web"]


def test_nothing_on_the_turns_path_is_typed_any() -> None:
    offenders = []
    for folder in TYPED_WITHOUT_ANY:
        for path in sorted(folder.glob("*.py")):
            if path.name == "schemas.py":  # pydantic request bodies: their generated signatures carry Any
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Name) and node.id == "Any") or (isinstance(node, ast.Attribute) and node.attr == "Any"):
                    offenders.append(f"{path.parent.name}/{path.name}:{node.lineno}")
    assert offenders == [], offenders
