"""The web console has one component kit: `components/` (Preact + htm). The earlier builder kit and the dom.js
helpers of the pages once written as classes are gone."""
from __future__ import annotations

import re
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "static" / "app"
IMPORT = re.compile(r'from\s+"([^"]+)"')


def _imports() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for path in APP.rglob("*.js"):
        rel = path.relative_to(APP).as_posix()
        targets = [(path.parent / spec).resolve() for spec in IMPORT.findall(path.read_text()) if spec.startswith(".")]
        out[rel] = {t.relative_to(APP.resolve()).as_posix() for t in targets if APP.resolve() in t.parents}
    return out


def test_the_builder_kit_is_gone_and_nothing_imports_it() -> None:
    assert not (APP / "views" / "builder" / "kit.js").exists()
    assert not (APP / "views" / "builder" / "http.js").exists()  # its api.js wrapper too: pages import api.js
    assert [f for f, deps in _imports().items() if "views/builder/kit.js" in deps] == []


def test_dom_js_is_gone_and_no_page_is_hosted_as_a_class() -> None:
    """Every page, the chat view included, is a Preact component on components/: the dom.js helpers and the
    shell's host for class-written pages are gone."""
    assert not (APP / "dom.js").exists()
    assert [f for f, deps in _imports().items() if "dom.js" in deps] == []
    assert "legacy" not in (APP / "nav.js").read_text() and "LegacyHost" not in (APP / "shell.js").read_text()


def test_one_implementation_of_each_helper() -> None:
    """useLoad, useAction, Field, when, toasts and dialogs are defined once, in components/."""
    defined: dict[str, list[str]] = {}
    for path in APP.rglob("*.js"):
        for name in re.findall(r"^export (?:async )?function (\w+)", path.read_text(), re.M):
            defined.setdefault(name, []).append(path.relative_to(APP).as_posix())
    for name in ("useLoad", "useAction", "Field", "when", "toast", "Dialog", "confirmDialog", "formDialog", "page"):
        assert len(defined.get(name, [])) == 1 and defined[name][0].startswith("components/"), (name, defined.get(name))
