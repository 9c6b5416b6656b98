"""What a chat model can do (chat, tools, json), and the check background jobs make before they use one.

The embedded SmolLM2-135M answers chat but never calls a tool and rarely writes valid JSON: a wiki digest,
a memory extraction or a goal judge given it held the model for minutes and then failed. A job that needs
JSON now skips at once with a reason that names the model, instead of failing after its timeout.
"""

from __future__ import annotations

from typing import Any, Iterable

from platform_server.features.models.errors import LlmFailure
from platform_server.features.models.models import ModelConfig, Provider
from platform_server.memo import memo_on
from platform_server.web.errors import BadRequest

CAPABILITIES = ("chat", "tools", "json")
LOCAL_LABEL = "Small offline demo: chat only"


class Incapable(LlmFailure):
    """No model of the targets can do what a background job needs."""


def defaults_for(protocol: str) -> tuple[str, ...]:
    """The embedded local model chats only; a remote (OpenAI- or Anthropic-protocol) model does everything."""
    return ("chat",) if protocol == "local" else CAPABILITIES


def of_row(m: ModelConfig) -> list[str]:
    """The model's capabilities: the stored ones, else its protocol's defaults (embedding models: none)."""
    if m.model_type != "chat":
        return []
    stored = [c for c in (m.capabilities or "").split(",") if c in CAPABILITIES]
    return stored or list(defaults_for(m.provider.protocol))


def label_of(m: ModelConfig) -> str | None:
    """A short label for model pickers: the embedded model is a small offline demo."""
    if m.model_type == "chat" and m.provider.protocol == "local":
        return LOCAL_LABEL
    return None


def check(values: Iterable[str] | None) -> str | None:
    """The stored form of a capability list from a request (None: leave as is); 400 for unknown names."""
    if values is None:
        return None
    given = [str(v) for v in values]
    bad = [v for v in given if v not in CAPABILITIES]
    if bad:
        raise BadRequest(f"capabilities: must be a subset of {', '.join(CAPABILITIES)}")
    # A chat model can always chat: chat is implied (refusing a list without it only made clients repeat it)
    return ",".join(c for c in CAPABILITIES if c in given or c == "chat")


def of_target(target: Any) -> list[str]:
    """The capabilities of a resolved target (`provider_id`, `protocol`, `model_name`)."""
    return list(_of_model(target.provider_id, target.model_name, target.protocol))


@memo_on(ModelConfig, Provider)
def _of_model(provider_id: str, model_name: str, protocol: str) -> tuple[str, ...]:
    """A chat model's capabilities, read once per change of the model tables (every chat turn asks)."""
    row = ModelConfig.get_or_none((ModelConfig.provider == provider_id) & (ModelConfig.model_name == model_name) & (ModelConfig.model_type == "chat"))
    return tuple(defaults_for(protocol) if row is None else of_row(row))


def able(targets: list[Any], need: str, job: str) -> list[Any]:
    """The targets that can do `need`, in order; Incapable (with the reason a person reads) when none can."""
    kept = [t for t in targets if need in of_target(t)]
    if kept:
        return kept
    names = ", ".join(f"{t.provider_id}/{t.model_name}" for t in targets) or "none"
    raise Incapable(f"Skipped {job}: it needs a model that can do {need}, and {names} cannot (configure a capable model)")
