"""Speech to text, text to speech and tool-generated files, through the configured providers."""

from __future__ import annotations

import datetime as dt
import secrets
from pathlib import Path
from typing import Any

from platform_server.blocking import run_blocking
from platform_server.db import database, iso, utcnow
from platform_server.features.chat.models import Upload
from platform_server.features.media.models import GeneratedFile
from platform_server.features.models.errors import LlmFailure
from platform_server.features.models.models import Provider
from platform_server.features.settings import service as settings
from platform_server.features.tools.registry import ToolError
from platform_server.integrations import local_speech, media
from platform_server.integrations.llm import LlmError
from platform_server.integrations.local_speech import AudioError, LocalSpeech
from platform_server.ports import files as file_store
from platform_server.web.errors import BadRequest, NotFound

# The voices of the OpenAI speech protocol (it has no listing endpoint).
VOICES = ("alloy", "ash", "ballad", "coral", "echo", "fable", "nova", "onyx", "sage", "shimmer")
FORMATS = {"mp3": "audio/mpeg", "wav": "audio/wav", "opus": "audio/ogg"}
GENERATED_TTL = dt.timedelta(hours=24)
IMAGE_SIZES = ("256x256", "512x512", "1024x1024", "1024x1536", "1536x1024")


def _provider(key: str) -> tuple[str, str | None, dict[str, Any]]:
    """(base_url, api_key, settings) of the provider configured for speech or images."""

    conf = settings.get(key)
    if not conf.get("provider"):
        raise BadRequest(f"No {key} provider configured (set `{key}.provider` in the settings)")
    provider = Provider.get_or_none(Provider.id == conf["provider"])
    if provider is None or not provider.enabled or provider.protocol != "openai":
        raise BadRequest(f"The {key} provider must be an enabled OpenAI-compatible provider")
    return provider.base_url, provider.api_key or None, conf


def speech_provider_configured() -> bool:
    return bool(settings.get("speech").get("provider"))


async def transcribe(local: LocalSpeech, filename: str, audio: bytes, content_type: str | None, language: str | None) -> dict[str, Any]:
    """Speech to text by the configured provider, or by the local engine when none is configured."""
    if not speech_provider_configured():
        try:
            text = await local.transcribe_wav(audio)
        except AudioError as exc:
            raise BadRequest(f"file: {exc} (the local engine reads PCM16 WAV)")
        return {"text": text, "model": "en-us", "provider": None, "engine": local_speech.STT_ENGINE}
    base_url, api_key, conf = _provider("speech")
    try:
        text = await media.transcribe(base_url, api_key, conf["sttModel"], filename, audio, content_type, language)
    except LlmError as exc:
        raise LlmFailure(str(exc))
    return {"text": text, "model": conf["sttModel"], "provider": conf["provider"], "engine": "openai"}


async def synthesize(local: LocalSpeech, text: str, voice: str | None, fmt: str | None) -> tuple[bytes, str, str]:
    """(audio, content type, engine): the configured provider, or the local voice when none is configured."""
    if not speech_provider_configured():
        if voice is not None and voice not in local_speech.LOCAL_VOICES:
            raise BadRequest(f"voice: must be one of {', '.join(local_speech.LOCAL_VOICES)}")
        if fmt not in (None, "wav"):
            raise BadRequest("format: the local speech engine produces wav only")
        return await local.synthesize_wav(text), FORMATS["wav"], local_speech.TTS_ENGINE
    base_url, api_key, conf = _provider("speech")
    voice = voice or conf.get("voice") or "alloy"
    if voice not in VOICES:
        raise BadRequest(f"voice: must be one of {', '.join(VOICES)}")
    fmt = fmt or "wav"
    try:
        audio, _ = await media.synthesize(base_url, api_key, conf["ttsModel"], text, voice, fmt)
    except LlmError as exc:
        raise LlmFailure(str(exc))
    return audio, FORMATS[fmt], "openai"


def voices() -> dict[str, Any]:
    conf = settings.get("speech")
    if not conf.get("provider"):
        return {
            "provider": None,
            "engine": local_speech.TTS_ENGINE,
            "default": local_speech.DEFAULT_VOICE,
            "voices": [{"id": k, "name": v} for k, v in local_speech.LOCAL_VOICES.items()],
        }
    return {
        "provider": conf.get("provider"),
        "engine": "openai",
        "default": conf.get("voice") or "alloy",
        "voices": [{"id": v, "name": v.capitalize()} for v in VOICES],
    }


# ---- generated files ---------------------------------------------------------------------


def generated_root() -> Path:
    return file_store.current().path("generated")


def _write(root: Path, name: str, body: bytes) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_bytes(body)


