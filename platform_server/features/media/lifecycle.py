"""Register the image tool and purge downloaded or expired generated files."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from platform_server.features.media import MEDIA_PURGE, SPEECH_LOCAL, generation, service
from platform_server.features.tools.registry import ToolDefinition
from platform_server.integrations.local_speech import LocalSpeech
from platform_server.integrations.media_jobs import JobPolicy
from platform_server.loops import Loop

if TYPE_CHECKING:
    from platform_server.platform import Platform

IMAGE_TOOL = {
    "type": "object",
    "properties": {
        "prompt": {"type": "string", "description": "What the image should show"},
        "size": {"type": "string", "enum": list(service.IMAGE_SIZES)},
    },
    "required": ["prompt"],
}


class GeneratedFilesPurge(Loop):
    """Delete generated files once downloaded or expired."""

    interval_s = 600.0

    def tick(self) -> int:
        return service.purge_expired()


def agent_tools(platform: Platform) -> list[ToolDefinition]:
    """`image_generate` and one provider-job tool per generated kind (video, music, ...)."""
    tools = [
        ToolDefinition(
            name="image_generate",
            description="Generate an image from a text prompt; returns a one-time download link.",
            parameters=IMAGE_TOOL,
            run=service.image_generate,
            source="media",
        )
    ]
    config = platform.config
    # A job must end before the tool call's own limit, so its failure says what happened.
    job_timeout = min(config.media_job_timeout_s, max(1.0, config.tool_timeout_s - 5))
    policy = JobPolicy(config.media_job_poll_initial_s, config.media_job_poll_max_s, job_timeout, config.media_job_max_bytes)
    for kind in generation.KINDS:
        tools.append(
            ToolDefinition(
                name=kind.tool,
                description=f"Generate a {kind.noun} from a text prompt (a provider job; it may take minutes); returns a one-time download link.",
                parameters=kind.parameters,
                run=partial(generation.generate, kind, policy),
                source="media",
            )
        )
    return tools


async def start(platform: Platform) -> None:
    platform.set_runtime(SPEECH_LOCAL, LocalSpeech())  # models load on first use
    loop = GeneratedFilesPurge()
    platform.set_runtime(MEDIA_PURGE, loop)
    loop.start()


async def stop(platform: Platform) -> None:
    platform.runtime(MEDIA_PURGE).stop()
