"""Messaging channels: an agent reachable from an external platform (signed webhooks) or the webchat widget."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, create_tables, utcnow
from platform_server.sealed import SealedTextField, seal_column


class Channel(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    owner_user_id = peewee.BigIntegerField()  # conversations of the channel belong to this user
    name = peewee.CharField()
    channel_type = peewee.CharField(index=True)  # im_a .. im_h, webchat
    agent_id = peewee.BigIntegerField()
    enabled = BooleanField(default=True)
    reply_url = peewee.CharField(null=True)
    secret = SealedTextField()  # HMAC key of the webhook signatures (write-only)
    public_token = peewee.CharField(unique=True)  # webchat: the widget's public token
    settings = JSONField(default=dict)  # webchat: welcomeMessage, title
    last_inbound_at = DateTimeField(null=True)
    last_outbound_at = DateTimeField(null=True)
    last_error = peewee.TextField(null=True)
    health = peewee.CharField(default="unknown")  # unknown, healthy, unhealthy
    health_checked_at = DateTimeField(null=True)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


class InboundMessage(BaseModel):
    """Seen message ids, so a platform's retries are answered once."""

    channel = peewee.ForeignKeyField(Channel, on_delete="CASCADE")
    message_id = peewee.CharField()
    create_time = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("channel", "message_id"), True),)


class PairingSession(BaseModel):
    """A QR-code pairing (or app registration) of a channel with its gateway; see README "Channel pairing"."""

    session_id = peewee.CharField(unique=True)  # ours, unguessable
    workspace_id = peewee.BigIntegerField(index=True)
    channel = peewee.ForeignKeyField(Channel, on_delete="CASCADE")
    channel_id: int  # peewee's accessor of the foreign key column
    purpose = peewee.CharField()  # qrcode, register, login
    gateway_session = peewee.CharField()
    status = peewee.CharField(default="waiting")  # waiting, scanned, confirmed, expired, failed
    error = peewee.TextField(null=True)
    expires_at = DateTimeField()
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)


MIGRATIONS: list[Migration] = [
    ("channels_0001_tables", create_tables(Channel, InboundMessage)),
    ("channels_0002_seal_secrets", seal_column("channel", "secret")),
    ("channels_0003_pairing", create_tables(PairingSession)),
]
