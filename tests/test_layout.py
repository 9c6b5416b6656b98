"""The code base keeps its shape: every area's files, the declared dependencies, and a web layer that knows no feature."""
from __future__ import annotations

import ast
import re
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from platform_server.app import FEATURES, Feature, check_feature_order, collect_flags

ROOT = Path(__file__).resolve().parent.parent / "platform_server"
AREAS = ROOT / "features"
MAX_LINES = 600


def _areas() -> list[str]:
    return sorted(p.name for p in AREAS.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def _lazy_import_name(node: ast.AST) -> str | None:
    """The module of a `lazy_import("<module>")` call (platform_server/lazy.py)."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy_import"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def _imports(path: Path) -> list[str]:
    """Every module a file imports, at the top, inside functions or through `lazy_import`."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif (lazy := _lazy_import_name(node)) is not None:
            names.append(lazy)
    return names


def _imported_areas(path: Path) -> set[str]:
    return {m.split(".")[2] for m in _imports(path) if m.startswith("platform_server.features.") and m.count(".") >= 2}


def test_every_area_is_registered_once_in_features_and_every_registered_area_exists() -> None:
    names = [f.name for f in FEATURES]
    assert len(names) == len(set(names))
    assert sorted(names) == _areas()


def test_every_area_has_an_init_and_a_handlers_module_that_ends_with_routes() -> None:
    for area in _areas():
        handlers = AREAS / area / "handlers.py"
        assert handlers.exists(), area
        tree = ast.parse(handlers.read_text())
        assigned = [t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)]
        assert "ROUTES" in assigned, f"{area}/handlers.py defines no ROUTES"


def _defines_routes(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(t, ast.Name) and t.id == "ROUTES" for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
               for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))


def test_extra_route_files_join_handlers_py_one_way_spliced_as_module_routes() -> None:
    """An extra route file (`page_handlers.py`, `admin.py`, ...) ends with its own ROUTES; handlers.py imports the module
    and splices `*<module>.ROUTES` into its list (no renamed constants, no `+` chains)."""
    offenders: list[str] = []
    for area in _areas():
        handlers = (AREAS / area / "handlers.py").read_text()
        for path in sorted((AREAS / area).glob("*.py")):
            if path.name != "handlers.py" and _defines_routes(path) and f"*{path.stem}.ROUTES," not in handlers:
                offenders.append(f"{area}/{path.name}")
        if re.search(r"ROUTES\s*\+|\+\s*\w+\.ROUTES|import ROUTES as", handlers):
            offenders.append(f"{area}/handlers.py joins routes with + or an alias")
    assert offenders == []


def test_models_modules_declare_migrations_and_lifecycles_only_start_and_stop() -> None:
    for area in _areas():
        models = AREAS / area / "models.py"
        if models.exists():
            assert re.search(r"^MIGRATIONS\b", models.read_text(), re.M), f"{area}/models.py has no MIGRATIONS"
        lifecycle = AREAS / area / "lifecycle.py"
        if lifecycle.exists():
            tree = ast.parse(lifecycle.read_text())
            hooks = {n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef)}
            assert hooks & {"start", "stop"}, f"{area}/lifecycle.py has neither start nor stop"


def test_no_module_is_longer_than_six_hundred_lines() -> None:
    long = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py") if len(p.read_text().splitlines()) > MAX_LINES]
    assert long == []


def test_a_function_imports_only_platform_server_modules_and_libraries_come_through_lazy_import_at_the_top() -> None:
    """docs/DEVELOPING.md "Layout and call direction": a library that only some routes or turns use is named at the top of the
    module with `lazy_import` (imported on first use); an import inside a function is only of our own modules."""
    offenders: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] != "platform_server"]
                if _lazy_import_name(node) is not None:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} lazy_import inside a function")
    assert offenders == []


# The modules that assemble the process; every other module reads the contract in platform_server/platform.py.
IMPORTS_APP = {"app.py", "cli.py", "__main__.py"}


def test_only_the_assembling_modules_import_app_py_not_even_for_type_checking() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in sorted(ROOT.rglob("*.py"))
                 if str(p.relative_to(ROOT)) not in IMPORTS_APP
                 and any(m == "platform_server.app" or m.startswith("platform_server.app.") for m in _imports(p))]
    assert offenders == []


def test_platform_py_is_a_leaf_that_imports_no_area_and_not_app_py() -> None:
    imported = [m for m in _imports(ROOT / "platform.py") if m.startswith("platform_server.")]
    assert [m for m in imported if m.startswith(("platform_server.features", "platform_server.app"))] == []


