"""The multimodal sidecar: a text-only model gets descriptions of the images it cannot see.

When the answering model is text-only and the `sidecar` setting names a vision model, every image of
the recent user messages is described once by that model (kept in the message's metadata as
`imageDescriptions`); the main model receives the description instead of the image. Without a sidecar
the image is replaced by a note and the turn sends a `notice` event, so the user knows it was not seen.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from platform_server.blocking import run_blocking
from platform_server.db import database, fetch_models
from platform_server.features.chat import uploads
from platform_server.features.chat.store import TurnStore
from platform_server.features.conversations.models import Conversation, Message
from platform_server.features.models.runtime import LlmRouter, ModelTarget, explicit_target
from platform_server.features.settings import service as settings
from platform_server.features.usage.meter import UsageAccount
from platform_server.integrations.llm.types import ChatMessage, ChatRequest, LlmError
from platform_server.json_types import JsonObject

if TYPE_CHECKING:
    from platform_server.features.chat.turns import Turn

log = logging.getLogger(__name__)

DESCRIBE_SYSTEM = (
    "You describe images for an assistant that cannot see them. Describe what the image shows: objects, "
    "people, text (transcribed exactly), numbers, charts and anything the user may ask about. Be factual "
    "and complete in at most 200 words."
)
OMITTED = "[image omitted: the model does not accept images and no vision sidecar is configured]"
RECENT_MESSAGES = 40
# Whether the conversation has a message with parts at all: every turn of a text-only model asks, and
# most conversations have none (answered from the partial index `message_with_parts`, no row read).
_ANY_PARTS_SQL = "SELECT 1 FROM message WHERE conversation_id = ? AND content_parts IS NOT NULL LIMIT 1"
# Of the last RECENT_MESSAGES user messages, those with parts (images).
_RECENT_WITH_PARTS_SQL = (
    "SELECT * FROM (SELECT * FROM message WHERE conversation_id = ? AND role = 'user' ORDER BY id DESC LIMIT ?) "
    "WHERE content_parts IS NOT NULL ORDER BY id DESC"
)


def _image_urls(m: Message) -> list[str]:
    return [str(p.get("url", "")) for p in (m.content_parts or []) if p.get("type") == "image" and p.get("url")]


class WithMetadata(Protocol):
    @property
    def metadata(self) -> JsonObject | None: ...


def placeholder(m: WithMetadata, url: str) -> str:
    """The text a text-only model gets for an image: its sidecar description, or the omission note."""
    descriptions = (m.metadata or {}).get("imageDescriptions")
    described = descriptions.get(url) if isinstance(descriptions, dict) else None
    return f"[image, described by the vision sidecar: {described}]" if described else OMITTED


def _sidecar_targets() -> list[ModelTarget]:

    config = settings.get("sidecar") or {}
    if not config.get("enabled"):
        return []
    target = explicit_target(config.get("modelName"), config.get("provider"))
    return [target] if target is not None else []


async def prepare(llm: LlmRouter, store: TurnStore, turn: Turn, conv: Conversation, vision: bool) -> None:
    """Before a text-only model answers: describe the conversation's undescribed images, or tell the user."""

    if vision or database.execute_sql(_ANY_PARTS_SQL, (conv.id,)).fetchone() is None:
        return
    rows = [m for m in fetch_models(Message, _RECENT_WITH_PARTS_SQL, (conv.id, RECENT_MESSAGES)) if _image_urls(m)]
    todo = [(m, url) for m in rows for url in _image_urls(m) if not ((m.metadata or {}).get("imageDescriptions") or {}).get(url)]
    if not todo:
        return
    targets = _sidecar_targets()
    missed = 0
    for m, url in todo:
        data_url = await run_blocking(uploads.image_data_url, conv.user_id, url, None) if targets else None
        text = await _describe(llm, turn.usage, targets, data_url) if data_url else None
        if not text:
            missed += 1
            continue
        store.describe_image(m.id, url, text)
    if missed:
        why = "no vision sidecar is configured" if not targets else "the vision sidecar could not describe them"
        turn.publish(
            "notice",
            {"kind": "images_omitted", "count": missed, "message": f"The model cannot see images and {why}: {missed} image(s) were left out."},
        )


async def _describe(llm: LlmRouter, usage: UsageAccount, targets: list[ModelTarget], data_url: str) -> str | None:
    content: list[JsonObject] = [{"type": "text", "text": "Describe this image."}, {"type": "image", "url": data_url}]
    req = ChatRequest(model="", messages=[ChatMessage("system", DESCRIBE_SYSTEM), ChatMessage("user", content)], max_tokens=600, temperature=0.2)
    try:
        _, result = await llm.chat(targets, req, usage)
    except LlmError as exc:
        log.warning("the vision sidecar failed: %s", exc.message)
        return None
    return " ".join((result.content or "").split())[:4000] or None
