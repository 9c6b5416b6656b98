"""LLM Wiki test helpers: KBs and materials through the API, scripted page JSON, waiting for idle."""
from __future__ import annotations

import json
from typing import Any

from tests.helpers.client import ApiClient, SseEvent
from tests.helpers.eventually import eventually
from tests.helpers.models import use_fake_openai
from tests.helpers.server import RunningServer, start_server

KB = "/api/v1/wiki/knowledge-bases"


def page(slug: str, title: str, markdown: str, citations: list[str] | None = None, page_type: str = "concept") -> dict[str, Any]:
    return {"slug": slug, "title": title, "pageType": page_type, "markdown": markdown, "citations": citations or ["c1"]}


def pages_answer(*pages: dict[str, Any]) -> str:
    """The page-writing answer as a model would send it (fenced JSON)."""
    return "```json\n" + json.dumps({"pages": list(pages)}) + "\n```"


async def make_kb(api: ApiClient, token: str = "bob", name: str = "Notes", **config: Any) -> str:
    r = await api.post(KB, {"name": name, "description": "test"}, token=token)
    assert r.status == 200, r.body
    if config:
        c = await api.put(f"{KB}/{r.data['id']}/config", config, token=token)
        assert c.status == 200, c.body
    return r.data["id"]


async def add_text(api: ApiClient, kb_id: str, title: str, text: str, token: str = "bob") -> dict[str, Any]:
    r = await api.post(f"{KB}/{kb_id}/raw/text", {"title": title, "text": text}, token=token)
    assert r.status == 200, r.body
    return r.data


async def wait_idle(api: ApiClient, kb_id: str, token: str = "alice") -> list[SseEvent]:
    """Follow the progress stream until the KB is idle; returns the frames."""
    events = await api.sse("GET", f"{KB}/{kb_id}/progress", token=token, timeout=30)
    assert events[-1].event == "idle", [e.event for e in events]
    return events


async def wait_status(api: ApiClient, kb_id: str, raw_id: str, status: str, step: str | None = None) -> None:
    """Poll processing-status until the material reaches the status (and step)."""
    async def reached() -> bool:
        r = await api.get(f"{KB}/{kb_id}/processing-status", token="alice")
        m = next(m for m in r.data["materials"] if m["rawId"] == raw_id)
        assert m["status"] == status and (step is None or m["step"] == step), f"{raw_id} is not {status}/{step}: {m}"
        return True

    await eventually(reached)


def tiny_pdf(text: str) -> bytes:
    """A one-page PDF with the text in Helvetica, written by hand."""
    content = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for i, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


async def use_fake_wiki_models(api: ApiClient, base_url: str, token: str = "alice") -> None:
    """The scripted server as the default chat model and, with its hash embeddings, the default embedding model."""
    await use_fake_openai(api, base_url, token=token)
    r = await api.post("/api/v1/models/fake/models", {"modelName": "fake-embedding", "modelType": "embedding"}, token=token)
    assert r.status == 200, r.body
    r = await api.post("/api/v1/models/embedding/default", {"modelId": r.data["id"]}, token=token)
    assert r.status == 200, r.body


async def restart(server: RunningServer, **overrides: Any) -> RunningServer:
    """The same data dir (people and their tokens kept) with other settings, e.g. `wiki_source_roots`."""
    tokens = dict(server.client.tokens)
    await server.stop()
    again = await start_server(server.config.data_dir, **overrides)
    again.client.tokens.update(tokens)

    async def stop_the_new_one() -> None:  # late-bound: a second restart's server is the one stopped then
        await again.stop()

    # The fixture's teardown stops the server running now; it stopped nothing before, and the restarted
    # server's threads, loops and database connections stayed for the rest of the session.
    server.stop = stop_the_new_one  # type: ignore[method-assign]
    return again
