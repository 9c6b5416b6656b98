"""One talk session: audio in, a normal chat turn, the answer back as text deltas and spoken sentences.

The socket handler feeds frames in and gives a `Sender`; nothing here imports Tornado.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import wave
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from platform_server.features.agents import service as agents
from platform_server.features.chat import service as chat
from platform_server.features.chat.approvals import guard
from platform_server.features.chat.turns import Turn
from platform_server.features.conversations import service as conversations
from platform_server.features.media import service as media
from platform_server.integrations import local_speech
from platform_server.integrations.local_speech import LocalSpeech
from platform_server.lazy import lazy_import
from platform_server.web.context import Caller
from platform_server.web.errors import ApiError, BadRequest, Conflict, parse_long

if TYPE_CHECKING:
    import numpy as np

    from platform_server.config import Config
    from platform_server.features.chat.runtime import ChatRuntime
else:
    np = lazy_import("numpy")

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
PARTIAL_FIRST_BYTES = SAMPLE_RATE * 2 * 3 // 2  # the first partial transcript after 1.5 s of audio
SILENCE_RMS = 30.0  # PCM16 RMS below which an utterance is silence (about -60 dBFS)
SENTENCE_END = re.compile(r"[.!?;:](?=\s)|\n")


class Sender(Protocol):
    async def send_json(self, data: dict[str, Any]) -> None: ...

    async def send_bytes(self, data: bytes) -> None: ...


@dataclass(frozen=True)
class TalkLimits:
    max_frame_bytes: int
    max_utterance_s: float
    max_tts_chars: int = 4096

    @property
    def max_utterance_bytes(self) -> int:
        return int(self.max_utterance_s * SAMPLE_RATE) * 2


class TalkRegistry:
    """Which conversations have a talk session open (one each): platform.runtime(TALK)."""

    def __init__(self) -> None:
        self._open: dict[str, "TalkSession"] = {}
        self.closing: set[asyncio.Task[None]] = set()  # sessions of closed sockets winding down

    def claim(self, key: str, session: "TalkSession") -> None:
        holder = self._open.get(key)
        if holder is not None and holder is not session:
            raise Conflict("This conversation already has a talk session open")
        self._open[key] = session

    def release(self, key: str, session: "TalkSession") -> None:
        if self._open.get(key) is session:
            del self._open[key]

    def __len__(self) -> int:
        return len(self._open)


def pcm_of_frame(frame: bytes) -> bytes:
    """PCM16 mono 16 kHz from a binary frame (raw, or a WAV chunk that must say 16 kHz mono PCM16)."""
    if frame[:4] == b"RIFF":
        try:
            with wave.open(io.BytesIO(frame)) as w:
                if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (SAMPLE_RATE, 1, 2):
                    raise BadRequest(
                        f"audio must be PCM16 mono at {SAMPLE_RATE} Hz "
                        f"(got {w.getframerate()} Hz, {w.getnchannels()} channel(s), "
                        f"{8 * w.getsampwidth()}-bit)"
                    )
                return w.readframes(w.getnframes())
        except (wave.Error, EOFError):
            raise BadRequest("audio: unreadable WAV chunk")
    if len(frame) % 2:
        raise BadRequest("audio: PCM16 frames carry an even number of bytes")
    return frame


@dataclass(frozen=True)
class TalkParts:
    """What every session of the process shares: its registry, the chat runtime that answers, the offline speech engines."""

    registry: TalkRegistry
    chat: ChatRuntime
    local: LocalSpeech
    config: Config


class TalkSession:
    """The state of one socket: who talks, to which agent and conversation, and the answer in flight."""

    def __init__(self, talk: TalkParts, caller: Caller, sender: Sender, limits: TalkLimits) -> None:
        self.talk = talk
        self.caller = caller
        self.sender = sender
        self.limits = limits
        self.agent_id: str | None = None
        self.conversation_id = "default"
        self.voice: str | None = None
        self.audio = bytearray()
        self.answer_task: asyncio.Task[None] | None = None
        self.turn: Turn | None = None
        self._claimed: str | None = None
        self.utterance = 0  # counts utterances: a partial transcript of an earlier one is dropped
        self._partial_at = 0  # buffered bytes at the last partial transcript
        self._partial_task: asyncio.Task[None] | None = None

    @property
    def registry(self) -> TalkRegistry:
        return self.talk.registry

    @property
    def local(self) -> LocalSpeech:
        return self.talk.local

    # ---- frames ---------------------------------------------------------------

    async def on_text(self, raw: str) -> None:
        try:
            frame = json.loads(raw)
        except ValueError:
            raise BadRequest("frame: text frames must be JSON objects")
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            raise BadRequest("frame: a JSON object with a `type` is required")
        kind = frame["type"]
        if kind == "start":
            await self.start(frame)
        elif kind == "end":
            await self.end_of_utterance()
        elif kind == "stop":
            await self.cancel_answer()
            self.reset_audio()
        else:
            raise BadRequest(f"type: unknown frame type '{kind[:40]}' (start, end, stop)")

    def on_audio(self, frame: bytes) -> None:
        if self.agent_id is None:
            raise BadRequest("audio before `start`")
        pcm = pcm_of_frame(frame)
        if len(self.audio) + len(pcm) > self.limits.max_utterance_bytes:
            self.reset_audio()
            raise ApiError(f"utterance longer than {self.limits.max_utterance_s:g} s; send `end` sooner", 413)
        self.audio.extend(pcm)
        self._maybe_partial()

    def reset_audio(self) -> bytes:
        """Take the buffered utterance (and forget any partial transcript of it in flight)."""
        pcm, self.audio = bytes(self.audio), bytearray()
        self.utterance += 1
        self._partial_at = 0
        return pcm

    def _maybe_partial(self) -> None:
        """While the user speaks, the local engine's words so far (`final: false`): after 1.5 s of audio, then
        each time the utterance has doubled, so the partials cost at most what the final transcript costs."""
        if len(self.audio) < max(PARTIAL_FIRST_BYTES, 2 * self._partial_at):
            return
        if self._partial_task is not None and not self._partial_task.done():
            return
        if media.speech_provider_configured():
            return  # a provider is paid per call: only the final transcript goes there
        self._partial_at = len(self.audio)
        self._partial_task = asyncio.get_running_loop().create_task(self._partial(bytes(self.audio), self.utterance))

    async def _partial(self, pcm: bytes, utterance: int) -> None:
        try:
            text = await self.transcribe(pcm)
        except ApiError:
            return
        if text and utterance == self.utterance:
            await self.sender.send_json({"type": "transcript", "text": text, "final": False})

    async def start(self, frame: dict[str, Any]) -> None:
        """A new exchange: any answer in flight is cancelled first."""
        await self.cancel_answer()
        self.reset_audio()
        agent_id = frame.get("agentId")
        if not isinstance(agent_id, (str, int)) or isinstance(agent_id, bool):
            raise BadRequest("agentId: must not be null")
        agents.get_agent_for_chat(self.caller, parse_long("agentId", str(agent_id)))  # fail early, not after speech
        cid = conversations.validate_id(str(frame.get("conversationId") or "default"))
        voice = frame.get("voice")
        if voice is not None:
            known = [v["id"] for v in media.voices()["voices"]]
            if voice not in known:
                raise BadRequest(f"voice: must be one of {', '.join(known)}")
        rate = frame.get("sampleRate", SAMPLE_RATE)
        if rate != SAMPLE_RATE:
            raise BadRequest(f"sampleRate: audio must be PCM16 mono at {SAMPLE_RATE} Hz")
        conversations.check_owner(self.caller.user_id, cid)
        key = conversations.key_for(self.caller.user_id, cid)
        if self._claimed != key:
            self.registry.claim(key, self)
            self.release()
            self._claimed = key
        self.agent_id, self.conversation_id, self.voice = str(agent_id), cid, voice

    async def end_of_utterance(self) -> None:
        """Transcribe what was heard and answer it as a normal conversation turn."""
        if self.agent_id is None:
            raise BadRequest("`end` before `start`")
        pcm = self.reset_audio()
        if len(pcm) < SAMPLE_RATE // 10 * 2:
            raise BadRequest("empty utterance: no audio before `end`")
        await self.cancel_answer()
        text = await self.transcribe(pcm)
        await self.sender.send_json({"type": "transcript", "text": text, "final": True})
        if not text.strip():
            raise BadRequest("nothing was heard in that utterance")
        self.turn = chat.begin_turn(self.talk.chat, self.talk.config, self.caller, self.agent_id, text, None, self.conversation_id)
        self.answer_task = asyncio.get_running_loop().create_task(self._answer(self.turn))

    async def transcribe(self, pcm: bytes) -> str:
        samples = np.frombuffer(pcm, dtype="<i2")
        if float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) < SILENCE_RMS:
            return ""  # recognisers hear words in silence; there is nothing to answer
        if media.speech_provider_configured():
            wav = local_speech.to_wav(pcm, SAMPLE_RATE)
            return str((await media.transcribe(self.local, "utterance.wav", wav, "audio/wav", None))["text"])
        return await self.local.transcribe_pcm(samples, SAMPLE_RATE)

    async def cancel_answer(self) -> None:
        """Stop the answer in flight: the turn keeps its partial text (status `stopped`)."""
        turn, task = self.turn, self.answer_task
        self.turn, self.answer_task = None, None
        if task is not None and not task.done():  # silence first, then stop the turn
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if turn is not None and turn.running:
            guard.deny_all_pending(self.caller.user_id, turn.conversation_id, self.caller.user_id)
            self.talk.chat.cancel(turn.key)
            if turn.task is not None:
                await asyncio.wait([turn.task], timeout=5)

    def release(self) -> None:
        if self._claimed is not None:
            self.registry.release(self._claimed, self)
        self._claimed = None

    async def close(self) -> None:
        self.reset_audio()
        await self.cancel_answer()
        if self._partial_task is not None:
            await asyncio.gather(self._partial_task, return_exceptions=True)
        self.release()

    # ---- the answer -----------------------------------------------------------

    async def _answer(self, turn: Turn) -> None:
        """Follow the turn: deltas as they come, each finished sentence spoken, then `done`."""
        sub = turn.subscribe(0)
        pending = ""
        try:
            events = list(sub.replay)
            while True:
                for event in events:
                    pending = await self._event(event.name, event.data, pending)
                if any(event.name == "done" for event in events):
                    break
                live = await sub.next()
                if live is None:
                    break
                events = [live]
            if pending.strip():
                await self._speak(pending)
            result = turn.result
            await self.sender.send_json(
                {
                    "type": "done",
                    "conversationId": turn.conversation_id,
                    "assistantMessageId": result.assistant_message_id,
                    "status": result.status or turn.status,
                }
            )
        finally:
            sub.close()

    async def _event(self, name: str, data: Mapping[str, Any], pending: str) -> str:
        if name == "content_delta":
            await self.sender.send_json({"type": "delta", "text": data.get("delta", "")})
            pending += data.get("delta", "")
            cut = None
            for match in SENTENCE_END.finditer(pending):
                cut = match.end()
            if cut is not None:
                await self._speak(pending[:cut])
                pending = pending[cut:]
        elif name == "tool_approval_requested":
            await self.sender.send_json({"type": "approval", "callId": data.get("pendingId"), "toolName": data.get("toolName")})
        elif name == "error":
            await self.sender.send_json({"type": "error", "message": data.get("message", "the answer failed"), "code": 500})
        return pending

    async def _speak(self, text: str) -> None:
        for sentence in local_speech.sentences(text):
            try:
                audio, _, _ = await media.synthesize(self.local, sentence[: self.limits.max_tts_chars], self.voice, "wav")
            except ApiError as exc:
                await self.sender.send_json({"type": "error", "message": f"speech: {exc.msg}", "code": exc.code})
                return
            await self.sender.send_bytes(audio)
