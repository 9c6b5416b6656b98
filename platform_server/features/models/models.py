"""Model providers (a slug id, protocol, endpoint, key) and the models each one offers."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, utcnow
from platform_server.sealed import SealedTextField, seal_column


class Provider(peewee.Model):
    id = peewee.CharField(primary_key=True, max_length=200)  # slug: openai, ollama, local, my-vllm
    name = peewee.CharField()
    protocol = peewee.CharField()  # openai | anthropic | ollama | local
    base_url = peewee.CharField(default="")
    api_key = SealedTextField(null=True)
    options = JSONField(null=True)  # the protocol's request settings: Ollama's {"keepAlive", "numCtx"}
    enabled = BooleanField(default=False)
    builtin = BooleanField(default=False)
    sort_order = peewee.IntegerField(default=100)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        database = BaseModel._meta.database
        table_name = "model_provider"


class ModelConfig(BaseModel):
    provider = peewee.ForeignKeyField(Provider, backref="models", on_delete="CASCADE", column_name="provider_id")
    model_name = peewee.CharField()
    display_name = peewee.CharField(default="")
    model_type = peewee.CharField(default="chat")  # chat | embedding
    modalities = peewee.CharField(default="text")  # "text" or "text,image"
    max_input_tokens = peewee.IntegerField(null=True)
    # "chat,tools,json" or a subset; empty: the protocol's default (features/models/capabilities.py)
    capabilities = peewee.CharField(default="")
    is_default = BooleanField(default=False)  # the default of its model_type (one per type)
    enabled = BooleanField(default=True)
    create_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "model_config"
        indexes = ((("provider", "model_name", "model_type"), True),)


def _tables(db: peewee.Database) -> None:
    db.create_tables([Provider, ModelConfig], safe=True)


def _ollama_options(db: peewee.Database) -> None:
    # A fresh database already has the column (models_0001 creates the table from today's model).
    if "options" not in {c.name for c in db.get_columns("model_provider")}:
        db.execute_sql("ALTER TABLE model_provider ADD COLUMN options TEXT")
    # The built-in Ollama entry speaks Ollama's own API unless an admin already pointed it elsewhere.
    db.execute_sql(
        "UPDATE model_provider SET protocol = 'ollama', base_url = 'http://127.0.0.1:11434'"
        " WHERE id = 'ollama' AND builtin = 1 AND protocol = 'openai' AND base_url = 'http://127.0.0.1:11434/v1'"
    )


def _capabilities(db: peewee.Database) -> None:
    columns = {c.name for c in db.get_columns("model_config")}
    if "capabilities" not in columns:
        db.execute_sql("ALTER TABLE model_config ADD COLUMN capabilities VARCHAR(255) NOT NULL DEFAULT ''")


# The two OAuth vendors' providers (ids are the API's neutral stand-ins), named by what they sign in to.
VENDOR_NAMES = {"vendor_a": "Anthropic account", "vendor_b": "OpenAI account"}
_OLD_VENDOR_NAMES = {"vendor_a": "Vendor A (OAuth)", "vendor_b": "Vendor B (OAuth)"}  # seeded before models_0005


def _vendor_names(db: peewee.Database) -> None:
    for vendor, old in _OLD_VENDOR_NAMES.items():  # an admin's own name for the row is kept
        Provider.update(name=VENDOR_NAMES[vendor]).where((Provider.id == vendor) & (Provider.name == old)).execute()


MIGRATIONS: list[Migration] = [
    ("models_0001_tables", _tables),
    ("models_0002_seal_api_keys", seal_column("model_provider", "api_key")),
    ("models_0003_ollama_options", _ollama_options),
    ("models_0004_capabilities", _capabilities),
    ("models_0005_vendor_names", _vendor_names),
]
