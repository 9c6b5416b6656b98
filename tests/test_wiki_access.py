"""LLM Wiki: roles, workspace isolation, uploads (text, HTML, PDF), config, agent bindings, the wiki_search tool."""
from __future__ import annotations

import json

import aiohttp

from platform_server.features.wiki.text import TEXT_TYPES
from tests.helpers.chat import make_agent
from tests.helpers.client import ApiClient, Response
from tests.helpers.fake_openai import Script, ScriptedOpenAI, ScriptedToolCall
from tests.helpers.models import use_fake_openai
from tests.helpers.wiki import KB, add_text, make_kb, page, pages_answer, tiny_pdf, wait_idle


async def upload(api: ApiClient, kb_id: str, name: str, data: bytes, token: str = "bob", title: str | None = None) -> Response:
    form = aiohttp.FormData()
    form.add_field("file", data, filename=name, content_type="application/octet-stream")
    if title:
        form.add_field("title", title)
    return await api.post(f"{KB}/{kb_id}/raw/upload", data=form, token=token)


async def test_viewers_read_members_write_and_only_creator_or_admin_deletes(api: ApiClient, people: dict) -> None:
    r = await api.post(KB, {"name": "Team"}, token="carol")
    assert r.status == 403
    kb = await make_kb(api, token="bob")
    assert (await api.get(f"{KB}/{kb}", token="carol")).data["name"] == "Notes"
    assert (await api.post(f"{KB}/{kb}/raw/text", {"title": "t", "text": "x"}, token="carol")).status == 403
    assert (await api.put(f"{KB}/{kb}/config", {"chunkSize": 500}, token="carol")).status == 403
    other = await make_kb(api, token="alice", name="Alice's")
    r = await api.delete(f"{KB}/{other}", token="bob")
    assert r.status == 403 and "creator" in r.msg
    r = await api.put(f"{KB}/{kb}", {"name": "Renamed"}, token="bob")
    assert r.status == 200 and r.data["name"] == "Renamed"
    assert (await api.delete(f"{KB}/{kb}", token="bob")).status == 200
    assert (await api.get(f"{KB}/{kb}", token="bob")).status == 404
    assert [k["id"] for k in (await api.get(KB, token="carol")).data] == [other]


async def test_another_workspace_sees_nothing(api: ApiClient, people: dict) -> None:
    kb = await make_kb(api, autoProcess=False)
    raw = await add_text(api, kb, "Secret", "Secret knowledge.")
    ws = people["dave"]["workspace"]
    assert (await api.get(KB, token="dave", workspace=ws)).data == []
    for path in (f"{KB}/{kb}", f"{KB}/{kb}/raw", f"{KB}/{kb}/pages", f"{KB}/{kb}/raw/{raw['id']}/download",
                 f"/api/v1/wiki/kb/{kb}/stats", f"/api/v1/wiki/raw/{raw['id']}/pages", f"{KB}/{kb}/config"):
        r = await api.get(path, token="dave", workspace=ws)
        assert r.status == 404, (path, r.status)
    assert (await api.post(f"{KB}/{kb}/raw/text", {"title": "x", "text": "y"}, token="dave", workspace=ws)).status == 404
    assert (await api.get(KB, token="dave")).status == 403  # workspace 1: not a member
    events = await api.sse("GET", f"{KB}/{kb}/progress", token="dave", workspace=ws)
    assert [e.event for e in events] == ["error"] and events[0].data["code"] == 404
    lookup = await api.get("/api/v1/wiki/pages/lookup", params={"slug": "secret"}, token="dave", workspace=ws)
    assert lookup.data == []