def _keys_declared() -> dict[str, str]:
    """RuntimeKey constant -> the area whose `__init__.py` declares it."""
    out: dict[str, str] = {}
    for area in _areas():
        for node in ast.parse((AREAS / area / "__init__.py").read_text()).body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and "RuntimeKey" in ast.unparse(node.annotation):
                out[node.target.id] = area
    return out


def test_runtime_keys_are_declared_in_their_area_package_and_only_that_area_sets_them() -> None:
    """`platform.set_runtime(KEY, ...)` only in the area that declares KEY (as home-assistant integrations own their runtime_data)."""
    keys = _keys_declared()
    assert {"TOOLS", "LLM", "CHAT"} <= set(keys)
    offenders: list[str] = []
    for area in _areas():
        for path in (AREAS / area).rglob("*.py"):
            for key in re.findall(r"set_runtime\((\w+)", path.read_text()):
                if keys.get(key) != area:
                    offenders.append(f"{path.relative_to(AREAS)} sets {key}")
    assert offenders == []


FLAG_USES = (r'gated\(\s*"(\w+)"', r'feature="(\w+)"', r'feature = "(\w+)"', r'(?:is_enabled|feature_enabled)\("(\w+)"\)')


def test_every_flag_a_route_tool_or_loop_checks_is_declared_in_an_areas_flags() -> None:
    """Flags are data beside ROUTES (`FLAGS = [Flag(...)]` in handlers.py), seeded from what the areas declare."""
    declared = [f.key for f in collect_flags()]
    used = {key for p in ROOT.rglob("*.py") for pattern in FLAG_USES for key in re.findall(pattern, p.read_text())}
    assert {"wiki", "talk_mode", "team_runs"} <= used
    assert sorted(used - set(declared)) == []
    assert len(declared) == len(set(declared))


def test_agent_tools_flags_and_drain_hooks_are_declared_only_in_handlers_py() -> None:
    """app.py collects `FLAGS`, `AGENT_TOOLS` and `DRAIN` from handlers.py; declared anywhere else they would do nothing."""
    misplaced = [f"{p.relative_to(AREAS)} {name}" for p in AREAS.rglob("*.py") if p.name != "handlers.py"
                 for name in re.findall(r"^(FLAGS|AGENT_TOOLS|DRAIN)\b", p.read_text(), re.M)]
    assert misplaced == []
    registering = [str(p.relative_to(AREAS)) for p in AREAS.rglob("lifecycle.py") if "runtime(TOOLS).register(" in p.read_text()]
    assert registering == [], "declare the area's tools in handlers.py AGENT_TOOLS"


# Classes that keep the platform only to hand it on to a function of the chat area (K3's turn path) that takes it.
KEEPS_PLATFORM_TO_HAND_ON = {
    "subagents/service.py:SubagentManager",
    "doors/mcp_door.py:McpDoor",  # builds the MCP tools (agents door, wiki door) on the first request, handing the platform on
}


