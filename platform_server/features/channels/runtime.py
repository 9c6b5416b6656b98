"""Turns started by channels: inbound webhook messages run the channel's agent; answers are posted back."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from platform_server.db import utcnow
from platform_server.features.agents import service as agents
from platform_server.features.channels import service
from platform_server.features.channels.models import Channel
from platform_server.features.channels.platforms import ADAPTERS, outbound
from platform_server.features.channels.platforms.base import (
    Button,
    ButtonAnswering,
    Editable,
    GatewayAdapter,
    Inbound,
    PlatformAdapter,
    SentRef,
    Target,
    approval_buttons,
)
from platform_server.features.channels.webchat_limits import webchat_limits
from platform_server.features.chat.errors import AgentBusy
from platform_server.features.chat.runtime import TurnRequest
from platform_server.features.conversations.models import Message
from platform_server.features.conversations.service import key_for
from platform_server.ports import leader
from platform_server.web.errors import ApiError

if TYPE_CHECKING:
    import aiohttp

    from platform_server.config import Config
    from platform_server.features.chat.runtime import ChatRuntime

log = logging.getLogger(__name__)

GATEWAY_CHECK_S = 5.0  # how often enabled channels are matched with running gateways (changes through the API wake it)


# A draft is edited while it fits in one message of every platform (Discord's 2000 is the smallest); past that the
# rest waits for the complete answer, which is then split as the platform needs.
STREAM_MAX_CHARS = 1800


class _Draft:
    """The answer being streamed into one platform message by edits."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.reset()

    def reset(self) -> None:
        # The clock starts now: an answer complete within one interval is sent once, whole, with no draft.
        self.text, self.shown, self.last = "", "", time.monotonic()
        self.ref: SentRef | None = None

    def due(self) -> bool:
        fits = len(self.text) <= STREAM_MAX_CHARS and bool(self.text.strip()) and self.text != self.shown
        return fits and time.monotonic() - self.last >= self.interval


def conversation_id_for(channel: Channel, end_user: str, prefix: str = "ch") -> str:
    """One conversation per channel and end user (ids may not contain '@', so the user is hashed)."""
    return f"{prefix}-{channel.id}-{hashlib.sha256(end_user.encode()).hexdigest()[:20]}"