def _read_and_remove(path: Path) -> bytes | None:
    if not path.is_file():
        return None
    body = path.read_bytes()
    path.unlink(missing_ok=True)
    return body


async def save_generated(user_id: int, workspace_id: int, conversation_id: str | None, name: str, content_type: str, body: bytes) -> dict[str, Any]:
    """Keep a tool's output (written off the IOLoop) and return its one-time download URL."""
    file_id = secrets.randbits(62) + 1
    await run_blocking(_write, generated_root(), str(file_id), body)
    with database.atomic():
        GeneratedFile.create(
            id=file_id,
            user_id=user_id,
            workspace_id=workspace_id,
            conversation_id=conversation_id,
            name=name,
            content_type=content_type,
            size=len(body),
            expires_at=utcnow() + GENERATED_TTL,
        )
    return {
        "id": str(file_id),
        "url": f"/api/v1/files/generated/{file_id}",
        "name": name,
        "size": len(body),
        "contentType": content_type,
        "expiresAt": iso(utcnow() + GENERATED_TTL),
    }


async def take_generated(file_id: int) -> tuple[bytes, GeneratedFile]:
    """The file's bytes (read off the IOLoop), once: the row is marked downloaded and the file removed."""
    with database.atomic():
        row = GeneratedFile.get_or_none(GeneratedFile.id == file_id)
        if row is None or row.downloaded_at is not None or row.expires_at <= utcnow():
            raise NotFound("File not found or already downloaded")
        claimed = GeneratedFile.update(downloaded_at=utcnow()).where((GeneratedFile.id == file_id) & GeneratedFile.downloaded_at.is_null()).execute()
    body = await run_blocking(_read_and_remove, generated_root() / str(file_id)) if claimed else None
    if body is None:
        raise NotFound("File not found or already downloaded")
    return body, row


def purge_expired() -> int:
    """Remove downloaded and expired files."""
    rows = list(GeneratedFile.select().where(GeneratedFile.downloaded_at.is_null(False) | (GeneratedFile.expires_at <= utcnow())))
    for row in rows:
        (generated_root() / str(row.id)).unlink(missing_ok=True)
    if rows:
        GeneratedFile.delete().where(GeneratedFile.id.in_([r.id for r in rows])).execute()
    return len(rows)


async def image_generate(args: dict[str, Any], ctx: Any) -> str:
    """The `image_generate` tool: one image from the configured provider, returned as a download link."""

    try:
        base_url, api_key, conf = _provider("images")
    except BadRequest as exc:
        raise ToolError(exc.msg)
    size = str(args.get("size") or conf.get("size") or "1024x1024")
    if size not in IMAGE_SIZES:
        raise ToolError(f"size must be one of {', '.join(IMAGE_SIZES)}")
    try:
        png = await media.generate_image(base_url, api_key, conf["model"], str(args["prompt"])[:4000], size)
    except LlmError as exc:
        raise ToolError(str(exc))
    saved = await save_generated(ctx.user_id, ctx.workspace_id, ctx.conversation_id, "image.png", "image/png", png)
    return f"Image generated ({saved['size']} bytes). One-time download link: {saved['url']}"


def conversation_files(user_id: int, workspace_id: int, conversation_id: str) -> dict[str, Any]:
    """The caller's uploads into a conversation and the files tools generated in it (newest first)."""

    uploads = Upload.select().where((Upload.user_id == user_id) & (Upload.conversation_id == conversation_id)).order_by(Upload.id.desc())
    generated = (
        GeneratedFile.select()
        .where((GeneratedFile.user_id == user_id) & (GeneratedFile.workspace_id == workspace_id) & (GeneratedFile.conversation_id == conversation_id))
        .order_by(GeneratedFile.create_time.desc())
    )
    now = utcnow()

    def state(g: GeneratedFile) -> str:
        return "downloaded" if g.downloaded_at is not None else "expired" if g.expires_at <= now else "available"

    return {
        "conversationId": conversation_id,
        "uploads": [
            {
                "storedName": u.stored_name,
                "name": u.name,
                "size": u.size,
                "contentType": u.content_type,
                "url": f"/api/v1/chat/files/{conversation_id}/{u.stored_name}",
                "createTime": iso(u.create_time),
            }
            for u in uploads
        ],
        "generated": [
            {
                "id": str(g.id),
                "name": g.name,
                "size": g.size,
                "contentType": g.content_type,
                "state": state(g),
                "url": f"/api/v1/files/generated/{g.id}" if state(g) == "available" else None,
                "createTime": iso(g.create_time),
                "expiresAt": iso(g.expires_at),
            }
            for g in generated
        ],
    }
