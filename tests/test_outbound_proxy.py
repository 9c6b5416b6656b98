"""Settings -> Proxy: the original console's form is saved, and model provider calls go through the proxy it names
(a local HTTP forward proxy), except for hosts the bypass list names; the Test button fetches through it."""
from __future__ import annotations

from typing import AsyncIterator

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.http_proxy import LocalHttpProxy
from tests.helpers.llm_script import Script

PROXY = "/api/v1/settings/proxy"


@pytest.fixture
async def proxy(env: ChatEnv) -> AsyncIterator[LocalHttpProxy]:
    running = LocalHttpProxy(hosts={"probe.invalid": f"127.0.0.1:{env.llm.port}"})
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def test_model_calls_go_through_the_proxy_the_console_saves_unless_the_host_is_bypassed(env: ChatEnv, proxy: LocalHttpProxy) -> None:
    api = env.api
    assert (await api.get(PROXY, token="alice")).data == {"enabled": False, "url": "", "nonProxyHosts": ""}
    env.llm.enqueue(Script(text="direct"))
    await env.stream("one", conversation_id="c-px1")
    assert proxy.seen == []
    # the console's Save: {enabled, url, nonProxyHosts}
    r = await api.put(PROXY, {"enabled": True, "url": proxy.url, "nonProxyHosts": ""}, token="alice")
    assert r.status == 200, r.body
    assert (await api.get(PROXY, token="alice")).data == {"enabled": True, "url": proxy.url, "nonProxyHosts": ""}
    env.llm.enqueue(Script(text=["through ", "the proxy"]))
    events = await env.stream("two", conversation_id="c-px2")
    assert events[-1].data["status"] == "completed"
    assert (await env.messages("c-px2"))[-1]["content"] == "through the proxy"
    assert proxy.seen == [f"POST {env.llm.url}/chat/completions"]
    # the model server's host on the bypass list: direct again
    r = await api.put(PROXY, {"enabled": True, "url": proxy.url, "nonProxyHosts": "localhost|127.*|*.local"}, token="alice")
    assert r.status == 200, r.body
    env.llm.enqueue(Script(text="direct again"))
    await env.stream("three", conversation_id="c-px3")
    assert len(proxy.seen) == 1
    # switched off (the URL stays for next time): direct
    r = await api.put(PROXY, {"enabled": False, "url": proxy.url, "nonProxyHosts": ""}, token="alice")
    assert r.status == 200 and r.data["url"] == proxy.url
    env.llm.enqueue(Script(text="off"))
    await env.stream("four", conversation_id="c-px4")
    assert len(proxy.seen) == 1
    # the proxy's URL may hold its password: GET /settings does not list it
    assert "outboundProxy" not in (await api.get("/api/v1/settings", token="alice")).data


async def test_the_proxy_form_refuses_what_cannot_work_and_only_a_global_admin_sets_it(env: ChatEnv) -> None:
    api = env.api
    for body, where in (({"enabled": True, "url": ""}, "url:"), ({"enabled": True, "url": "socks5://127.0.0.1:1080"}, "SOCKS"),
                        ({"enabled": True, "url": "ftp://proxy:21"}, "url:"), ({"enabled": True, "url": "http://:8080"}, "url:"),
                        ({"enabled": True, "url": "http://proxy:99999"}, "port"), ({"enabled": "maybe"}, "enabled")):
        r = await api.put(PROXY, body, token="alice")
        assert r.status == 400 and where in r.body["msg"], (body, r.body)
    assert (await api.get(PROXY, token="alice")).data["enabled"] is False  # nothing half-written
    # the document's pattern is the rule both ways: what urlsplit would take but the pattern does not is refused too
    body = (await api.get("/v3/api-docs")).body["components"]["schemas"]["ProxyRequest"]
    assert "pattern" in body["properties"]["url"] and body["anyOf"][1]["required"] == ["url"]
    assert (await api.put(PROXY, {"enabled": False, "url": "http://proxy?x"}, token="alice")).status == 400
    for url in ("http://[Df92ae378.E:]", "http://a[b@proxy"):  # brackets urlsplit would refuse: the pattern refuses them
        r = await api.put(PROXY, {"enabled": False, "url": url}, token="alice")
        assert r.status == 400 and r.msg.startswith("url: "), r.body
    assert (await api.put(PROXY, {"enabled": False, "url": "HTTP://u:p@proxy:3128/"}, token="alice")).status == 200
    assert (await api.put(PROXY, {"enabled": False, "url": "", "nonProxyHosts": ""}, token="alice")).status == 200
    assert (await api.put(PROXY, {"enabled": False}, token="bob")).status == 403
    # {} is a valid body (the first anyOf branch requires nothing) and no body reads as {}: the body is optional
    for path in (PROXY, "/api/v1/settings/sidecar"):
        assert (await api.get("/v3/api-docs")).body["paths"][path]["put"]["requestBody"]["required"] is False
        assert (await api.put(path, token="alice")).status == 200
    assert (await api.get(PROXY, token="bob")).status == 403
    assert (await api.post(PROXY + "/test", {"url": "http://127.0.0.1:9"}, token="bob")).status == 403


@pytest.mark.config(proxy_test_url="http://probe.invalid/v1/models", proxy_test_timeout_s=5.0)
async def test_the_test_button_fetches_the_configured_url_through_the_proxy_being_tried(env: ChatEnv, proxy: LocalHttpProxy) -> None:
    api = env.api
    # probe.invalid resolves only at the proxy: the answer can only have come through it
    r = await api.post(PROXY + "/test", {"url": proxy.url}, token="alice")
    assert r.status == 200 and r.data["ok"] is True and r.data["error"] is None and r.data["latencyMs"] >= 0, r.body
    assert proxy.seen == ["GET http://probe.invalid/v1/models"]
    await proxy.stop()
    down = await api.post(PROXY + "/test", {"url": proxy.url}, token="alice")
    assert down.status == 200 and down.data["ok"] is False and down.data["error"], down.body
    assert (await api.post(PROXY + "/test", {"url": "socks5://127.0.0.1:1080"}, token="alice")).status == 400