def test_long_lived_objects_outside_chat_get_collaborators_not_the_platform_and_nothing_types_it_any() -> None:
    """A runtime receives what it uses in its constructor (typed), instead of keeping `platform` and pulling
    objects out of it when called; handlers read `self.platform` (the web layer's), chat/ is the turn path's lane."""
    keeping: list[str] = []
    untyped: list[str] = []
    for path in sorted(AREAS.rglob("*.py")):
        name = str(path.relative_to(AREAS))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                untyped += [f"{name}:{node.name}" for a in node.args.args + node.args.kwonlyargs
                            if a.arg == "platform" and a.annotation is not None and ast.unparse(a.annotation) == "Any"]
            if isinstance(node, ast.ClassDef) and not name.startswith("chat/"):
                fields = {t.attr for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets
                          if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
                fields |= {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
                if "platform" in fields and f"{name}:{node.name}" not in KEEPS_PLATFORM_TO_HAND_ON:
                    keeping.append(f"{name}:{node.name}")
    assert keeping == []
    assert untyped == []


@pytest.mark.parametrize("layer", ["web", "integrations"])
def test_the_web_and_integrations_layers_import_no_feature(layer: str) -> None:
    offenders = {str(p.relative_to(ROOT)): sorted(_imported_areas(p)) for p in (ROOT / layer).rglob("*.py") if _imported_areas(p)}
    assert offenders == {}


def test_every_area_declares_the_areas_it_imports_or_whose_runtimes_it_uses() -> None:
    """A runtime is read through its key (`platform.runtime(CHAT)`), imported from the area that declares it."""
    declared = {f.name: set(f.needs) | set(f.uses) for f in FEATURES}
    missing: dict[str, set[str]] = {}
    for area in _areas():
        used: set[str] = set()
        for path in (AREAS / area).rglob("*.py"):
            used |= _imported_areas(path)
        undeclared = used - {area} - declared[area]
        if undeclared:
            missing[area] = undeclared
    assert missing == {}


def test_every_declared_dependency_is_real() -> None:
    unused: dict[str, set[str]] = {}
    for feature in FEATURES:
        used: set[str] = set()
        for path in (AREAS / feature.name).rglob("*.py"):
            used |= _imported_areas(path)
        extra = set(feature.needs) | set(feature.uses)
        extra -= used
        if extra:
            unused[feature.name] = extra
    assert unused == {}


def test_the_start_order_check_refuses_an_area_that_needs_a_later_one() -> None:
    check_feature_order()  # the registered order is valid
    with pytest.raises(ValueError, match="'chat' needs 'tools'"):
        check_feature_order((Feature("chat", needs=("tools",)), Feature("tools")))
    with pytest.raises(ValueError, match="uses 'nowhere'"):
        check_feature_order((Feature("chat", uses=("nowhere",)),))


# Files whose request bodies, audited writes or row serialisers predate the conventions below; the lists only shrink.
BODIES_OUTSIDE_SCHEMAS: set[str] = set()
AUDITED_WRITES_BY_HAND: set[str] = set()
HAND_WRITTEN_ROW_DICTS: set[str] = set()


def _area_files() -> dict[str, Path]:
    return {str(p.relative_to(AREAS)): p for p in sorted(AREAS.rglob("*.py"))}


def _pydantic_classes(tree: ast.Module) -> list[str]:
    names = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "pydantic" for a in n.names}
    return [n.name for n in tree.body if isinstance(n, ast.ClassDef) and any(ast.unparse(b).split("[")[0] in names for b in n.bases)]


def test_request_bodies_and_other_pydantic_models_live_in_the_areas_schemas_modules() -> None:
    outside = {name: _pydantic_classes(ast.parse(p.read_text())) for name, p in _area_files().items() if not name.endswith("/schemas.py")}
    offenders = {name: classes for name, classes in outside.items() if classes and name not in BODIES_OUTSIDE_SCHEMAS}
    assert offenders == {}
    assert sorted(name for name in BODIES_OUTSIDE_SCHEMAS if not outside.get(name)) == [], "moved: drop them from the list"


def _writes_one_row_and_audits_it(block: ast.With) -> bool:
    """`with database.atomic():` holding only attribute assignments, one save/create/delete of a row and its `audit.record`."""
    if [ast.unparse(i.context_expr) for i in block.items] != ["database.atomic()"] or len(block.body) < 2:
        return False
    *pre, write, record = block.body
    if not all(isinstance(s, ast.Assign) and all(isinstance(t, ast.Attribute) for t in s.targets) for s in pre):
        return False
    if not (isinstance(record, ast.Expr) and isinstance(record.value, ast.Call) and ast.unparse(record.value.func) == "audit.record"
            and len(record.value.args) >= 4):
        return False
    row = ast.unparse(record.value.args[3]).removesuffix(".id")
    text = ast.unparse(write)
    return text in (f"{row}.save()", f"{row}.save(force_insert=True)", f"{row}.delete_instance()") or (
        isinstance(write, ast.Assign) and ast.unparse(write.targets[0]) == row and ".create(" in ast.unparse(write.value))


def test_writes_of_one_row_with_its_audit_event_go_through_audit_save() -> None:
    found = {name for name, p in _area_files().items()
             if any(isinstance(n, ast.With) and _writes_one_row_and_audits_it(n) for n in ast.walk(ast.parse(p.read_text())))}
    assert found - AUDITED_WRITES_BY_HAND == set()
    assert AUDITED_WRITES_BY_HAND - found == set(), "converted: drop them from the list"


def _hand_written_row_dicts(tree: ast.Module) -> list[str]:
    """One-argument functions that only return a dict of the argument's attributes: what `serialize.Fields` declares."""
    out = []
    for n in tree.body:
        if not isinstance(n, ast.FunctionDef) or len(n.args.args) != 1:
            continue
        body = [s for s in n.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        arg = n.args.args[0].arg
        if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Dict):
            continue
        keys, values = body[0].value.keys, body[0].value.values
        methods = {id(c.func) for c in ast.walk(body[0].value) if isinstance(c, ast.Call)}  # e.get(...) is no field read
        reads = [any(isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == arg and id(a) not in methods
                     for a in ast.walk(v)) for v in values]
        if len(keys) >= 3 and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys) and sum(reads) * 2 >= len(keys):
            out.append(n.name)
    return out


