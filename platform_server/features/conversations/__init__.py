"""Conversations and their stored messages: listing, renaming, deleting and exporting them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.platform import RuntimeKey

if TYPE_CHECKING:
    from platform_server.loops import Loop

SEARCH_INDEX: RuntimeKey[Loop] = RuntimeKey("conversations_search_index")  # fills the message index in batches
