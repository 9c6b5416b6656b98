"""The public webchat page the embed snippet frames: served with a CSP that allows framing, nothing else loosened."""
from __future__ import annotations

from tests.helpers.server import RunningServer


async def test_the_webchat_page_may_be_framed_by_any_site_and_loads_only_its_own_scripts(server: RunningServer) -> None:
    async with server.client.session.get(server.url + "/webchat?token=wc_x") as r:
        assert r.status == 200
        body = await r.text()
        csp = r.headers["Content-Security-Policy"]
    assert '<script type="module" src="/static/webchat/page.js"></script>' in body
    assert "frame-ancestors *" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "X-Frame-Options" not in r.headers
    async with server.client.session.get(server.url + "/webchat/../index.html") as r:
        assert r.status == 404
