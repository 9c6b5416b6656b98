"""The code base keeps its shape: every area's files, the declared dependencies, and a web layer that knows no feature."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from platform_server.app import FEATURES, Feature, check_feature_order

ROOT = Path(__file__).resolve().parent.parent / "platform_server"
AREAS = ROOT / "features"
MAX_LINES = 600


def _areas() -> list[str]:
    return sorted(p.name for p in AREAS.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def _imports(path: Path) -> list[str]:
    """Every module a file imports, at the top or inside functions."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def _imported_areas(path: Path) -> set[str]:
    return {m.split(".")[2] for m in _imports(path) if m.startswith("platform_server.features.") and m.count(".") >= 2}


def _service_owners() -> dict[str, str]:
    """`platform.services.<name>` -> the area whose code sets it."""
    owners: dict[str, str] = {}
    for area in _areas():
        for path in (AREAS / area).rglob("*.py"):
            for name in re.findall(r"platform\.services\.(\w+) = ", path.read_text()):
                owners[name] = area
    return owners


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


@pytest.mark.parametrize("layer", ["web", "integrations"])
def test_the_web_and_integrations_layers_import_no_feature(layer: str) -> None:
    offenders = {str(p.relative_to(ROOT)): sorted(_imported_areas(p)) for p in (ROOT / layer).rglob("*.py") if _imported_areas(p)}
    assert offenders == {}


def test_every_area_declares_the_areas_it_imports_or_whose_services_it_uses() -> None:
    owners = _service_owners()
    declared = {f.name: set(f.needs) | set(f.uses) for f in FEATURES}
    missing: dict[str, set[str]] = {}
    for area in _areas():
        used: set[str] = set()
        for path in (AREAS / area).rglob("*.py"):
            used |= _imported_areas(path)
            used |= {owners[n] for n in re.findall(r"services\.(\w+)", path.read_text()) if n in owners}
        undeclared = used - {area} - declared[area]
        if undeclared:
            missing[area] = undeclared
    assert missing == {}


def test_every_declared_dependency_is_real() -> None:
    owners = _service_owners()
    unused: dict[str, set[str]] = {}
    for feature in FEATURES:
        used: set[str] = set()
        for path in (AREAS / feature.name).rglob("*.py"):
            used |= _imported_areas(path)
            used |= {owners[n] for n in re.findall(r"services\.(\w+)", path.read_text()) if n in owners}
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
