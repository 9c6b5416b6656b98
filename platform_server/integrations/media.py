"""OpenAI-compatible audio and image endpoints: transcription, speech synthesis, image generation."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from platform_server.integrations.llm import LlmError
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy_import("aiohttp")


def _timeout() -> aiohttp.ClientTimeout:
    """A media provider call's time limits (built per call: aiohttp is imported on first use)."""
    return aiohttp.ClientTimeout(total=120, sock_connect=10)


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


async def _error(r: aiohttp.ClientResponse) -> LlmError:
    try:
        message = (await r.json()).get("error", {}).get("message") or r.reason
    except (aiohttp.ContentTypeError, ValueError, AttributeError):
        message = (await r.text())[:300] or r.reason
    return LlmError(f"HTTP {r.status}: {message}", status=r.status)


async def transcribe(
    base_url: str, api_key: str | None, model: str, filename: str, audio: bytes, content_type: str | None, language: str | None = None
) -> str:
    """`POST {base}/audio/transcriptions` (multipart) -> the transcript text."""
    form = aiohttp.FormData()
    form.add_field("file", audio, filename=filename, content_type=content_type or "application/octet-stream")
    form.add_field("model", model)
    if language:
        form.add_field("language", language)
    try:
        async with aiohttp.ClientSession(timeout=_timeout()) as s:
            async with s.post(base_url.rstrip("/") + "/audio/transcriptions", data=form, headers=_headers(api_key)) as r:
                if r.status >= 400:
                    raise await _error(r)
                data: Any = await r.json(content_type=None)
    except aiohttp.ClientError as exc:
        raise LlmError(f"transcription failed: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise LlmError("transcription answer has no text")
    return data["text"]


async def synthesize(base_url: str, api_key: str | None, model: str, text: str, voice: str, fmt: str) -> tuple[bytes, str]:
    """`POST {base}/audio/speech` -> (audio bytes, content type)."""
    body = {"model": model, "input": text, "voice": voice, "response_format": fmt}
    try:
        async with aiohttp.ClientSession(timeout=_timeout()) as s:
            async with s.post(base_url.rstrip("/") + "/audio/speech", json=body, headers=_headers(api_key)) as r:
                if r.status >= 400:
                    raise await _error(r)
                return await r.read(), r.headers.get("Content-Type", "application/octet-stream")
    except aiohttp.ClientError as exc:
        raise LlmError(f"speech synthesis failed: {exc}") from exc


async def generate_image(base_url: str, api_key: str | None, model: str, prompt: str, size: str) -> bytes:
    """`POST {base}/images/generations` with `b64_json` -> PNG bytes."""
    body = {"model": model, "prompt": prompt, "size": size, "n": 1, "response_format": "b64_json"}
    try:
        async with aiohttp.ClientSession(timeout=_timeout()) as s:
            async with s.post(base_url.rstrip("/") + "/images/generations", json=body, headers=_headers(api_key)) as r:
                if r.status >= 400:
                    raise await _error(r)
                data: Any = await r.json(content_type=None)
    except aiohttp.ClientError as exc:
        raise LlmError(f"image generation failed: {exc}") from exc
    try:
        return base64.b64decode(data["data"][0]["b64_json"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise LlmError("image generation answer has no b64_json image") from exc
