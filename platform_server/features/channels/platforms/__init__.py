"""The messaging platform adapters by stand-in token (decisions.md "Messaging platforms behind the stand-ins")."""

from __future__ import annotations

from platform_server.features.channels.platforms.base import PlatformAdapter

ADAPTERS: dict[str, PlatformAdapter] = {}


def register(adapter: PlatformAdapter) -> None:
    ADAPTERS[adapter.kind] = adapter


# One line per platform (MSG-A: im_a/b/d/e, MSG-B: im_c/f/g/h).
from platform_server.features.channels.platforms import telegram  # noqa: E402  im_e

register(telegram.ADAPTER)
from platform_server.features.channels.platforms import slack  # noqa: E402  im_d

register(slack.ADAPTER)
from platform_server.features.channels.platforms import discord  # noqa: E402  im_b

register(discord.ADAPTER)
from platform_server.features.channels.platforms import dingtalk  # noqa: E402  im_a

register(dingtalk.ADAPTER)
from platform_server.features.channels.platforms.feishu import FeishuAdapter  # noqa: E402  (after ADAPTERS: it imports settings)

register(FeishuAdapter())
from platform_server.features.channels.platforms.qq import QQAdapter  # noqa: E402

register(QQAdapter())
from platform_server.features.channels.platforms.wecom import WeComAdapter  # noqa: E402

register(WeComAdapter())
from platform_server.features.channels.platforms.weixin import WeixinAdapter  # noqa: E402

register(WeixinAdapter())
