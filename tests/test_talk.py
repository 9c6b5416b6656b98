"""The talk WebSocket: local speech in, the scripted model's answer out as text and speech."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import numpy as np
import pytest

from platform_server.integrations.local_speech import read_wav, resample
from tests.helpers.chat import ChatEnv
from tests.helpers.fake_openai import Script, ScriptedToolCall
from tests.helpers.server import RunningServer

CHUNK = 3200  # 100 ms of 16 kHz PCM16


def ws_url(server: RunningServer, token: str | None, **query: str) -> str:
    params = dict(query, **({"token": token} if token else {}))
    qs = "&".join(f"{k}={v}" for k, v in params.items())
    return server.url.replace("http://", "ws://") + "/api/v1/talk/ws" + (f"?{qs}" if qs else "")


async def enable_talk(env: ChatEnv, enabled: bool = True) -> None:
    r = await env.api.put("/api/v1/feature-flags/talk_mode", {"enabled": enabled}, token="alice")
    assert r.status == 200, r.body


async def spoken_pcm(server: RunningServer, text: str) -> bytes:
    """`text` spoken by the local voice, as the 16 kHz PCM16 a microphone client streams."""
    wav = await server.platform.services.speech_local.synthesize_wav(text)
    pcm = read_wav(wav)
    return resample(pcm.samples, pcm.rate).tobytes()


async def frames_until(ws: aiohttp.ClientWebSocketResponse, kind: str, timeout: float = 60) -> list[Any]:
    """JSON frames (dicts) and audio frames (bytes) up to and including the first `kind` frame."""
    got: list[Any] = []
    async with asyncio.timeout(timeout):
        while True:
            msg = await ws.receive()
            if msg.type == aiohttp.WSMsgType.BINARY:
                got.append(msg.data)
                continue
            assert msg.type == aiohttp.WSMsgType.TEXT, msg
            frame = json.loads(msg.data)
            got.append(frame)
            if frame["type"] == kind:
                return got


async def say(ws: aiohttp.ClientWebSocketResponse, pcm: bytes) -> None:
    for i in range(0, len(pcm), CHUNK):
        await ws.send_bytes(pcm[i:i + CHUNK])
    await ws.send_json({"type": "end"})


async def test_a_spoken_question_gets_a_spoken_answer_stored_in_the_conversation(
        env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    question = await spoken_pcm(server, "What time is it?")
    env.llm.enqueue(Script(text="It is ten o'clock. Time for tea."))
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as ws:
        await ws.send_json({"type": "start", "agentId": env.agent_id, "conversationId": "talk1"})
        await say(ws, question)
        frames = await frames_until(ws, "done")
    transcript = next(f for f in frames if isinstance(f, dict) and f["type"] == "transcript" and f["final"])
    assert "time" in transcript["text"]
    deltas = "".join(f["text"] for f in frames if isinstance(f, dict) and f["type"] == "delta")
    assert deltas == "It is ten o'clock. Time for tea."
    audio = [f for f in frames if isinstance(f, bytes)]
    assert len(audio) == 2 and all(a[:4] == b"RIFF" for a in audio)
    local = server.platform.services.speech_local
    heard = " ".join([await local.transcribe_wav(a) for a in audio])
    # piper's voice samples noise inside its model, so each run sounds a little different and the recogniser
    # mishears some words ("it is to get caught up" once): two words of the answer heard back is the check
    assert len({"it", "is", "ten", "o'clock", "time", "for", "tea"} & set(heard.split())) >= 2, heard
    done = frames[-1]
    assert done["conversationId"] == "talk1" and done["assistantMessageId"]
    messages = await env.messages("talk1")
    assert [(m["role"], m["content"]) for m in messages][-2:] == [
        ("user", transcript["text"]), ("assistant", "It is ten o'clock. Time for tea.")]
    assert str(messages[-1]["id"]) == done["assistantMessageId"]


async def test_no_token_closes_4401_and_talk_mode_off_closes_4403(env: ChatEnv, server: RunningServer) -> None:
    for token in (None, "not-a-token"):
        async with env.api.session.ws_connect(ws_url(server, token)) as ws:
            msg = await ws.receive()
            assert msg.type == aiohttp.WSMsgType.CLOSE and ws.close_code == 4401
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["bob"])) as ws:
        msg = await ws.receive()
        assert ws.close_code == 4403 and "talk_mode" in (msg.extra or "")
    await enable_talk(env)
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["dave"])) as ws:
        await ws.receive()
        assert ws.close_code == 4403


async def test_a_foreign_origin_is_refused(env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    with pytest.raises(aiohttp.WSServerHandshakeError) as err:
        await env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"]), origin="http://evil.example")
    assert err.value.status == 403
    with pytest.raises(aiohttp.WSServerHandshakeError) as err:  # DNS rebinding: a foreign Host header
        await env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"]),
                                         headers={"Host": "evil.example"}, origin="http://evil.example")
    assert err.value.status == 400
    own = server.url
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"]), origin=own) as ws:
        await ws.send_json({"type": "stop"})
        await ws.close()


@pytest.mark.config(allowed_origins=("http://console.example",))
async def test_an_allowed_origin_may_connect(env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"]),
                                          origin="http://console.example") as ws:
        await ws.send_json({"type": "nonsense"})
        frame = await ws.receive_json()
        assert frame["type"] == "error" and frame["code"] == 400


async def test_a_second_start_cancels_the_answer_in_flight(env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    question = await spoken_pcm(server, "What time is it?")
    env.llm.enqueue(Script(text=["One", " two", " three", " four", " five."], delay_s=0.5),
                    Script(text="Second answer."))
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as ws:
        start = {"type": "start", "agentId": env.agent_id, "conversationId": "talk2"}
        await ws.send_json(start)
        await say(ws, question)
        await frames_until(ws, "delta")
        await ws.send_json(start)
        await say(ws, question)
        frames = await frames_until(ws, "done")
    dones = [f for f in frames if isinstance(f, dict) and f["type"] == "done"]
    assert len(dones) == 1 and dones[0]["status"] == "completed"
    deltas = "".join(f["text"] for f in frames if isinstance(f, dict) and f["type"] == "delta")
    assert deltas.endswith("Second answer.") and "five" not in deltas
    messages = await env.messages("talk2")
    assistants = [m for m in messages if m["role"] == "assistant"]
    assert assistants[0]["status"] == "stopped" and "five" not in assistants[0]["content"]
    assert assistants[-1]["content"] == "Second answer."


async def test_an_approval_pauses_the_answer_and_is_announced(env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    r = await env.api.put(f"/api/v1/agents/{env.agent_id}/tools", {"toolNames": ["write_file"]}, token="alice")
    assert r.status == 200, r.body
    env.llm.enqueue(Script(tool_calls=[ScriptedToolCall("write_file", {"path": "a.txt", "content": "x"})]))
    question = await spoken_pcm(server, "What time is it?")
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as ws:
        await ws.send_json({"type": "start", "agentId": env.agent_id, "conversationId": "talk3"})
        await say(ws, question)
        frames = await frames_until(ws, "done")
    approval = next(f for f in frames if isinstance(f, dict) and f["type"] == "approval")
    assert approval["toolName"] == "write_file" and approval["callId"]
    assert frames[-1]["status"] == "awaiting_approval"


@pytest.mark.config(talk_max_frame_bytes=8000, talk_max_utterance_s=1.0)
async def test_bad_frames_get_error_frames_and_the_session_goes_on(env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as ws:
        async def error_for(send: Any) -> dict[str, Any]:
            await send
            frame = await ws.receive_json(timeout=30)
            assert frame["type"] == "error", frame
            return frame

        assert "start" in (await error_for(ws.send_bytes(b"\x00\x00")))["message"]
        assert (await error_for(ws.send_str("not json")))["code"] == 400
        assert (await error_for(ws.send_json({"type": "start"})))["message"].startswith("agentId")
        assert (await error_for(ws.send_json({"type": "start", "agentId": "123"})))["code"] == 1001
        await ws.send_json({"type": "start", "agentId": env.agent_id, "conversationId": "talk4"})
        assert "empty utterance" in (await error_for(ws.send_json({"type": "end"})))["message"]
        assert "even" in (await error_for(ws.send_bytes(b"\x00\x00\x00")))["message"]
        wav_44k = read_wav(await server.platform.services.speech_local.synthesize_wav("Hi."))
        assert "16000 Hz" in (await error_for(ws.send_bytes(_wav(wav_44k.samples[:1000], 44100))))["message"]
        assert (await error_for(ws.send_bytes(b"\x00" * 9000)))["code"] == 413
        for _ in range(4):
            await ws.send_bytes(b"\x00" * 7000)
        assert "longer than 1 s" in (await error_for(ws.send_bytes(b"\x00" * 7000)))["message"]
        bad_rate = {"type": "start", "agentId": env.agent_id, "sampleRate": 44100}
        assert "16000" in (await error_for(ws.send_json(bad_rate)))["message"]
        silence = np.zeros(16000, dtype=np.int16).tobytes()
        await ws.send_json({"type": "start", "agentId": env.agent_id, "conversationId": "talk4"})
        await ws.send_bytes(silence[:6000])
        await ws.send_bytes(silence[6000:12000])
        await ws.send_json({"type": "end"})
        frames = await frames_until(ws, "error")
        assert frames[0] == {"type": "transcript", "text": "", "final": True}
        assert "nothing was heard" in frames[-1]["message"]
    r = await env.api.get("/api/v1/agents", token="alice")
    assert r.status == 200


async def test_one_talk_session_per_conversation(env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    start = {"type": "start", "agentId": env.agent_id, "conversationId": "talk5"}
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as first:
        await first.send_json(start)
        await first.send_json({"type": "stop"})
        async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as second:
            await second.send_json(start)
            frame = await second.receive_json(timeout=10)
            assert frame["type"] == "error" and frame["code"] == 409
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as third:
        await asyncio.sleep(0)
        await third.send_json(start)
        await third.send_json({"type": "bogus"})
        frame = await third.receive_json(timeout=10)
        assert frame["code"] == 400  # the start was accepted: the first session released the conversation


def _wav(samples: np.ndarray, rate: int) -> bytes:
    from platform_server.integrations.local_speech import to_wav

    return to_wav(samples.astype(np.int16).tobytes(), rate)


async def test_a_configured_speech_provider_hears_and_speaks_instead_of_the_local_engines(
        env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    r = await env.api.put("/api/v1/settings", {"speech": {"provider": "fake"}}, token="alice")
    assert r.status == 200, r.body
    env.llm.enqueue(Script(text="Noon. Lunch time."))
    pcm = np.full(16000, 3000, dtype=np.int16).tobytes()  # not silence: it goes to the provider
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as ws:
        await ws.send_json({"type": "start", "agentId": env.agent_id, "conversationId": "talk6", "voice": "joe"})
        assert "nova" in (await ws.receive_json(timeout=10))["message"]  # the provider's voices apply
        await ws.send_json({"type": "start", "agentId": env.agent_id, "conversationId": "talk6", "voice": "nova"})
        await say(ws, pcm)
        frames = await frames_until(ws, "done")
    assert frames[0] == {"type": "transcript", "text": "transcript of utterance.wav (32044 bytes)", "final": True}
    audio = [f for f in frames if isinstance(f, bytes)]
    assert audio == [b"ID3fake-audio:Noon.", b"ID3fake-audio:Lunch time."]
    assert env.llm.requests[-1] == {"model": "tts-1", "input": "Lunch time.", "voice": "nova", "response_format": "wav"}
    assert server.platform.services.speech_local.loads == {"stt": 0, "tts": 0}


async def test_stop_silences_the_answer_and_keeps_the_partial_text(env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    question = await spoken_pcm(server, "What time is it?")
    env.llm.enqueue(Script(text=["One.", " two", " three", " four", " five."], delay_s=0.5))
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as ws:
        await ws.send_json({"type": "start", "agentId": env.agent_id, "conversationId": "talk7"})
        await say(ws, question)
        await frames_until(ws, "delta")
        await ws.send_json({"type": "stop"})
        await ws.send_json({"type": "bogus"})  # answered after the stop is handled
        frames = await frames_until(ws, "error")
    assert not [f for f in frames if isinstance(f, dict) and f["type"] == "done"]
    assistant = [m for m in await env.messages("talk7") if m["role"] == "assistant"][-1]
    assert assistant["status"] == "stopped" and "five" not in assistant["content"]


async def test_a_long_utterance_gets_partial_transcripts_before_the_final_one(
        env: ChatEnv, server: RunningServer) -> None:
    await enable_talk(env)
    speech = await spoken_pcm(server, "What time is it? Please tell me the time.")
    assert len(speech) > 16000 * 2 * 2
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["alice"])) as ws:
        await ws.send_json({"type": "start", "agentId": env.agent_id, "conversationId": "talk8"})
        for i in range(0, len(speech), CHUNK):
            await ws.send_bytes(speech[i:i + CHUNK])
        partial = await ws.receive_json(timeout=30)
        assert partial["type"] == "transcript" and partial["final"] is False and partial["text"]
        await ws.send_json({"type": "end"})
        frames = await frames_until(ws, "done")
    final = [f for f in frames if isinstance(f, dict) and f["type"] == "transcript"]
    assert final[-1]["final"] is True and "time" in final[-1]["text"]


async def frames_until_closed(ws: aiohttp.ClientWebSocketResponse, timeout: float = 60) -> tuple[list[Any], str]:
    """Every frame up to the server's close (JSON frames as dicts, audio as bytes) and the close reason."""
    got: list[Any] = []
    async with asyncio.timeout(timeout):
        while True:
            msg = await ws.receive()
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                return got, str(msg.extra or "")
            got.append(msg.data if msg.type == aiohttp.WSMsgType.BINARY else json.loads(msg.data))


