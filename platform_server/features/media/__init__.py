"""Speech (transcription, synthesis, the offline engines), image generation and media jobs, with their tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.integrations.local_speech import LocalSpeech
    from platform_server.loops import Loop


SPEECH_LOCAL: RuntimeKey[LocalSpeech] = RuntimeKey("speech_local")
MEDIA_PURGE: RuntimeKey[Loop] = RuntimeKey("media_purge")
