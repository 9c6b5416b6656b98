"""LLM Wiki source folders: a linked folder syncs itself (watchdog), survives removal and restarts, rejects bad input."""
from __future__ import annotations

import asyncio
import gc
import os
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest

from tests.helpers.client import ApiClient
from tests.helpers.eventually import eventually
from tests.helpers.loop_watch import CallbackProbe
from tests.helpers.fake_openai import Script, ScriptedOpenAI
from tests.helpers.server import RunningServer
from tests.helpers.wiki import KB, make_kb, page, pages_answer, restart, use_fake_wiki_models

FAST = {"wiki_watch_debounce_s": 0.1, "wiki_watch_check_s": 0.1}


async def watcher(api: ApiClient, kb: str) -> dict[str, Any]:
    r = await api.get(f"{KB}/{kb}/source-watcher", token="bob")
    assert r.status == 200, r.body
    return r.data


def in_state(api: ApiClient, kb: str, state: str) -> Callable[[], Awaitable[Any]]:
    async def check() -> Any:
        w = await watcher(api, kb)
        return w if w["state"] == state else None
    return check


def page_says(api: ApiClient, kb: str, slug: str, text: str, archived: int = 0) -> Callable[[], Awaitable[Any]]:
    async def check() -> Any:
        r = await api.get(f"{KB}/{kb}/pages/{slug}", token="bob")
        return r.status == 200 and text in r.data["markdown"] and r.data["archived"] == archived and r.data
    return check


def material(api: ApiClient, kb: str, path: str, **want: Any) -> Callable[[], Awaitable[Any]]:
    async def check() -> Any:
        rows = (await api.get(f"{KB}/{kb}/raw", token="bob")).data
        row = next((r for r in rows if r["sourcePath"] == path), None)
        return row if row and all(row[k] == v for k, v in want.items()) else None
    return check


@pytest.mark.config(**FAST)
async def test_a_linked_folder_syncs_itself_and_survives_removal_and_a_restart(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Path) -> None:
    root = tmp_path / "roots"
    notes = root / "notes"
    notes.mkdir(parents=True)
    overrides = {**FAST, "wiki_source_roots": f"1:{root}"}
    server = await restart(server, **overrides)  # the roots setting, with the people kept
    try:
        api = server.client
        await use_fake_wiki_models(api, llm.url)
        kb = await make_kb(api)
        r = await api.put(f"{KB}/{kb}/source-directory", {"path": str(notes)}, token="bob")
        assert r.status == 200, r.body
        assert r.data["sourceDirectory"] == str(notes.resolve()) and r.data["watcher"]["state"] == "watching", r.data

        # A new file becomes a material, then pages, with no scan call.
        llm.enqueue(Script(text=pages_answer(page("photosynthesis", "Photosynthesis", "# Photosynthesis\n\nLight to sugar."))))
        (notes / "plants.md").write_text("# Plants\n\nPlants turn light into sugar by photosynthesis.\n")
        await eventually(material(api, kb, "plants.md", sourceType="directory", status="completed"))
        await eventually(page_says(api, kb, "photosynthesis", "Light to sugar."))
        # Editors' temporary and hidden files are ignored.
        (notes / ".plants.md.swp").write_bytes(b"\x00junk")
        (notes / "draft.md~").write_text("old")

        # An edit re-processes the file and the page changes.
        llm.enqueue(Script(text=pages_answer(page("photosynthesis", "Photosynthesis", "# Photosynthesis\n\nLight, water and CO2 to sugar."))))
        (notes / "plants.md").write_text("# Plants\n\nPlants turn light, water and CO2 into sugar.\n")
        await eventually(page_says(api, kb, "photosynthesis", "water and CO2"))
        rows = (await api.get(f"{KB}/{kb}/raw", token="bob")).data
        assert [r["sourcePath"] for r in rows] == ["plants.md"]

        # Deleting the file marks the material removed and archives its page (not lost).
        (notes / "plants.md").unlink()
        await eventually(material(api, kb, "plants.md", removed=True))
        await eventually(page_says(api, kb, "photosynthesis", "water and CO2", archived=1))
        w = await watcher(api, kb)
        assert w["lastScan"]["removed"] == 1 and w["pendingEvents"] == 0

        # The folder goes away: error; it comes back: watching again, and a file added meanwhile is read.
        away = root / "elsewhere"
        notes.rename(away)
        w = await eventually(in_state(api, kb, "error"))
        assert "missing" in w["error"]
        (away / "light.txt").write_text("Light is electromagnetic radiation.")
        llm.enqueue(Script(text=pages_answer(page("light", "Light", "# Light\n\nRadiation we see."))))
        away.rename(notes)
        await eventually(in_state(api, kb, "watching"))
        await eventually(page_says(api, kb, "light", "Radiation we see."))
        assert (await api.get(f"{KB}/{kb}/pages/photosynthesis", token="bob")).data["archived"] == 1

        # After a restart the watcher is back by itself and keeps syncing.
        server = await restart(server, **overrides)
        api = server.client
        await eventually(in_state(api, kb, "watching"))
        llm.enqueue(Script(text=pages_answer(page("chlorophyll", "Chlorophyll", "# Chlorophyll\n\nThe green pigment."))))
        (notes / "sub").mkdir()
        (notes / "sub" / "green.md").write_text("Chlorophyll is green.")
        await eventually(material(api, kb, "sub/green.md", status="completed"))
        await eventually(page_says(api, kb, "chlorophyll", "green pigment"))
        (notes / "sub" / "green.md").unlink()
        await eventually(page_says(api, kb, "chlorophyll", "green pigment", archived=1))
        notes.rename(away)
        await eventually(in_state(api, kb, "error"))
        away.rename(notes)
        await eventually(in_state(api, kb, "watching"))
    finally:
        await server.stop()


