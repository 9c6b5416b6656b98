"""Request fields that hold a secret of an integration (a channel secret, an API key, a token).

Spaces are not a secret: a value that is blank once stripped, or shorter than the platform needs
without its surrounding spaces, is a 400 `<field>: <message>` (through the pydantic model)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator


def check_secret(value: str | None, min_length: int = 1, empty_means_remove: bool = False) -> str | None:
    """The value unchanged when it is a usable secret; a ValueError (the field's message) otherwise."""
    if value is None or (empty_means_remove and value == ""):
        return value
    stripped = value.strip()
    if not stripped:
        hint = ' (send "" to remove it)' if empty_means_remove else ""
        raise ValueError(f"must not be blank{hint}")
    if len(stripped) < min_length:
        raise ValueError(f"must be at least {min_length} characters, not counting surrounding spaces")
    return value


def secret(min_length: int = 1, empty_means_remove: bool = False) -> AfterValidator:
    """A pydantic validator for a secret field: `Annotated[str | None, secret(16)]`."""
    return AfterValidator(lambda v: check_secret(v, min_length, empty_means_remove))


ChannelSecret = Annotated[str | None, secret(16)]  # an HMAC key both sides share: 16 characters at least
RemovableSecret = Annotated[str | None, secret(1, empty_means_remove=True)]  # "" removes the stored value
