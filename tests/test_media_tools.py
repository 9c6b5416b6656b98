"""video_generate, music_generate and model3d_generate: provider jobs (submit, poll, download) as guarded tools."""
from __future__ import annotations

import re
from typing import Any, AsyncIterator

import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_media import FakeMediaProvider, tiny_avi, tone_wav, triangle_glb
from tests.helpers.fake_openai import Script, ScriptedToolCall

FAST = pytest.mark.config(media_job_poll_initial_s=0.01, media_job_poll_max_s=0.02)
TOOLS = ["video_generate", "music_generate", "model3d_generate"]


@pytest.fixture
async def provider() -> AsyncIterator[FakeMediaProvider]:
    p = FakeMediaProvider(polls_until_done=3)
    yield p
    p.stop()


async def configure(env: ChatEnv, provider: FakeMediaProvider) -> None:
    r = await env.api.post("/api/v1/models/custom-providers", {
        "providerId": "media", "name": "media", "baseUrl": provider.url, "apiKey": "media-key", "protocol": "openai"},
        token="alice")
    assert r.status == 200, r.body
    r = await env.api.put("/api/v1/settings", {k: {"provider": "media"} for k in ("video", "music", "model3d")},
                          token="alice")
    assert r.status == 200, r.body
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": TOOLS}, token="alice")
    assert r.status == 200, r.body


async def call_tool(env: ChatEnv, name: str, args: dict[str, Any]) -> dict[str, Any]:
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall(name, args)]), Script(text="Done."))
    events = await env.stream(f"please run {name}")
    return next(e for e in events if e.event == "tool_call_completed").data


@FAST
async def test_each_media_tool_submits_polls_and_downloads_a_real_file(env: ChatEnv, provider: FakeMediaProvider) -> None:
    await configure(env, provider)
    cases = [("video_generate", {"prompt": "a boat", "durationSeconds": 4, "aspectRatio": "16:9"}, tiny_avi(),
              "video/x-msvideo", "video.avi"),
             ("music_generate", {"prompt": "a calm tune", "instrumental": True}, tone_wav(), "audio/wav", "music.wav"),
             ("model3d_generate", {"prompt": "a triangle", "format": "glb"}, triangle_glb(), "model/gltf-binary",
              "model.glb")]
    for name, args, expected, content_type, filename in cases:
        completed = await call_tool(env, name, args)
        assert completed["success"] is True, completed
        url = re.search(r"/api/v1/files/generated/\d+", completed["result"]).group(0)
        got = await env.api.get(url)
        assert got.status == 200 and got.raw == expected and got.headers["Content-Type"] == content_type
        assert filename in got.headers["Content-Disposition"]
    kinds = [(kind, body, auth) for kind, body, auth in provider.submitted]
    assert kinds[0] == ("video", {"model": "video-1", "prompt": "a boat", "durationSeconds": 4, "aspectRatio": "16:9"},
                        "Bearer media-key")
    assert [k for k, _, _ in kinds] == ["video", "music", "model3d"]
    assert all(job["polls"] == 3 for job in provider.jobs.values())
    assert tiny_avi()[8:12] == b"AVI " and triangle_glb()[:4] == b"glTF" and tone_wav()[8:12] == b"WAVE"


async def test_without_a_provider_the_tools_say_so(env: ChatEnv) -> None:
    await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": TOOLS}, token="alice")
    for name in TOOLS:
        completed = await call_tool(env, name, {"prompt": "x"})
        assert completed["success"] is False and "provider configured" in completed["result"], completed


@FAST
async def test_failed_slow_foreign_or_bad_jobs_fail_the_call_clearly(env: ChatEnv, provider: FakeMediaProvider) -> None:
    await configure(env, provider)
    provider.fail_with = "content policy"
    completed = await call_tool(env, "video_generate", {"prompt": "x"})
    assert completed["success"] is False and "failed: content policy" in completed["result"]
    provider.fail_with = None
    provider.output_url = "http://169.254.169.254/latest/meta-data"
    completed = await call_tool(env, "music_generate", {"prompt": "x"})
    assert completed["success"] is False and "served by the provider itself" in completed["result"]
    for args in ({"prompt": "x", "durationSeconds": 0}, {"prompt": "x", "format": "fbx"}, {"prompt": " "}):
        tool = "model3d_generate" if "format" in args else "video_generate"
        completed = await call_tool(env, tool, args)
        assert completed["success"] is False, (args, completed)
    r = await env.api.put("/api/v1/settings", {"video": {"provider": 7}}, token="alice")
    assert r.status == 400


@pytest.mark.config(media_job_poll_initial_s=0.01, media_job_poll_max_s=0.02, tool_timeout_s=5.3)
async def test_a_job_that_never_ends_times_out(env: ChatEnv) -> None:
    provider = FakeMediaProvider(polls_until_done=10**9)
    try:
        await configure(env, provider)
        completed = await call_tool(env, "video_generate", {"prompt": "x"})
        assert completed["success"] is False and "did not finish within" in completed["result"], completed
    finally:
        provider.stop()
