"""The Skills page in headless Chromium against the real server: ZIP install, files, requirements, curator."""
from __future__ import annotations

import re
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from playwright.async_api import expect  # noqa: E402

from tests.browser.conftest import open_console
from tests.helpers.server import RunningServer
from tests.test_skill_install import make_zip

SKILL_MD = """---
name: report-kit
description: Build weekly reports from CSV exports.
requires:
  secrets: [REPORT_TOKEN]
---

# Report kit

Run `scripts/build.sh` with the export.
"""


async def test_a_skill_zip_built_by_the_test_installs_and_its_files_can_be_read_and_edited(
    page: Any, server: RunningServer, admin: dict[str, Any], tmp_path: Any
) -> None:
    archive = tmp_path / "report-kit.zip"
    archive.write_bytes(make_zip({"report-kit/SKILL.md": SKILL_MD, "report-kit/scripts/build.sh": "echo building\n"}))
    await open_console(page, server, admin, "#/skills/install")
    form = page.get_by_role("form", name="Install from a ZIP")
    await form.get_by_label("Skill ZIP").set_input_files(str(archive))
    await form.get_by_role("button", name="Upload and install").click()

    detail = page.locator(".skill-detail")
    await expect(detail.get_by_role("heading", name="report-kit")).to_be_visible()
    files = detail.get_by_role("list", name="Skill files")
    await expect(files.locator("li")).to_have_count(2)
    await expect(files.locator("li").nth(0)).to_contain_text("SKILL.md")
    await expect(files.locator("li").nth(1)).to_contain_text("scripts/build.sh14 B")
    await expect(detail.get_by_label("Edit SKILL.md")).to_have_value(re.compile(r"^---\nname: report-kit\n.*# Report kit", re.S))

    await files.get_by_role("button", name="scripts/build.sh").click()
    editor = detail.get_by_label("Edit scripts/build.sh")
    await expect(editor).to_have_value("echo building\n")
    await editor.fill("echo built\n")
    await detail.get_by_role("button", name="Save scripts/build.sh").click()
    await expect(page.locator(".toast").filter(has_text="Saved")).to_be_visible()
    r = await server.client.get(f"/api/v1/skills/{page.url.rsplit('/', 1)[1]}/files/scripts/build.sh", token="admin")
    assert r.data["content"] == "echo built\n"

    # The missing secret is shown; adding it (write-only) satisfies the requirement and shows only a mask.
    req = detail.locator("li[data-req='REPORT_TOKEN']")
    await expect(req).to_contain_text("missing")
    await req.get_by_role("button", name="Add secret").click()
    dialog = page.get_by_role("dialog", name="Add a secret")
    await dialog.get_by_label("Value").fill("tok-123456789")
    await dialog.get_by_role("button", name="Save secret").click()
    await expect(req).to_contain_text("ok")
    secrets = detail.locator(".secret-list li")
    await expect(secrets).to_have_count(1)
    assert "tok-123456789" not in await secrets.inner_text()


async def test_the_curator_dry_run_lists_its_plan_and_a_restore_point_can_be_captured(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    await open_console(page, server, admin, "#/skills/curator")
    await expect(page.locator(".curator-state")).to_contain_text("preview only")
    await page.get_by_role("button", name="Dry run now").click()
    await expect(page.locator(".curator-plan")).to_contain_text("Dry run: nothing changed.")
    await page.get_by_role("button", name="Capture restore point").click()
    dialog = page.get_by_role("dialog", name="Capture a restore point")
    await dialog.get_by_label("Reason").fill("before cleanup")
    await dialog.get_by_role("button", name="Capture").click()
    await expect(page.locator(".snapshot-list li")).to_contain_text("before cleanup")
    await page.get_by_role("switch", name="Curator applies changes").check()
    await expect(page.locator(".curator-state")).to_contain_text("applying")
    r = await server.client.get("/api/v1/skills/curator/status", token="admin")
    assert r.data["active"] is True
