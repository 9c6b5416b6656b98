"""The job-style media tools: `video_generate`, `music_generate`, `model3d_generate`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from platform_server.features.media import service
from platform_server.features.tools.registry import ToolError
from platform_server.integrations import media_jobs
from platform_server.integrations.llm import LlmError
from platform_server.web.errors import BadRequest


@dataclass(frozen=True)
class MediaKind:
    name: str  # settings key and protocol path segment
    tool: str
    noun: str
    extensions: dict[str, str]  # content type -> file extension
    parameters: dict[str, Any]

    def filename(self, content_type: str) -> str:
        return f"{self.noun}.{self.extensions.get(content_type, 'bin')}"


def _prompted(extra: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": ["prompt"], "properties": {"prompt": {"type": "string", "description": "What to generate"}, **extra}}


KINDS = (
    MediaKind(
        "video",
        "video_generate",
        "video",
        {"video/mp4": "mp4", "video/webm": "webm", "video/x-msvideo": "avi", "video/quicktime": "mov"},
        _prompted(
            {"durationSeconds": {"type": "integer", "minimum": 1, "maximum": 60}, "aspectRatio": {"type": "string", "enum": ["16:9", "9:16", "1:1"]}}
        ),
    ),
    MediaKind(
        "music",
        "music_generate",
        "music",
        {"audio/mpeg": "mp3", "audio/wav": "wav", "audio/x-wav": "wav", "audio/ogg": "ogg", "audio/flac": "flac"},
        _prompted({"durationSeconds": {"type": "integer", "minimum": 1, "maximum": 600}, "instrumental": {"type": "boolean"}}),
    ),
    MediaKind(
        "model3d",
        "model3d_generate",
        "model",
        {"model/gltf-binary": "glb", "model/obj": "obj", "model/stl": "stl", "model/gltf+json": "gltf"},
        _prompted({"format": {"type": "string", "enum": ["glb", "obj", "stl"]}}),
    ),
)


def _options(kind: MediaKind, args: dict[str, Any]) -> dict[str, Any]:
    """The tool's optional arguments, checked against its schema's bounds."""

    prompt = args.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ToolError("prompt: required")
    options: dict[str, Any] = {"prompt": prompt[:4000]}
    for name, schema in kind.parameters["properties"].items():
        if name == "prompt" or args.get(name) is None:
            continue
        value = args[name]
        if schema["type"] == "integer" and (
            not isinstance(value, int) or isinstance(value, bool) or not schema["minimum"] <= value <= schema["maximum"]
        ):
            raise ToolError(f"{name}: an integer from {schema['minimum']} to {schema['maximum']}")
        if schema["type"] == "boolean" and not isinstance(value, bool):
            raise ToolError(f"{name}: true or false")
        if "enum" in schema and value not in schema["enum"]:
            raise ToolError(f"{name}: one of {', '.join(schema['enum'])}")
        options[name] = value
    return options


async def generate(kind: MediaKind, policy: media_jobs.JobPolicy, args: dict[str, Any], ctx: Any) -> str:
    """Submit, poll, download; the file is kept as a one-time download link."""

    options = _options(kind, args)
    try:
        base_url, api_key, conf = service._provider(kind.name)
    except BadRequest as exc:
        raise ToolError(exc.msg)
    try:
        result = await media_jobs.generate(base_url, api_key, kind.name, {"model": conf["model"], **options}, policy)
    except LlmError as exc:
        raise ToolError(str(exc))
    saved = await service.save_generated(
        ctx.user_id, ctx.workspace_id, ctx.conversation_id, kind.filename(result.content_type), result.content_type, result.body
    )
    return f"{kind.noun.capitalize()} generated ({saved['size']} bytes, {result.content_type}). One-time download link: {saved['url']}"
