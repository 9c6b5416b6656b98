"""First-run setup: the global admin, created once (by the API or headless from the environment)."""

from __future__ import annotations

import hmac
import logging
import secrets
from typing import Any

from platform_server import __version__
from platform_server.db import database
from platform_server.features.agents import service as agents
from platform_server.features.agents.schemas import AgentCreate
from platform_server.features.auth import service as auth
from platform_server.features.auth.models import User
from platform_server.features.models import service as models
from platform_server.features.models.models import Provider
from platform_server.features.settings import service as settings
from platform_server.features.workspaces.service import DEFAULT_WORKSPACE_ID
from platform_server.web.errors import BadRequest, Forbidden

log = logging.getLogger(__name__)
_setup: dict[str, str] = {}

# Other areas add onboarding steps: name -> callable(user_id) -> bool
ONBOARDING_STEPS: dict[str, Any] = {}


def status() -> dict[str, Any]:
    admin = auth.has_admin()
    return {"initialized": admin, "hasAdmin": admin, "version": __version__}


def create_admin(username: str, password_hash: str, nickname: str | None, language: str | None, timezone: str | None = None) -> User:
    """Create the global admin as owner of workspace 1; refused once an admin exists. The language and time
    zone the admin chose (the console offers the browser's) become the system's."""
    if auth.has_admin():
        raise BadRequest("Already initialized")
    with database.atomic():  # the admin and the first agent together, or neither
        user = auth.create_user(None, username, password_hash, nickname, None, "admin", True, workspace_role="owner")
        chosen = {k: v for k, v in (("language", language), ("timezone", timezone)) if v}
        if chosen:
            settings.save(None, chosen)  # an unknown zone is refused here: the admin is not created either
        first_agent(user)
    return user


FIRST_AGENT = AgentCreate(
    name="Assistant",
    description="Your first agent, created at setup. It answers with the default model.",
    systemPrompt="You are a helpful assistant. Answer clearly and briefly.",
)


def first_agent(user: User) -> None:
    """A fresh install has an agent to talk to (on the default model: modelName empty), so a first message has somewhere to go."""
    caller = auth.acting_caller(user.id, DEFAULT_WORKSPACE_ID)
    if caller is not None:
        agents.create(caller, FIRST_AGENT)


def ensure_headless_admin(username: str, password: str, rounds: int = 10, password_hash: str | None = None) -> None:
    """Create the admin from PLATFORM_ADMIN_PASSWORD at start when none exists (`password_hash`: its hash, computed
    ahead off the IOLoop)."""
    if not password or auth.has_admin():
        return
    if not headless_admin_password_ok(password):
        raise SystemExit("PLATFORM_ADMIN_PASSWORD must be at least 8 characters")
    create_admin(username or "admin", password_hash or auth.hash_password(password, rounds), None, None)
    log.info("created admin user %r from the environment", username)


def headless_admin_password_ok(password: str) -> bool:
    return len(password) >= 8


def prepare_setup_token(configured: str) -> None:
    """First run (no admin yet): the token a non-loopback `setup/init` must send, printed on the console."""
    if auth.has_admin():
        _setup["token"] = ""
        return
    _setup["token"] = configured or secrets.token_urlsafe(18)
    if not configured:
        log.warning(
            "First run: finish setup from this machine (http://localhost) or send this setup code as setupToken from another machine: %s",
            _setup["token"],
        )


def setup_token() -> str:
    return _setup.get("token", "")


def check_setup_origin(local: bool, given: str | None) -> None:
    """setup/init is taken from this machine itself (web.proxies.is_local), or with the setup token from anywhere else."""
    if local:
        return
    expected = setup_token()
    if not expected or not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Forbidden(
            "setup/init from another machine needs the setup token printed in the server log "
            "at first start (setupToken), or run it from the server itself"
        )


def onboarding(user_id: int, ollama_online: bool = False) -> dict[str, Any]:
    """Which first-run steps are done, plus the two facts the original console's wizard reads."""
    steps = {name: bool(check(user_id)) for name, check in ONBOARDING_STEPS.items()}
    steps["adminCreated"] = auth.has_admin()
    has_default = models.default_model("chat") is not None
    return {"completed": all(steps.values()), "steps": steps, **status(), "hasDefaultModel": has_default, "ollamaOnline": ollama_online}


def ollama_url() -> str | None:
    """The Ollama provider's model-list URL (its base URL ends in /v1), or None when it is not seeded."""

    p = Provider.get_or_none(Provider.id == "ollama")
    return f"{p.base_url.rstrip('/')}/models" if p is not None and p.base_url else None