async def test_uploads_extract_text_from_markdown_html_and_pdf_and_download_the_bytes(api: ApiClient, people: dict) -> None:
    kb = await make_kb(api, autoProcess=False)
    pdf = tiny_pdf("Mitochondria are the powerhouse of the cell")
    r = await upload(api, kb, "cells.pdf", pdf, title="Cell notes")
    assert r.status == 200 and r.data["contentType"] == "application/pdf" and r.data["title"] == "Cell notes"
    assert r.data["textLength"] > 20 and r.data["status"] == "pending"
    d = await api.get(f"{KB}/{kb}/raw/{r.data['id']}/download", token="carol")
    assert d.status == 200 and d.raw == pdf and d.headers["Content-Type"] == "application/pdf"
    # a material goes out as its stored type: the document lists the types an upload can have, not octet-stream
    op = (await api.get("/v3/api-docs")).body["paths"]["/api/v1/wiki/knowledge-bases/{kbId}/raw/{rawId}/download"]["get"]
    types = op["responses"]["200"]["content"]
    assert {"application/pdf", "text/markdown", "text/html", "text/plain"} <= set(types) and "application/octet-stream" not in types
    assert 'filename="cells.pdf"' in d.headers["Content-Disposition"]
    html = b"<html><head><style>p{}</style><script>alert(1)</script></head><body><p>Hello <b>world</b></p></body></html>"
    r = await upload(api, kb, "page.html", html)
    assert r.status == 200 and r.data["textLength"] == len("Hello world")
    r = await upload(api, kb, "notes.md", "# Title\n\nBody".encode())
    assert r.status == 200 and r.data["contentType"] == "text/markdown"
    r = await upload(api, kb, "tool.exe", b"MZ...")
    assert r.status == 400 and "Unsupported file type" in r.msg
    r = await upload(api, kb, "broken.pdf", b"%PDF-1.4 not really")
    assert r.status == 400 and r.msg.startswith("Unreadable PDF")
    r = await upload(api, kb, "empty.txt", b"   ")
    assert r.status == 400
    raws = (await api.get(f"{KB}/{kb}/raw", token="carol")).data
    assert len(raws) == 3 and all(x["pageCount"] == 0 for x in raws)
    r = await api.delete(f"{KB}/{kb}/raw/{raws[0]['id']}", token="bob")
    assert r.status == 200 and len((await api.get(f"{KB}/{kb}/raw", token="carol")).data) == 2


async def test_config_is_validated_and_sparse(api: ApiClient, people: dict) -> None:
    kb = await make_kb(api)
    cfg = (await api.get(f"{KB}/{kb}/config", token="carol")).data
    assert cfg["chunkSize"] == 1200 and cfg["autoProcess"] is True and cfg["embeddingModelId"] is None
    r = await api.put(f"{KB}/{kb}/config", {"chunkSize": 400, "pageLanguage": "zh-CN"}, token="bob")
    assert r.data["chunkSize"] == 400 and r.data["pageLanguage"] == "zh-CN" and r.data["chunkOverlap"] == 150
    for tag in ("日本", "8»~", "en US"):  # a language tag is ASCII letters, digits and hyphens, as the document's pattern
        r = await api.put(f"{KB}/{kb}/config", {"pageLanguage": tag}, token="bob")
        assert r.status == 400 and r.msg == "pageLanguage: must be a language tag such as en-US, zh-CN or auto", (tag, r.body)
    r = await api.put(f"{KB}/{kb}/config", {"chunkOverlap": 300}, token="bob")  # well formed; with the stored size, not
    assert r.status == 422 and r.msg.startswith("chunkOverlap: ")
    r = await api.put(f"{KB}/{kb}/config", {"chunkSize": 10}, token="bob")
    assert r.status == 400 and r.msg.startswith("chunkSize: ")
    r = await api.put(f"{KB}/{kb}/config", {"embeddingModelId": 12345}, token="bob")
    assert r.status == 404


