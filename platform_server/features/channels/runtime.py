"""Turns started by channels: inbound webhook messages run the channel's agent; answers are posted back."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import TYPE_CHECKING, Any

from platform_server.db import utcnow
from platform_server.features.channels.webchat_limits import WebchatLimiter
from platform_server.features.channels import service
from platform_server.features.channels.models import Channel
from platform_server.features.chat.errors import AgentBusy
from platform_server.web.errors import ApiError
from platform_server.features.agents import service as agents
from platform_server.features.chat.runtime import TurnRequest
from platform_server.features.conversations.models import Message
from platform_server.features.conversations.service import key_for

if TYPE_CHECKING:
    from platform_server.config import Config
    from platform_server.features.chat.runtime import ChatRuntime

log = logging.getLogger(__name__)


def conversation_id_for(channel: Channel, end_user: str, prefix: str = "ch") -> str:
    """One conversation per channel and end user (ids may not contain '@', so the user is hashed)."""
    return f"{prefix}-{channel.id}-{hashlib.sha256(end_user.encode()).hexdigest()[:20]}"


class ChannelRuntime:
    """Reply workers of this process (platform.runtime(CHANNELS))."""

    def __init__(self, chat: ChatRuntime, config: Config) -> None:
        self.chat = chat
        self.config = config
        self.webchat_limits = WebchatLimiter(config.webchat_rate_per_address, config.webchat_rate_per_token)
        self.tasks: set[asyncio.Task[None]] = set()

    def deliver(self, channel: Channel, message: dict[str, Any]) -> dict[str, Any]:
        """Start (or queue into) the end user's turn and post each answer back when it completes."""

        caller = service.owner_caller(channel)
        agent = agents.get_agent_for_chat(caller, channel.agent_id)
        chat = self.chat
        cid = conversation_id_for(channel, message["senderId"])
        end_user = f"{channel.channel_type}:{message['senderId']}"
        try:
            turn = chat.start_turn(
                TurnRequest(
                    caller=caller,
                    agent=agent,
                    conversation_id=cid,
                    message=message["text"],
                    end_user_id=end_user,
                    source=channel.channel_type,
                    text_commands=service.may_approve(channel, message["senderId"]),
                )
            )
        except AgentBusy:
            size = chat.queue_input(key_for(caller.user_id, cid), message["text"], None, caller.user_id)
            return {"accepted": True, "queued": True, "queueSize": size, "conversationId": cid}
        Channel.update(last_inbound_at=utcnow()).where(Channel.id == channel.id).execute()
        task = asyncio.get_running_loop().create_task(self._reply(channel, turn, message))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return {"accepted": True, "queued": False, "conversationId": cid}

    async def _reply(self, channel: Channel, turn: Any, message: dict[str, Any]) -> None:
        """Follow the turn; every completed answer is posted (signed) to the reply URL."""

        sub = turn.subscribe(0)
        events = list(sub.replay)
        try:
            while True:
                for event in events:
                    if event.name == "message_complete" and event.data.get("status") in ("completed", "awaiting_approval"):
                        row = Message.get_or_none(Message.id == int(event.data["assistantMessageId"]))
                        if row is not None and row.content:
                            await self._post(
                                channel,
                                {
                                    "type": "message",
                                    "channelId": str(channel.id),
                                    "inReplyTo": message["messageId"],
                                    "recipient": message["senderId"],
                                    "text": row.content,
                                },
                            )
                    if event.name == "done":
                        return
                item = await sub.next()
                if item is None:
                    return
                events = [item]
        finally:
            sub.close()

    async def _post(self, channel: Channel, payload: dict[str, Any]) -> None:
        try:
            status = await service.post_signed(self.config, channel, payload)
            error = None if 200 <= status < 300 else f"reply URL answered HTTP {status}"
        except ApiError as exc:
            error = exc.msg
        Channel.update(last_outbound_at=utcnow(), last_error=error).where(Channel.id == channel.id).execute()
        if error:
            log.warning("channel %s reply failed: %s", channel.id, error)

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)
