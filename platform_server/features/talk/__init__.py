"""Talk mode: voice conversations over a WebSocket (speech in, a chat turn, speech out)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.features.talk.session import TalkRegistry


TALK: RuntimeKey[TalkRegistry] = RuntimeKey("talk")