@pytest.mark.config(**FAST)
async def test_a_restored_file_brings_its_archived_page_back(server: RunningServer, people: dict, llm: ScriptedOpenAI,
                                                           tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    server = await restart(server, **FAST, wiki_source_roots=f"1:{tmp_path}")
    try:
        api = server.client
        await use_fake_wiki_models(api, llm.url)
        kb = await make_kb(api)
        (notes / "a.md").write_text("Alpha is the first letter.")
        llm.enqueue(Script(text=pages_answer(page("alpha", "Alpha", "# Alpha\n\nFirst letter."))))
        assert (await api.put(f"{KB}/{kb}/source-directory", {"path": "notes", "watch": False}, token="bob")).status == 200
        assert (await watcher(api, kb))["state"] == "paused"
        await eventually(page_says(api, kb, "alpha", "First letter."))  # linking scans once, even paused
        (notes / "a.md").unlink()
        r = await api.post(f"{KB}/{kb}/scan", token="bob")
        assert r.status == 200 and r.data["removed"] == 1
        assert (await api.get(f"{KB}/{kb}/pages/alpha", token="bob")).data["archived"] == 1
        (notes / "a.md").write_text("Alpha is the first letter.")
        r = await api.post(f"{KB}/{kb}/scan", token="bob")
        assert r.status == 200 and r.data["restored"] == 1 and r.data["added"] == 0
        assert (await api.get(f"{KB}/{kb}/pages/alpha", token="bob")).data["archived"] == 0
        r = await api.post(f"{KB}/{kb}/source-watcher/scan", token="bob")
        assert r.status == 200 and r.data["scanQueued"] is True and r.data["state"] == "paused"
        r = await api.put(f"{KB}/{kb}/source-directory", {"path": None}, token="bob")
        assert r.status == 200 and r.data["sourceDirectory"] is None and r.data["watcher"]["state"] == "unlinked"
        assert (await api.post(f"{KB}/{kb}/scan", token="bob")).status == 409  # unlinked: the KB's state
    finally:
        await server.stop()


async def test_no_folder_can_be_linked_until_roots_are_configured(api: ApiClient, people: dict, tmp_path: Path) -> None:
    kb = await make_kb(api)
    r = await api.put(f"{KB}/{kb}/source-directory", {"path": str(tmp_path)}, token="bob")
    assert r.status == 400 and "wiki_source_roots" in r.msg
    assert (await watcher(api, kb))["state"] == "unlinked"
    for scan in ("source-watcher/scan", "scan"):  # the KB's state, not the request: 409
        r = await api.post(f"{KB}/{kb}/{scan}", token="bob")
        assert r.status == 409 and "No source directory" in r.msg


@pytest.mark.config(**FAST)
async def test_bad_folders_and_files_are_refused_or_listed(server: RunningServer, people: dict, llm: ScriptedOpenAI,
                                                           tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    os.symlink(outside, root / "link-out")
    os.symlink(outside / "secret.md", root / "notes" / "leak.md")
    (root / "notes" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "notes" / "blob.txt").write_bytes(b"abc\x00\x01\x02")
    (root / "notes" / "broken.pdf").write_bytes(b"%PDF-1.4 nonsense")
    server = await restart(server, **FAST, wiki_source_roots=f"1:{root}")
    try:
        api = server.client
        await use_fake_wiki_models(api, llm.url)
        kb = await make_kb(api)
        for path, words in [(str(outside), "outside"), (str(root / "link-out"), "outside"),
                            (str(root / "nope"), "not found"), ("../outside", "outside"),
                            (str(root / "notes" / "photo.png"), "not a folder")]:
            r = await api.put(f"{KB}/{kb}/source-directory", {"path": path}, token="bob")
            assert r.status == 400 and words in r.msg, (path, r.body)
        assert (await api.get(f"{KB}/{kb}", token="bob")).data["sourceDirectory"] is None
        r = await api.put(f"{KB}/{kb}/source-directory", {"path": 5}, token="bob")
        assert r.status == 400 and r.msg.startswith("path: ")
        assert (await api.put(f"{KB}/{kb}/source-directory", {"path": str(root / "notes")}, token="carol")).status == 403
        assert (await api.put(f"{KB}/{kb}/source-directory", {"path": str(root / "notes")}, token="dave",
                              workspace=people["dave"]["workspace"])).status == 404
        assert (await api.put(f"{KB}/{kb}/source-directory", {"path": str(root / "notes")}, token="bob")).status == 200
        r = await api.post(f"{KB}/{kb}/scan", token="bob")
        assert r.status == 200, r.body
        assert r.data["added"] == 0 and r.data["failed"] + r.data["skipped"]
        assert {s["path"]: s["reason"] for s in r.data["skipped"]} == {
            "leak.md": "link leading outside the folder", "photo.png": "unsupported type"}
        failed = {f["path"]: f["error"] for f in r.data["failed"]}
        assert failed["blob.txt"] == "The file is binary, not text" and "PDF" in failed["broken.pdf"]
        assert (await api.get(f"{KB}/{kb}/raw", token="bob")).data == []
        assert (await api.get(f"{KB}/{kb}/source-watcher", token="dave", workspace=people["dave"]["workspace"])).status == 404
        assert (await api.post(f"{KB}/{kb}/scan", token="carol")).status == 403
        assert (await api.get(f"{KB}/{kb}/source-watcher", token="carol")).data["lastScan"]["failedCount"] == 2
    finally:
        await server.stop()


@pytest.mark.config(**FAST)
async def test_a_thousand_file_folder_is_imported_and_processed_without_stalling_the_server(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    for d in range(10):
        (notes / f"d{d}").mkdir(parents=True)
        for i in range(100):
            (notes / f"d{d}" / f"n{i}.md").write_text(f"# Note {d}-{i}\n\nNote {d}-{i} says {'words ' * 40}\n")
    server = await restart(server, **FAST, wiki_source_roots=f"1:{tmp_path}")
    try:
        api = server.client
        await use_fake_wiki_models(api, llm.url)
        llm.enqueue(*[Script(text=pages_answer(page(f"p{n}", f"Page {n}", f"# Page {n}\n\nSee [[p{n + 1}]]."))) for n in range(1000)])
        kb = await make_kb(api)
        slowest = 0.0
        # A full collection of the test process's heap (every earlier test's objects) is not the server's
        # work: collect first and keep the collector off while the loop is measured.
        gc.collect()
        gc.disable()
        with CallbackProbe() as probe:
            assert (await api.put(f"{KB}/{kb}/source-directory", {"path": str(notes)}, token="bob")).status == 200
            deadline = time.monotonic() + 100
            while time.monotonic() < deadline:
                for _ in range(10):  # another request, answered while the folder is imported and processed
                    started = time.monotonic()
                    assert (await api.get(f"{KB}/{kb}", token="bob")).status == 200
                    slowest = max(slowest, time.monotonic() - started)
                    await asyncio.sleep(0.1)
                r = await api.get(f"{KB}/{kb}/processing-status", token="bob")
                if r.data["total"] == 1000 and r.data["counts"]["completed"] >= 100:
                    break
        gc.enable()
        assert r.data["total"] == 1000 and r.data["counts"]["completed"] >= 100, r.data["counts"]
        print(f"\n1000 files imported, {r.data['counts']['completed']} processed: costliest loop callback "
              f"{probe.worst_cpu_s * 1000:.0f} ms of loop CPU ({probe.worst_wall_s * 1000:.0f} ms wall clock on this "
              f"machine) of {probe.callbacks} callbacks; slowest KB request {slowest * 1000:.0f} ms\n  it was: {probe.worst}")
        assert probe.worst_cpu_s < 0.1 and probe.callbacks > 1000, probe.worst
        w = await watcher(api, kb)
        assert w["lastScan"]["added"] == 1000 and w["state"] == "watching"
    finally:
        gc.enable()
        await server.stop()


@pytest.mark.config(**FAST)
async def test_file_events_scan_nothing_while_the_wiki_flag_is_off_and_catch_up_when_it_is_on_again(
        server: RunningServer, people: dict, llm: ScriptedOpenAI, tmp_path: Path) -> None:
    from platform_server.features.wiki.models import RawMaterial

    root = tmp_path / "roots"
    notes = root / "notes"
    notes.mkdir(parents=True)
    server = await restart(server, **FAST, wiki_source_roots=f"1:{root}")
    try:
        api = server.client
        await use_fake_wiki_models(api, llm.url)
        kb = await make_kb(api)
        r = await api.put(f"{KB}/{kb}/source-directory", {"path": str(notes)}, token="bob")
        assert r.status == 200 and r.data["watcher"]["state"] == "watching", r.body
        await eventually(lambda: watcher(api, kb))
        r = await api.put("/api/v1/feature-flags/wiki", {"enabled": False}, token="alice")
        assert r.status == 200, r.body

        (notes / "late.md").write_text("# Late\n\nWritten while the wiki was switched off.\n")
        folder = server.platform.services.wiki.watchers.watchers[int(kb)]
        await eventually(lambda: folder.deferred, what="the event's debounced scan held back")  # nothing scanned
        assert not RawMaterial.select().where(RawMaterial.source_path == "late.md").exists()

        r = await api.put("/api/v1/feature-flags/wiki", {"enabled": True}, token="alice")
        assert r.status == 200, r.body
        await eventually(material(api, kb, "late.md", sourceType="directory"))
    finally:
        await server.stop()