async def test_agents_bind_kbs_and_search_them_with_the_wiki_search_tool(api: ApiClient, people: dict, llm: ScriptedOpenAI) -> None:
    await use_fake_openai(api, llm.url)
    kb = await make_kb(api, name="Astronomy")
    llm.enqueue(Script(text=pages_answer(page("saturn", "Saturn", "# Saturn\n\nSaturn has bright rings of ice.", ["c1"]))))
    await add_text(api, kb, "Planets", "Saturn is a gas giant with rings made of ice and rock.")
    await wait_idle(api, kb)
    other = await make_kb(api, name="Cooking")
    agent = await make_agent(api, primaryKbId=kb)
    helper = await make_agent(api)
    r = await api.put(f"{KB}/{other}", {"agentIds": [helper]}, token="bob")
    assert r.status == 200 and r.data["agentIds"] == [helper]
    mine = (await api.get(f"{KB}/agent/{agent}", token="carol")).data
    assert [(k["id"], k["binding"]) for k in mine] == [(kb, "primary")]
    assert [k["id"] for k in (await api.get(f"{KB}/bindable", params={"agentId": agent}, token="carol")).data] == [other]
    assert [(k["id"], k["binding"]) for k in (await api.get(f"{KB}/agent/{helper}", token="carol")).data] == [(other, "bound")]
    assert (await api.put(f"{KB}/{other}", {"agentIds": [999]}, token="bob")).status == 404
    assert (await api.put(f"/api/v1/agents/{agent}/tools", {"toolNames": ["wiki_search"]}, token="alice")).status == 200
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("wiki_search", {"query": "rings of ice"}, id="call_w")]),
                Script(text="Saturn has icy rings."))
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": agent, "conversationId": "w1", "message": "rings?"},
                           token="alice")
    done = next(e for e in events if e.event == "tool_call_completed").data
    assert done["toolName"] == "wiki_search" and done["success"] is True
    assert "slug: saturn" in done["result"] and "knowledge base: Astronomy" in done["result"]
    offered = [t["function"]["name"] for t in llm.requests[-2]["tools"]]
    assert "wiki_search" in offered and "wiki_read" in offered and "read_file" in offered  # beside the defaults
    tool_msg = next(m for m in llm.requests[-1]["messages"] if m["role"] == "tool")
    assert "Saturn has bright rings" in tool_msg["content"]
    llm.enqueue(Script(tool_calls=[ScriptedToolCall("wiki_search", json.dumps({"query": "rings"}), id="call_x")]),
                Script(text="none"))
    await api.put(f"/api/v1/agents/{helper}/tools", {"toolNames": ["wiki_search"]}, token="alice")
    events = await api.sse("POST", "/api/v1/chat/stream", {"agentId": helper, "conversationId": "w2", "message": "rings?"},
                           token="alice")
    done = next(e for e in events if e.event == "tool_call_completed").data
    assert "No wiki pages match" in done["result"]  # the helper's KB has no pages; Astronomy is not searched


async def test_an_upload_without_a_known_extension_is_read_as_its_parts_content_type(api: ApiClient, people: dict) -> None:
    """A generated client sends the part as `file` with the type the document's encoding lists: that type is read."""
    kb = await make_kb(api, autoProcess=False)
    for name, ctype, data in (("file", "text/markdown", b"# Notes\n\nSaturn has rings."), ("file.png", "text/plain", b"plain words"),
                              ("blob", "text/html; charset=utf-8", b"<p>Hello <b>there</b></p>")):
        form = aiohttp.FormData()
        form.add_field("file", data, filename=name, content_type=ctype)
        r = await api.post(f"{KB}/{kb}/raw/upload", data=form, token="bob")
        assert r.status == 200, (name, r.body)
    r = await upload(api, kb, "file.png", b"\x89PNG\r\n\x1a\n")  # neither its name nor its type is one read here
    assert r.status == 400 and r.msg.startswith("Unsupported file type"), r.body
    doc = (await api.get("/v3/api-docs")).body
    form_doc = doc["paths"][f"{KB}/{{kbId}}/raw/upload"]["post"]["requestBody"]["content"]["multipart/form-data"]
    listed = form_doc["encoding"]["file"]["contentType"].split(", ")
    assert "text/markdown" in listed and set(listed) <= set(TEXT_TYPES.values())
