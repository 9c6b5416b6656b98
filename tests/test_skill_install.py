"""Installing skills: ZIP uploads with their guards, async installs from a URL or the hub, uninstall."""
from __future__ import annotations

import asyncio
import io
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from platform_server.features.skills.models import Skill
from tests.helpers.client import ApiClient, Response
from tests.helpers.eventually import eventually
from tests.helpers.server import RunningServer, start_server

SKILLS = "/api/v1/skills"
INSTALL = "/api/v1/skills/install"

SKILL_MD = """---
name: csv-tools
description: Clean and summarize CSV files.
version: 0.3.0
requires:
  bins: [sh]
---

# CSV tools

Use `scripts/clean.sh` to normalize line endings.
"""


def make_zip(entries: dict[str, bytes | str], symlinks: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buf.getvalue()


GOOD_ZIP = make_zip({"csv-tools/SKILL.md": SKILL_MD, "csv-tools/scripts/clean.sh": "tr -d '\\r'\n",
                     "__MACOSX/csv-tools/._SKILL.md": "junk"})


@dataclass
class Site:
    base: str
    served: dict[str, bytes] = field(default_factory=dict)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    hits: list[str] = field(default_factory=list)


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    state = Site("")

    async def serve(request: web.Request) -> web.StreamResponse:
        state.hits.append(request.path)
        if request.path == "/slow.zip":
            await state.release.wait()
        body = state.served.get(request.path)
        if body is None:
            return web.Response(status=404, text="missing")
        return web.Response(body=body, content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/{tail:.*}", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()  # port 0: no race for a free port
    state.base = "http://127.0.0.1:%d" % runner.addresses[0][1]
    try:
        yield state
    finally:
        state.release.set()
        await runner.cleanup()


@pytest.fixture
async def server(request: pytest.FixtureRequest, tmp_path: Any, site: Site) -> AsyncIterator[RunningServer]:
    """The platform with the local site allowed past the SSRF guard and its hub index configured."""
    settings: dict[str, Any] = {"web_fetch_allow_hosts": "127.0.0.1", "skills_hub_url": site.base + "/hub/index.json"}
    marker = request.node.get_closest_marker("config")
    settings.update(marker.kwargs if marker else {})
    running = await start_server(str(tmp_path / "data"), **settings)
    try:
        yield running
    finally:
        await running.stop()


async def upload(api: ApiClient, archive: bytes, token: str = "bob", filename: str = "skill.zip", **params: str) -> Response:
    form = aiohttp.FormData()
    form.add_field("file", archive, filename=filename, content_type="application/zip")
    return await api.post(f"{INSTALL}/upload", token=token, data=form, params=params or None)


async def wait_for(api: ApiClient, task_id: str, token: str = "bob") -> dict[str, Any]:
    async def finished() -> Any:
        r = await api.get(f"{INSTALL}/status/{task_id}", token=token)
        assert r.status == 200, r.body
        return r.data["finished"] and r.data

    return await eventually(finished, what="the install finished")


def skills_dir(server: RunningServer) -> Path:
    return Path(server.config.data_dir).resolve() / "skills"


# ---- uploads --------------------------------------------------------------------------------


async def test_the_document_says_the_upload_is_a_zip_as_a_part_or_as_the_body(api: ApiClient, people: dict) -> None:
    body = (await api.get("/v3/api-docs")).body["paths"]["/api/v1/skills/install/upload"]["post"]["requestBody"]["content"]
    assert body["multipart/form-data"]["encoding"] == {"file": {"contentType": "application/zip"}}
    assert set(body) == {"multipart/form-data", "application/zip"} and "SKILL.md" in str(body)
    archive = make_zip({"SKILL.md": SKILL_MD})
    r = await api.post(f"{INSTALL}/upload", token="bob", data=archive, headers={"Content-Type": "application/zip"})
    assert r.status == 200 and r.data["name"] == "csv-tools", r.body


async def test_a_zip_with_skill_md_one_folder_down_installs_with_its_files(api: ApiClient, people: dict, server: RunningServer) -> None:
    r = await upload(api, GOOD_ZIP)
    assert r.status == 200, r.body
    skill = r.data
    assert skill["name"] == "csv-tools" and skill["skillType"] == "installed" and skill["enabled"] is True
    assert skill["version"] == "0.3.0" and skill["source"] == "upload:skill.zip" and skill["replaced"] is False
    assert skill["files"] == [{"path": "scripts/clean.sh", "size": 11}]
    folder = skills_dir(server) / "1" / "csv-tools"
    assert (folder / "scripts" / "clean.sh").read_text() == "tr -d '\\r'\n" and not (folder / "__MACOSX").exists()

    r = await upload(api, make_zip({"SKILL.md": SKILL_MD.replace("0.3.0", "0.4.0")}))
    assert r.status == 409 and "overwrite=true" in r.body["msg"]
    r = await upload(api, make_zip({"SKILL.md": SKILL_MD.replace("0.3.0", "0.4.0")}), overwrite="true")
    assert r.status == 200 and r.data["replaced"] is True and r.data["version"] == "0.4.0" and r.data["files"] == []
    assert r.data["id"] == skill["id"] and not (folder / "scripts").exists()
    r = await upload(api, GOOD_ZIP, token="carol")
    assert r.status == 403


@pytest.mark.parametrize(
    "archive, message",
    [
        (make_zip({"SKILL.md": SKILL_MD, "../evil.txt": "x"}), "unsafe entry '../evil.txt'"),
        (make_zip({"SKILL.md": SKILL_MD, "a/../../evil.txt": "x"}), "unsafe entry"),
        (make_zip({"SKILL.md": SKILL_MD, "/etc/evil": "x"}), "unsafe entry '/etc/evil'"),
        (make_zip({"SKILL.md": SKILL_MD, "dir\\evil": "x"}), "unsafe entry"),
        (make_zip({"SKILL.md": SKILL_MD}, symlinks={"link": "/etc/passwd"}), "is a symbolic link"),
        (make_zip({"README.md": "no skill"}), "no SKILL.md"),
        (make_zip({"a/SKILL.md": SKILL_MD, "b/SKILL.md": SKILL_MD}), "more than one SKILL.md"),
        (make_zip({"SKILL.md": SKILL_MD, "big.bin": b"\0" * (5 * 1024 * 1024 + 1)}), "larger than"),
        (make_zip({"SKILL.md": "---\ndescription: nameless\n---\n"}), "needs a `name:`"),
        (make_zip({"SKILL.md": "---\nname: x\n"}), "no closing '---'"),
        (make_zip({"SKILL.md": b"\xff\xfe"}), "not UTF-8"),
        (b"not a zip at all", "not a ZIP archive"),
    ],
)
async def test_unsafe_or_malformed_zips_are_refused_and_nothing_is_written(
    api: ApiClient, people: dict, server: RunningServer, archive: bytes, message: str
) -> None:
    before = Skill.select().count()
    r = await upload(api, archive)
    assert r.status == 400 and message in r.body["msg"], r.body
    assert Skill.select().count() == before
    assert not (Path(server.config.data_dir) / "evil.txt").exists()
    assert sorted(p.name for p in (skills_dir(server) / "1").iterdir()) == ["git-workflow", "structured-summary", "web-research"]


async def test_a_zip_bomb_stops_at_the_total_size(api: ApiClient, people: dict) -> None:
    entries: dict[str, bytes | str] = {"SKILL.md": SKILL_MD}
    for i in range(5):
        entries[f"part{i}.bin"] = b"\0" * (5 * 1024 * 1024)  # 25 MiB unpacked, a few KiB packed
    archive = make_zip(entries)
    assert len(archive) < 200_000
    r = await upload(api, archive)
    assert r.status == 400 and "expands to more than" in r.body["msg"]


async def test_uninstall_removes_an_installed_skill_by_name(api: ApiClient, people: dict, server: RunningServer) -> None:
    r = await upload(api, GOOD_ZIP)
    assert r.status == 200
    r = await api.delete(f"{INSTALL}/web-research", token="bob")
    assert r.status == 409 and "only installed skills" in r.body["msg"]  # the skill's type, a state: a conflict
    r = await api.delete(f"{INSTALL}/nothing-here", token="bob")
    assert r.status == 404
    r = await api.delete(f"{INSTALL}/csv-tools", token="carol")
    assert r.status == 403
    r = await api.delete(f"{INSTALL}/csv-tools", token="bob")
    assert r.status == 200
    assert not (skills_dir(server) / "1" / "csv-tools").exists()
    r = await api.get(f"{SKILLS}/type/installed", token="bob")
    assert r.data == []


# ---- async installs -------------------------------------------------------------------------


async def test_install_from_a_url_runs_in_the_background_and_reports_its_status(api: ApiClient, people: dict, site: Site) -> None:
    site.served["/csv.zip"] = GOOD_ZIP
    r = await api.post(f"{INSTALL}/start", {"url": site.base + "/csv.zip"}, token="bob")
    assert r.status == 200, r.body
    assert r.data["status"] == "pending" and r.data["finished"] is False
    done = await wait_for(api, r.data["taskId"], token="carol")
    assert done["status"] == "completed" and done["skillName"] == "csv-tools", done
    r = await api.get(f"{SKILLS}/{done['skillId']}", token="bob")
    assert r.data["source"] == site.base + "/csv.zip" and r.data["skillType"] == "installed"

    r = await api.post(f"{INSTALL}/start", {"url": site.base + "/missing.zip"}, token="bob")
    failed = await wait_for(api, r.data["taskId"])
    assert failed["status"] == "failed" and "HTTP 404" in failed["message"]
    site.served["/bad.zip"] = make_zip({"SKILL.md": SKILL_MD, "../x": "x"})
    r = await api.post(f"{INSTALL}/start", {"url": site.base + "/bad.zip"}, token="bob")
    failed = await wait_for(api, r.data["taskId"])
    assert failed["status"] == "failed" and "unsafe entry" in failed["message"]


async def test_install_start_validates_and_tasks_stay_in_their_workspace(api: ApiClient, people: dict, site: Site) -> None:
    for body, message in (({}, "exactly one of url and slug"), ({"url": "u", "slug": "s"}, "exactly one")):
        r = await api.post(f"{INSTALL}/start", body, token="bob")
        assert r.status == 400 and message in r.body["msg"]
    r = await api.post(f"{INSTALL}/start", {"url": site.base + "/x.zip"}, token="carol")
    assert r.status == 403
    r = await api.post(f"{INSTALL}/start", {"url": site.base + "/x.zip"}, token="bob")
    task_id = r.data["taskId"]
    r = await api.get(f"{INSTALL}/status/{task_id}", token="dave", workspace=people["dave"]["workspace"])
    assert r.status == 404 and r.body["msg"] == "Install task not found"
    r = await api.get(f"{INSTALL}/status/unknown", token="bob")
    assert r.status == 404
    await wait_for(api, task_id)


@pytest.mark.config(web_fetch_allow_hosts="")
async def test_the_ssrf_guard_refuses_a_loopback_url(api: ApiClient, people: dict, site: Site) -> None:
    site.served["/csv.zip"] = GOOD_ZIP
    r = await api.post(f"{INSTALL}/start", {"url": site.base + "/csv.zip"}, token="bob")
    failed = await wait_for(api, r.data["taskId"])
    assert failed["status"] == "failed" and "loopback" in failed["message"]
    assert site.hits == []


async def test_a_running_install_can_be_cancelled(api: ApiClient, people: dict, site: Site) -> None:
    site.served["/slow.zip"] = GOOD_ZIP
    r = await api.post(f"{INSTALL}/start", {"url": site.base + "/slow.zip"}, token="bob")
    task_id = r.data["taskId"]
    await eventually(lambda: "/slow.zip" in site.hits, what="the download started")
    r = await api.post(f"{INSTALL}/cancel/{task_id}", token="bob")
    assert r.status == 200 and r.data["status"] == "cancelled"
    site.release.set()
    done = await wait_for(api, task_id)
    assert done["status"] == "cancelled"
    assert not Skill.select().where(Skill.name == "csv-tools").exists()
    r = await api.post(f"{INSTALL}/cancel/{task_id}", token="bob")
    assert r.data["status"] == "cancelled"


# ---- the hub --------------------------------------------------------------------------------


def hub_index(base: str) -> bytes:
    import json

    return json.dumps({"skills": [
        {"slug": "csv-tools", "name": "CSV tools", "description": "Clean CSV files", "version": "0.3.0",
         "tags": ["data"], "downloadUrl": "../csv.zip"},
        {"slug": "pdf-kit", "name": "PDF kit", "description": "Read PDFs", "downloadUrl": base + "/pdf.zip"},
        {"name": "no slug: skipped"},
    ]}).encode()


async def test_hub_search_filters_the_index_and_installs_by_slug(api: ApiClient, people: dict, site: Site) -> None:
    site.served["/hub/index.json"] = hub_index(site.base)
    site.served["/csv.zip"] = GOOD_ZIP
    r = await api.get(f"{INSTALL}/hub/search", token="carol")
    assert r.status == 200, r.body
    assert r.data["total"] == 2 and [i["slug"] for i in r.data["items"]] == ["csv-tools", "pdf-kit"]
    assert r.data["items"][0]["downloadUrl"] == site.base + "/csv.zip"
    r = await api.get(f"{INSTALL}/hub/search", token="carol", params={"keyword": "data"})
    assert [i["slug"] for i in r.data["items"]] == ["csv-tools"] and r.data["items"][0]["installed"] is False

    r = await api.post(f"{INSTALL}/start", {"slug": "csv-tools"}, token="bob")
    done = await wait_for(api, r.data["taskId"])
    assert done["status"] == "completed" and done["source"] == site.base + "/csv.zip"
    r = await api.get(f"{INSTALL}/hub/search", token="carol", params={"keyword": "csv"})
    assert r.data["items"][0]["installed"] is True
    r = await api.post(f"{INSTALL}/start", {"slug": "nope"}, token="bob")
    failed = await wait_for(api, r.data["taskId"])
    assert failed["status"] == "failed" and "Hub has no skill 'nope'" in failed["message"]
    r = await api.get(f"{INSTALL}/hub/search", token="carol", params={"limit": "0"})
    assert r.status == 400


async def test_an_unreachable_hub_answers_503(api: ApiClient, people: dict, site: Site) -> None:
    r = await api.get(f"{INSTALL}/hub/search", token="carol")
    assert r.status == 503 and r.body["msg"].startswith("Skills hub unavailable: Download failed: HTTP 404")
    site.served["/hub/index.json"] = b"<html>"
    r = await api.get(f"{INSTALL}/hub/search", token="carol")
    assert r.status == 503 and "not JSON" in r.body["msg"]


@pytest.mark.config(skills_hub_url="")
async def test_without_a_hub_search_and_slug_installs_answer_400(api: ApiClient, people: dict) -> None:
    r = await api.get(f"{INSTALL}/hub/search", token="carol")
    assert r.status == 400 and r.body["msg"] == "No skills hub is configured (setting skills_hub_url)"
    r = await api.post(f"{INSTALL}/start", {"slug": "csv-tools"}, token="bob")
    assert r.status == 400 and "No skills hub" in r.body["msg"]
