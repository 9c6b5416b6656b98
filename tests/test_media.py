"""Speech to text, text to speech, voices and one-time generated files, against the scripted provider."""
from __future__ import annotations

import io
import re
import threading
import wave

import aiohttp
import pytest

from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import TINY_PNG, Script, ScriptedToolCall
from tests.helpers.loop_watch import watch_file_io
from tests.helpers.server import RunningServer


async def _configure(env: ChatEnv) -> None:
    r = await env.api.put("/api/v1/settings", {"speech": {"provider": "fake"}, "images": {"provider": "fake"}},
                          token="alice")
    assert r.status == 200, r.body


async def test_without_a_provider_the_local_engines_speak_and_hear(env: ChatEnv, server: RunningServer) -> None:
    voices = await env.api.get("/api/v1/tts/voices", token="carol")
    assert voices.data == {"provider": None, "engine": "piper", "default": "joe",
                           "voices": [{"id": "joe", "name": "Joe (US English, local)"}]}
    r = await env.api.post("/api/v1/tts/synthesize", {"text": "What time is it?"}, token="bob")
    assert r.status == 200, r.body
    assert r.headers["Content-Type"] == "audio/wav" and r.headers["X-Speech-Engine"] == "piper"
    with wave.open(io.BytesIO(r.raw)) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2 and w.getnframes() > w.getframerate() // 2
    form = aiohttp.FormData()
    form.add_field("file", r.raw, filename="question.wav", content_type="audio/wav")
    heard = await env.api.post("/api/v1/stt/transcribe", data=form, token="carol")
    assert heard.status == 200, heard.body
    assert heard.data["engine"] == "pocketsphinx" and "time" in heard.data["text"]
    r2 = await env.api.post("/api/v1/tts/synthesize", {"text": "Again.", "voice": "joe", "format": "wav"}, token="bob")
    assert r2.status == 200
    local = server.platform.services.speech_local
    assert local.loads == {"stt": 1, "tts": 1}
    assert len(local.load_threads) == 2 and threading.main_thread().name not in local.load_threads


async def test_the_local_engines_refuse_what_they_cannot_do(env: ChatEnv) -> None:
    form = aiohttp.FormData()
    form.add_field("file", b"RIFF....", filename="a.wav", content_type="audio/wav")
    r = await env.api.post("/api/v1/stt/transcribe", data=form, token="bob")
    assert r.status == 400 and "WAV" in r.msg
    for body in ({"text": "hi", "format": "mp3"}, {"text": "hi", "voice": "nova"}, {"text": "x" * 4097}, {"text": ""}):
        bad = await env.api.post("/api/v1/tts/synthesize", body, token="bob")
        assert bad.status == 400, body
    r = await env.api.put("/api/v1/settings", {"speech": {"provider": 5}}, token="alice")
    assert r.status == 400


async def test_transcribe_sends_the_audio_to_the_provider(env: ChatEnv) -> None:
    await _configure(env)
    form = aiohttp.FormData()
    form.add_field("file", b"RIFF-audio-bytes", filename="hello.wav", content_type="audio/wav")
    form.add_field("language", "en")
    r = await env.api.post("/api/v1/stt/transcribe", data=form, token="carol")
    assert r.status == 200, r.body
    assert r.data["text"] == "transcript of hello.wav (16 bytes)" and r.data["model"] == "whisper-1"
    assert env.llm.requests[-1]["language"] == "en"
    r = await env.api.post("/api/v1/stt/transcribe", data=aiohttp.FormData({"x": "y"}), token="carol")
    assert r.status == 400


async def test_synthesize_returns_audio_bytes_and_voices_are_listed(env: ChatEnv) -> None:
    await _configure(env)
    r = await env.api.post("/api/v1/tts/synthesize", {"text": "Hello there", "voice": "nova", "format": "mp3"},
                           token="bob")
    assert r.status == 200 and r.headers["Content-Type"] == "audio/mpeg" and r.headers["X-Speech-Engine"] == "openai"
    assert r.raw == b"ID3fake-audio:Hello there"
    assert env.llm.requests[-1] == {"model": "tts-1", "input": "Hello there", "voice": "nova", "response_format": "mp3"}
    bad = await env.api.post("/api/v1/tts/synthesize", {"text": "x", "voice": "robot"}, token="bob")
    assert bad.status == 400
    voices = await env.api.get("/api/v1/tts/voices", token="carol")
    assert voices.data["engine"] == "openai" and voices.data["default"] == "alloy" and {"id": "nova", "name": "Nova"} in voices.data["voices"]
    assert (await env.api.get("/api/v1/tts/voices")).status == 401


async def test_a_generated_image_downloads_once_without_a_token(env: ChatEnv) -> None:
    await _configure(env)
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["image_generate"]}, token="alice")
    assert r.status == 200
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("image_generate", {"prompt": "a red fox"})]),
                    Script(text="Here you go."))
    events = await env.stream("draw a fox")
    completed = next(e for e in events if e.event == "tool_call_completed").data
    assert completed["success"] is True, completed
    url = re.search(r"/api/v1/files/generated/\d+", completed["result"]).group(0)
    first = await env.api.get(url)
    assert first.status == 200 and first.raw == TINY_PNG and first.headers["Content-Type"] == "image/png"
    assert (await env.api.get(url)).status == 404
    assert (await env.api.get("/api/v1/files/generated/12345")).status == 404


async def test_generated_files_are_written_and_read_off_the_event_loop(env: ChatEnv, monkeypatch: pytest.MonkeyPatch) -> None:
    use = watch_file_io(monkeypatch, "/generated/")
    await _configure(env)
    await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["image_generate"]}, token="alice")
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("image_generate", {"prompt": "a fox"})]), Script(text="ok"))
    completed = next(e for e in await env.stream("draw") if e.event == "tool_call_completed").data
    url = re.search(r"/api/v1/files/generated/\d+", completed["result"]).group(0)
    assert (await env.api.get(url)).raw == TINY_PNG
    assert use.on_loop == [] and sorted(use.off_loop) == ["read_bytes", "write_bytes"]