def test_rows_go_out_through_a_declared_field_map_not_a_hand_written_dict() -> None:
    found = {name: _hand_written_row_dicts(ast.parse(p.read_text())) for name, p in _area_files().items()}
    assert {name: fns for name, fns in found.items() if fns and name not in HAND_WRITTEN_ROW_DICTS} == {}
    assert sorted(name for name in HAND_WRITTEN_ROW_DICTS if not found.get(name)) == [], "converted: drop them from the list"


# The kernel's ports (platform_server/ports): what a second deployment replaces is reached through them.
DATABASE_ENGINE_NAMES = {
    "WATCHED_TABLES", "watch_table", "storage_fault", "open_database", "close_database", "start_checkpointer", "stop_checkpointer",
    "Database", "Checkpointer", "PRAGMAS", "copy_database", "integrity_check", "CopyBusy", "CopyFailed",
}


def _port_bypasses(source: str) -> list[str]:
    """What a module reaches around the ports: apsw, db.py's SQLite specifics, the event hub's own module."""
    tree = ast.parse(source)
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif (lazy := _lazy_import_name(node)) is not None:
            names.append(lazy)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "db" and node.attr in DATABASE_ENGINE_NAMES:
            names.append(f"platform_server.db.{node.attr}")
    return sorted({n for n in names if n.split(".")[0] == "apsw" or n == "platform_server.web.events" or n.startswith("platform_server.web.events.")
                   or (n.startswith("platform_server.db.") and n.rsplit(".", 1)[1] in DATABASE_ENGINE_NAMES)})


def test_the_port_rule_catches_each_way_around_the_ports() -> None:
    planted = ("import apsw\nfrom platform_server.db import WATCHED_TABLES, database\nfrom platform_server import db\n"
               "from platform_server.web.events import EventHub\nfrom platform_server.web import events\nx = db.watch_table\n")
    assert _port_bypasses(planted) == ["apsw", "platform_server.db.WATCHED_TABLES", "platform_server.db.watch_table",
                                       "platform_server.web.events", "platform_server.web.events.EventHub"]
    assert _port_bypasses("from platform_server.db import database, utcnow\nfrom platform_server.ports.events import stream\n") == []


@pytest.mark.parametrize("layer", ["features", "integrations"])
def test_areas_and_integrations_use_the_ports_not_the_sqlite_specifics_nor_the_hubs_module(layer: str) -> None:
    offenders = {str(p.relative_to(ROOT)): found for p in sorted((ROOT / layer).rglob("*.py")) if (found := _port_bypasses(p.read_text()))}
    assert offenders == {}


# Files that name the data directory itself, not a folder of their own in it: the jwt secret's file (read before the
# areas start), the datasource guard (the data dir is what it refuses), the system info (reports the folder) and the
# sandbox (binds the folder). The list only shrinks.
DATA_DIR_BY_HAND = {"features/auth/tokens.py", "features/datasources/sqlite_guard.py", "features/system/service.py", "integrations/sandbox.py"}
_DATA_DIR_JOIN = re.compile(r"(Path|os\.path\.join|os\.path\.realpath|os\.path\.abspath)\([^)]*data_dir")


def test_areas_ask_the_file_store_for_their_folders_instead_of_joining_onto_data_dir() -> None:
    files = [p for layer in ("features", "integrations") for p in (ROOT / layer).rglob("*.py")]
    found = {str(p.relative_to(ROOT)) for p in files if _DATA_DIR_JOIN.search(p.read_text())}
    assert found - DATA_DIR_BY_HAND == set()
    assert DATA_DIR_BY_HAND - found == set(), "converted: drop them from the list"


def test_every_library_setup_py_declares_is_imported_by_the_package() -> None:
    """A dependency nobody imports is a promise the code does not keep (`schedule` was one: the `Loop` base serves
    the interval loops; docs/DEVELOPING.md "Background loops")."""
    setup = ast.parse((ROOT.parent / "setup.py").read_text())
    declared = [re.split(r"[<>=!~\[; ]", e.value)[0] for kw in ast.walk(setup) if isinstance(kw, ast.keyword) and kw.arg == "install_requires"
                for e in kw.value.elts if isinstance(e, ast.Constant)]
    imported = {m.split(".")[0] for p in ROOT.rglob("*.py") for m in _imports(p)}
    distributions = packages_distributions()
    used = {d.lower().replace("_", "-") for m in imported for d in distributions.get(m, [])}
    assert declared and [d for d in declared if d.lower().replace("_", "-") not in used] == []
