"""The web console has one component kit: `components/` (Preact + htm). The earlier builder kit is gone, and
the dom.js helpers remain only in the pages still written as classes, a list that may only shrink."""
from __future__ import annotations

import re
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "static" / "app"
# The chat view (its stream and reconnect logic): still dom.js classes (the CHATUI lane moves it).
STILL_ON_DOM_JS = {
    "chat/attachments.js", "chat/composer.js", "chat/history.js", "chat/list.js", "chat/talk.js", "chat/turn.js",
    "views/chat.js",
}
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
    assert [f for f, deps in _imports().items() if "views/builder/kit.js" in deps] == []


def test_only_the_pages_still_written_as_classes_use_dom_js() -> None:
    users = {f for f, deps in _imports().items() if "dom.js" in deps and f != "dom.js"}
    assert users <= STILL_ON_DOM_JS, f"new users of dom.js (use components/): {sorted(users - STILL_ON_DOM_JS)}"
    assert STILL_ON_DOM_JS <= users | {"dom.js"}, f"ported off dom.js: drop from the list {sorted(STILL_ON_DOM_JS - users)}"


def test_one_implementation_of_each_helper() -> None:
    """useLoad, useAction, Field, when, toasts and dialogs are defined once, in components/."""
    defined: dict[str, list[str]] = {}
    for path in APP.rglob("*.js"):
        for name in re.findall(r"^export (?:async )?function (\w+)", path.read_text(), re.M):
            defined.setdefault(name, []).append(path.relative_to(APP).as_posix())
    for name in ("useLoad", "useAction", "Field", "when", "toast", "Dialog", "confirmDialog", "formDialog", "page"):
        assert len(defined.get(name, [])) == 1 and defined[name][0].startswith("components/"), (name, defined.get(name))