class ChannelRuntime:
    """Reply workers of this process (platform.runtime(CHANNELS))."""

    def __init__(self, chat: ChatRuntime, config: Config) -> None:
        self.chat = chat
        self.config = config
        self.webchat_limits = webchat_limits(config.redis_url, config.webchat_rate_per_address, config.webchat_rate_per_token)
        self.tasks: set[asyncio.Task[None]] = set()
        self.gateways: dict[int, tuple[Any, asyncio.Task[None]]] = {}  # channel id -> (its update_time, connection loop)
        self._reconcile = asyncio.Event()

    def start_gateways(self) -> None:
        """Keep one gateway connection (Discord gateway, DingTalk stream...) per enabled channel whose platform has one."""
        self._spawn(self._supervise())

    def reconcile_soon(self) -> None:
        """A channel was created, changed or deleted: start or stop its gateway now rather than at the next check."""
        self._reconcile.set()

    async def _supervise(self) -> None:
        kinds = [k for k, a in ADAPTERS.items() if isinstance(a, GatewayAdapter)]
        try:
            while True:
                self._reconcile.clear()
                try:
                    self._match_gateways(kinds)
                except Exception:  # a failed check (database busy...) is tried again at the next one
                    log.exception("matching channel gateways failed")
                try:
                    await asyncio.wait_for(self._reconcile.wait(), GATEWAY_CHECK_S)
                except TimeoutError:
                    pass
        finally:
            for _stamp, task in self.gateways.values():
                task.cancel()

    def _match_gateways(self, kinds: list[str]) -> None:
        # A gateway (a bot's socket or long poll) runs on the leader only: two processes holding one bot's
        # gateway would answer each message twice. A process that stops leading drops its gateways here.
        if not leader.is_leader():
            wanted: dict[int, Channel] = {}
        else:
            wanted = {c.id: c for c in Channel.select().where((Channel.enabled == True) & (Channel.channel_type.in_(kinds)))}  # noqa: E712
        for cid, (stamp, task) in list(self.gateways.items()):
            row = wanted.get(cid)
            if row is None or row.update_time != stamp:  # disabled, deleted or changed (a new token...)
                task.cancel()
                del self.gateways[cid]
        for cid, row in wanted.items():
            if cid not in self.gateways:
                self.gateways[cid] = (row.update_time, asyncio.get_running_loop().create_task(self._gateway(row)))

    async def _gateway(self, channel: Channel) -> None:
        """Run the channel's gateway forever: restarted after a failure with exponential backoff (1 s .. 60 s, jittered)."""
        adapter = ADAPTERS[channel.channel_type]
        assert isinstance(adapter, GatewayAdapter)
        backoff = 1.0

        async def on_inbound(inbound: Inbound) -> None:
            row = Channel.get_or_none(Channel.id == channel.id)
            if row is not None and row.enabled and service.first_sight(row, inbound.event_id):
                self.deliver_inbound(row, ADAPTERS[row.channel_type], inbound)

        while True:
            started = time.monotonic()
            try:
                await adapter.run_gateway(self.config.web_fetch_allow_hosts, channel, on_inbound)
                error = None  # the platform ended the connection as planned (DingTalk's disconnect): open the next one
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure of one connection is retried; the channel shows why
                error = exc.msg if isinstance(exc, ApiError) else f"{type(exc).__name__}: {exc}"
            if error:
                log.warning("channel %s gateway: %s (retrying in %.0f s)", channel.id, error, backoff)
                Channel.update(last_error=error).where(Channel.id == channel.id).execute()
            if error is None or time.monotonic() - started > 60:  # a planned end, or it had been up a while: a short wait
                backoff = 1.0
            await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
            backoff = min(backoff * 2, 60.0)

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
        chat = self.chat
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
            async with outbound.session_for(self.config.web_fetch_allow_hosts, adapter, channel) as session:
                await adapter.answer_button(session, channel, inbound, note, decided)
        except ApiError as exc:
            log.warning("channel %s: answering a button press failed: %s", channel.id, exc.msg)

    async def _reply_platform(self, channel: Channel, adapter: PlatformAdapter, turn: Any, target: Target, conversation_user: str) -> None:
        """Follow the turn; each completed answer (and each approval prompt, as buttons) goes to the platform's send API."""
        sub = turn.subscribe(0)
        events = list(sub.replay)
        draft = _Draft(self.config.channel_stream_edit_interval_s if isinstance(adapter, Editable) else 0)
        try:
            while True:
                for event in events:
                    text, buttons = None, None
                    if event.name == "content_delta" and draft.interval > 0:
                        draft.text += str(event.data.get("delta") or "")
                        if draft.due():
                            await self._stream(channel, adapter, target, draft)
                        continue
                    if event.name == "tool_approval_requested":
                        text = f"Approval needed: the agent wants to run `{event.data.get('toolName')}`."
                        buttons = approval_buttons(conversation_user)
                    elif event.name == "message_complete" and event.data.get("status") in ("completed", "awaiting_approval"):
                        row = Message.get_or_none(Message.id == int(event.data["assistantMessageId"]))
                        text = row.content if row is not None and row.content else None
                    if text and draft.ref is not None and event.name == "message_complete":
                        draft.text = text  # the draft becomes the whole answer (more messages if it outgrew one)
                        await self._stream(channel, adapter, target, draft)
                        text = None
                    if event.name == "message_complete":
                        draft.reset()
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

    async def _stream(self, channel: Channel, adapter: PlatformAdapter, target: Target, draft: _Draft) -> None:
        """Show the answer so far: sent once, then edited in place (Editable adapters only)."""
        assert isinstance(adapter, Editable)
        text, draft.shown, draft.last = draft.text, draft.text, time.monotonic()
        if draft.ref is None:
            draft.ref = await self._send(channel, adapter, target, text, None)
            return
        ref = draft.ref
        await self._send(channel, adapter, target, text, None, lambda session: adapter.edit(session, channel, ref, text))

    async def _send(
        self,
        channel: Channel,
        adapter: PlatformAdapter,
        target: Target,
        text: str,
        buttons: list[Button] | None,
        call: Callable[[aiohttp.ClientSession], Awaitable[SentRef]] | None = None,
    ) -> SentRef | None:
        """Send (or run `call`, an edit) through a session pinned to the platform; a failure is logged on the channel."""
        error, ref = None, None
        try:
            async with outbound.session_for(self.config.web_fetch_allow_hosts, adapter, channel) as session:
                ref = await (call(session) if call else adapter.send(session, channel, target, text, buttons=buttons))
        except ApiError as exc:
            error = exc.msg
        Channel.update(last_outbound_at=utcnow(), last_error=error).where(Channel.id == channel.id).execute()
        if error:
            log.warning("channel %s: sending failed: %s", channel.id, error)
        return ref

    async def stop(self) -> None:
        pending = list(self.tasks) + [task for _stamp, task in self.gateways.values()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        await self.webchat_limits.close()