async def send_quietly(ws: aiohttp.ClientWebSocketResponse, frames: list[Any]) -> None:
    """Send frames; the server may already have closed the socket (that is what is tested)."""
    try:
        for frame in frames:
            if isinstance(frame, bytes):
                await ws.send_bytes(frame)
            else:
                await ws.send_json(frame)
    except (ConnectionResetError, RuntimeError):
        pass


async def test_an_open_socket_runs_no_more_turns_once_its_token_is_revoked_or_its_user_loses_access(
        env: ChatEnv, server: RunningServer) -> None:
    from platform_server.features.auth.models import User

    await enable_talk(env)
    question = await spoken_pcm(server, "What time is it?")
    utterance = [question[i:i + CHUNK] for i in range(0, len(question), CHUNK)] + [{"type": "end"}]
    r = await env.api.post("/api/v1/auth/tokens", {"name": "car"}, token="bob")
    assert r.status == 200, r.body
    pat, pat_id = r.data["token"], r.data["id"]
    start = {"type": "start", "agentId": env.agent_id, "conversationId": "car"}
    env.llm.enqueue(Script(text="It is ten."))
    async with env.api.session.ws_connect(ws_url(server, pat)) as ws:
        await ws.send_json(start)
        await say(ws, question)
        assert (await frames_until(ws, "done"))[-1]["status"] == "completed"  # the PAT works
        assert (await env.api.delete(f"/api/v1/auth/tokens/{pat_id}", token="bob")).status == 200
        asked = len(env.llm.requests)
        env.llm.enqueue(Script(text="Still talking to a revoked token."))
        await send_quietly(ws, [start, *utterance])
        frames, reason = await frames_until_closed(ws)
        assert ws.close_code == 4401 and "revoked" in reason, (ws.close_code, reason, frames)
    assert not any(isinstance(f, dict) and f["type"] in ("delta", "done") for f in frames), frames
    assert len(env.llm.requests) == asked

    # A user disabled while the socket is open (their JWT still unexpired): closed at the next frame.
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["bob"])) as ws:
        await ws.send_json(start)
        User.update(enabled=False).where(User.id == int(env.people["bob"]["id"])).execute()
        await send_quietly(ws, [*utterance])
        frames, reason = await frames_until_closed(ws)
        assert ws.close_code == 4401 and "disabled" in reason, (ws.close_code, reason, frames)
    User.update(enabled=True).where(User.id == int(env.people["bob"]["id"])).execute()

    # Removed from the workspace while the socket is open: 4403.
    async with env.api.session.ws_connect(ws_url(server, env.api.tokens["carol"])) as ws:
        await ws.send_json({**start, "conversationId": "carol-car"})
        r = await env.api.delete(f"/api/v1/workspaces/1/members/{env.people['carol']['id']}", token="alice")
        assert r.status == 200, r.body
        await send_quietly(ws, [*utterance])
        frames, reason = await frames_until_closed(ws)
        assert ws.close_code == 4403 and "member" in reason, (ws.close_code, reason, frames)
    assert len(env.llm.requests) == asked
