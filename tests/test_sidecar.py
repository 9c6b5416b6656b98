"""The multimodal sidecar: a text-only model gets the sidecar's description of an image, or the user a notice."""

from __future__ import annotations

from typing import Any

import aiohttp

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script


async def upload_image(env: ChatEnv, conversation_id: str) -> str:
    form = aiohttp.FormData()
    form.add_field("conversationId", conversation_id)
    form.add_field("file", b"\x89PNG\r\n\x1a\nfake-bicycle", filename="bike.png", content_type="image/png")
    r = await env.api.post("/api/v1/chat/upload", data=form, token="alice")
    assert r.status == 200, r.body
    return r.data["url"]


async def ask_about_image(env: ChatEnv, conversation_id: str) -> list[Any]:
    url = await upload_image(env, conversation_id)
    return await env.stream(
        None, conversation_id=conversation_id, contentParts=[{"type": "text", "text": "what is this?"}, {"type": "image", "url": url}]
    )


def texts(content: Any) -> str:
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


async def test_a_sidecar_describes_images_for_a_text_only_model(env: ChatEnv) -> None:
    r = await env.api.post("/api/v1/models/fake/models", {"modelName": "seer", "modelType": "chat", "modalities": "text,image"}, token="alice")
    assert r.status == 200, r.body
    # an enabled sidecar names provider and model: the document's anyOf says it, the server refuses the rest
    body = (await env.api.get("/v3/api-docs")).body["components"]["schemas"]["SidecarRequest"]
    assert body["anyOf"][1]["required"] == ["provider", "modelName"]
    assert (await env.api.put("/api/v1/settings/sidecar", {"enabled": True, "provider": "fake"}, token="alice")).status == 400
    r = await env.api.put("/api/v1/settings/sidecar", {"enabled": True, "provider": "fake", "modelName": "seer"}, token="alice")
    assert r.status == 200, r.body
    env.llm.enqueue(Script(text="A red bicycle leaning on a wall."), Script(text="That is a red bike."))
    events = await ask_about_image(env, "s1")
    assert events[-1].data["status"] == "completed" and not [e for e in events if e.event == "notice"]
    describe, main = env.llm.requests[-2], env.llm.requests[-1]
    assert describe["model"] == "seer" and main["model"] == "scripted"
    assert any(
        p.get("type") == "image_url" and p["image_url"]["url"].startswith("data:image/png;base64,") for p in describe["messages"][-1]["content"]
    )
    sent = main["messages"][-1]["content"]
    assert "A red bicycle leaning on a wall." in texts(sent) and "what is this?" in texts(sent)
    assert not any(isinstance(p, dict) and p.get("type") == "image_url" for p in (sent if isinstance(sent, list) else []))
    # The description is kept: the next turn does not ask the sidecar again.
    env.llm.enqueue(Script(text="Yes, red."))
    await env.stream("is it red?", conversation_id="s1")
    assert env.llm.requests[-1]["model"] == "scripted" and len(env.llm.requests) == 3
    assert "A red bicycle" in texts(env.llm.requests[-1]["messages"][1]["content"])


async def test_without_a_sidecar_the_user_is_told_the_image_was_left_out(env: ChatEnv) -> None:
    env.llm.enqueue(Script(text="I cannot see it."))
    events = await ask_about_image(env, "s2")
    notices = [e.data for e in events if e.event == "notice"]
    assert len(notices) == 1 and notices[0]["kind"] == "images_omitted" and notices[0]["count"] == 1
    assert "no vision sidecar" in notices[0]["message"]
    assert "[image omitted" in texts(env.llm.requests[-1]["messages"][-1]["content"])


async def test_a_turn_asks_whether_a_conversation_has_images_from_an_index_of_those_messages_only(env: ChatEnv) -> None:
    from platform_server.db import database
    from platform_server.features.chat import sidecar

    plan = " ".join(str(row) for row in database.execute_sql("EXPLAIN QUERY PLAN " + sidecar._ANY_PARTS_SQL, (1,)))
    assert "message_with_parts" in plan  # no message row is read for the (common) conversation without images
