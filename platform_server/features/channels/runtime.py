"""Turns started by channels: inbound webhook messages run the channel's agent; answers are posted back."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from platform_server.db import utcnow
from platform_server.features.channels.webchat_limits import WebchatLimiter
from platform_server.features.channels import service
from platform_server.features.channels.models import Channel
from platform_server.features.channels.platforms import outbound
from platform_server.features.channels.platforms.base import Button, ButtonAnswering, Inbound, PlatformAdapter, Target, approval_buttons
from platform_server.features.chat.errors import AgentBusy
from platform_server.web.errors import ApiError
from platform_server.features.agents import service as agents
from platform_server.features.chat.runtime import TurnRequest
from platform_server.features.conversations.models import Message
from platform_server.features.conversations.service import key_for

if TYPE_CHECKING:
    from platform_server.app import Platform

log = logging.getLogger(__name__)


def conversation_id_for(channel: Channel, end_user: str, prefix: str = "ch") -> str:
    """One conversation per channel and end user (ids may not contain '@', so the user is hashed)."""
    return f"{prefix}-{channel.id}-{hashlib.sha256(end_user.encode()).hexdigest()[:20]}"


class ChannelRuntime:
    """Reply workers of this process (platform.services.channels)."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        config = platform.config
        self.webchat_limits = WebchatLimiter(config.webchat_rate_per_address, config.webchat_rate_per_token)
        self.tasks: set[asyncio.Task[None]] = set()

    def deliver(self, channel: Channel, message: dict[str, Any]) -> dict[str, Any]:
        """Start (or queue into) the end user's turn and post each answer back when it completes."""

        caller = service.owner_caller(channel)
        agent = agents.get_agent_for_chat(caller, channel.agent_id)
        chat = self.platform.services.chat
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

    def deliver_inbound(self, channel: Channel, adapter: PlatformAdapter, inbound: Inbound) -> dict[str, Any]:
        """A verified platform message (or approval button press): run the turn, answer through the platform's send API."""
        conversation_user = inbound.sender_id
        text = inbound.text
        if inbound.command:  # a button press: only the channel's approvers decide (decisions.md "Who may approve")
            if not service.may_approve(channel, inbound.sender_id):
                self._spawn(self._answer_button(channel, adapter, inbound, "You may not approve this call.", False))
                return {"accepted": False, "reason": "not an approver"}
            conversation_user = inbound.conversation_user or inbound.sender_id
            text = "/approve" if inbound.command == "approved" else "/deny"
            self._spawn(self._answer_button(channel, adapter, inbound, "Approved." if inbound.command == "approved" else "Denied.", True))
        caller = service.owner_caller(channel)
        agent = agents.get_agent_for_chat(caller, channel.agent_id)
        chat = self.platform.services.chat
        cid = conversation_id_for(channel, conversation_user)
        try:
            turn = chat.start_turn(
                TurnRequest(
                    caller=caller,
                    agent=agent,
                    conversation_id=cid,
                    message=text,
                    end_user_id=f"{channel.channel_type}:{conversation_user}",
                    source=channel.channel_type,
                    text_commands=service.may_approve(channel, inbound.sender_id),
                )
            )
        except AgentBusy:
            size = chat.queue_input(key_for(caller.user_id, cid), text, None, caller.user_id)
            return {"accepted": True, "queued": True, "queueSize": size, "conversationId": cid}
        Channel.update(last_inbound_at=utcnow()).where(Channel.id == channel.id).execute()
        self._spawn(self._reply_platform(channel, adapter, turn, inbound.target, conversation_user))
        return {"accepted": True, "queued": False, "conversationId": cid}

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _answer_button(self, channel: Channel, adapter: PlatformAdapter, inbound: Inbound, note: str, decided: bool) -> None:
        if not isinstance(adapter, ButtonAnswering):
            return
        try:
            async with outbound.session_for(self.platform.config.web_fetch_allow_hosts, adapter, channel) as session:
                await adapter.answer_button(session, channel, inbound, note, decided)
        except ApiError as exc:
            log.warning("channel %s: answering a button press failed: %s", channel.id, exc.msg)

    async def _reply_platform(self, channel: Channel, adapter: PlatformAdapter, turn: Any, target: Target, conversation_user: str) -> None:
        """Follow the turn; each completed answer (and each approval prompt, as buttons) goes to the platform's send API."""
        sub = turn.subscribe(0)
        events = list(sub.replay)
        try:
            while True:
                for event in events:
                    text, buttons = None, None
                    if event.name == "tool_approval_requested":
                        text = f"Approval needed: the agent wants to run `{event.data.get('toolName')}`."
                        buttons = approval_buttons(conversation_user)
                    elif event.name == "message_complete" and event.data.get("status") in ("completed", "awaiting_approval"):
                        row = Message.get_or_none(Message.id == int(event.data["assistantMessageId"]))
                        text = row.content if row is not None and row.content else None
                    if text:
                        await self._send(channel, adapter, target, text, buttons)
                    if event.name == "done":
                        return
                item = await sub.next()
                if item is None:
                    return
                events = [item]
        finally:
            sub.close()

    async def _send(self, channel: Channel, adapter: PlatformAdapter, target: Target, text: str, buttons: list[Button] | None) -> None:
        error = None
        try:
            async with outbound.session_for(self.platform.config.web_fetch_allow_hosts, adapter, channel) as session:
                await adapter.send(session, channel, target, text, buttons=buttons)
        except ApiError as exc:
            error = exc.msg
        Channel.update(last_outbound_at=utcnow(), last_error=error).where(Channel.id == channel.id).execute()
        if error:
            log.warning("channel %s: sending failed: %s", channel.id, error)

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
            status = await service.post_signed(self.platform.config, channel, payload)
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
