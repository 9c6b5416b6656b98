"""The console sends an Idempotency-Key with each POST and, when the connection breaks, sends the same
request once more with the same key: the server creates the agent once."""
from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="browser tests need Playwright for Python (pip install playwright)")

from tests.browser.conftest import open_console  # noqa: E402
from tests.helpers.server import RunningServer  # noqa: E402


async def test_a_create_whose_answer_was_lost_is_sent_again_with_the_same_key_and_creates_once(
    page: Any, server: RunningServer, admin: dict[str, Any]
) -> None:
    await open_console(page, server, admin)
    sent: list[dict[str, str]] = []
    lost = [False]

    async def route(r: Any) -> None:
        sent.append(await r.request.all_headers())
        if not lost[0]:  # the first request reaches the server, its answer never reaches the console
            lost[0] = True
            await r.fetch()
            await r.abort("connectionreset")
            return
        await r.continue_()

    await page.route("**/api/v1/agents", route)
    created = await page.evaluate(
        """async () => {
            const { post } = await import('/static/app/api.js');
            return await post('/agents', { name: 'Lost answer', agentType: 'react' });
        }"""
    )
    keys = [h.get("idempotency-key") for h in sent]
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1]
    r = await server.client.get("/api/v1/agents", token="admin")
    mine = [a for a in r.data if a["name"] == "Lost answer"]
    assert len(mine) == 1 and created["id"] == mine[0]["id"]
