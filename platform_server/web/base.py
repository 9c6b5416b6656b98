"""The one base handler: envelope, error path, auth before the handler, body limits, timeouts."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import inspect
import logging
from asyncio import Future
from collections.abc import Awaitable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Callable, ParamSpec, TypeVar

import pydantic
import tornado.httputil
import tornado.iostream
import tornado.web
from tornado.ioloop import IOLoop

from platform_server import idempotency
from platform_server.blocking import run_blocking
from platform_server.ids import CONVERSATION_ID_RE, CONVERSATION_ID_RULE
from platform_server.ports.database import storage_fault
from platform_server.web import inputs, openapi_inputs, proxies, spool
from platform_server.web.bodies import JSON_OFF_LOOP_BYTES, check_booleans, decode_json, parse_json, validated
from platform_server.web.context import (
    GLOBAL_ADMIN,
    LOGIN,
    OPTIONAL,
    PUBLIC,
    ROLE_RANK,
    Caller,
    Principal,
)
from platform_server.web.encode import JsonText, dumps
from platform_server.web.errors import (
    ApiError,
    BadRequest,
    DatabaseBusy,
    Forbidden,
    InsufficientStorage,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    ServiceTimeout,
    Unauthorized,
    parse_long,
)
from platform_server.web.openapi_answers import Answer
from platform_server.web.openapi_events import SseEvents

if TYPE_CHECKING:  # the joined application's state; web/ imports no feature at run time
    from platform_server.config import Config
    from platform_server.platform import Platform

log = logging.getLogger(__name__)

P = ParamSpec("P")
M = TypeVar("M", bound=pydantic.BaseModel)

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
WRITE_METHODS = frozenset(("POST", "PUT", "PATCH", "DELETE"))  # refused (507) while storage is read-only


API_CSP = "default-src 'none'; frame-ancestors 'none'"
# Added by the reverse proxy that serves the original web console (README): where that console reads a field
# the spec fixes with other values (a running message's status, guard severities), it gets its own values.
ORIGINAL_CONSOLE_HEADER = "X-Original-Console"
_UNPARSED = object()  # `_parsed_json` before a large body was parsed off the loop


_IMPLEMENTED: dict[type, tuple[str, ...]] = {}


def _implemented_methods(cls: type[tornado.web.RequestHandler]) -> tuple[str, ...]:
    """The HTTP methods a handler class defines (asked on every request: worked out once per class)."""
    methods = _IMPLEMENTED.get(cls)
    if methods is None:
        methods = _IMPLEMENTED[cls] = tuple(m for m in HTTP_METHODS if getattr(cls, m.lower()) is not getattr(tornado.web.RequestHandler, m.lower()))
    return methods


@tornado.web.stream_request_body
class ApiHandler(inputs.NotedInputs):
    """Base of every route: declare `access` per method; handlers call one service and `ok()`."""

    access: dict[str, str] = {}  # method -> PUBLIC | OPTIONAL | LOGIN | viewer..owner | GLOBAL_ADMIN
    body_models: dict[str, type[pydantic.BaseModel]] = {}  # method -> request model (OpenAPI + parsing)
    answers: dict[str, Answer] = {}  # method -> the typed `data` of its 200 answer (OpenAPI; see openapi_answers)
    path_schemas: dict[str, dict[str, object]] = {}  # path parameter -> its schema in the document (an enum it checks)
    query_params: Mapping[str, Sequence[Mapping[str, object]]] = {}  # method -> query parameters it reads (OpenAPI; openapi_inputs adds more)
    sse_methods: frozenset[str] = frozenset()  # methods that answer text/event-stream
    events: dict[str, SseEvents] = {}  # SSE method -> the frames it sends (OpenAPI; see openapi_events)
    query_token: bool = False  # accept ?token= (SSE routes and chat stop only)
    download_methods: frozenset[str] = frozenset()  # methods that answer bytes
    # download method -> the content types it answers (OpenAPI); application/octet-stream when not listed
    download_types: dict[str, tuple[str, ...]] = {}
    read_only_methods: frozenset[str] = frozenset()  # writes served while storage is read-only (none by default: 507)
    max_body_setting = "max_body_bytes"
    spool_body = False  # uploads: the body goes to a temporary file as it arrives (see web/spool.py)
    tags: tuple[str, ...] = ()
    feature: str | None = None  # a feature flag that must be on (set with routing.gated)

    principal: Principal | None
    caller: Caller | None

    # ---- lifecycle -------------------------------------------------------

    @property
    def platform(self) -> Platform:
        platform: Platform = self.application.settings["platform"]
        return platform

    @property
    def config(self) -> Config:
        return self.platform.config

    @property
    def client_ip(self) -> str:
        """The client's address: the socket peer, or the address a trusted proxy forwarded (web.proxies)."""
        return proxies.client_address(self.request.remote_ip or "?", self.request.headers, self.config.trusted_proxies)

    @property
    def is_local_request(self) -> bool:
        """From this machine itself, not relayed by any proxy (web.proxies.is_local)."""
        return proxies.is_local(self.request.remote_ip or "", self.request.headers, self.config.trusted_proxies)

    def initialize(self, long_params: frozenset[str] = frozenset(), template: str = "") -> None:
        self.long_params = long_params  # from the route template (web.routing)
        self.template = template  # the documented path: the query parameters' schemas are found by it
        self.principal = None
        self.caller = None
        self._chunks: list[bytes] = []
        self._received = 0
        self._timeout_handle: asyncio.TimerHandle | None = None
        self._body_rejected = False
        self._deferred_error: BaseException | None = None
        self._parsed_json: object = _UNPARSED
        self._spool: spool.BodySpool | None = None
        self._spool_in_use = False  # the handler method is reading the spooled body
        self._idempotency_key: str | None = None
        self._idempotency_record: int | None = None

    def set_default_headers(self) -> None:
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Content-Security-Policy", API_CSP)  # a download handler may set its own sandbox

    def compute_etag(self) -> str | None:
        """None: API answers are `Cache-Control: no-store`, so no client keeps one to revalidate, and
        Tornado would otherwise hash every GET body for an ETag that is never sent back."""
        return None

    @classmethod
    def implemented_methods(cls) -> list[str]:
        return list(_implemented_methods(cls))

    def is_sse(self) -> bool:
        return self.request.method in self.sse_methods

    async def prepare(self) -> None:
        """Check method, size, token, path ids and role before the body is read.

        Errors other than 413 are raised from the handler method instead, after the (small) body
        has been read, so the keep-alive connection survives a 401/403/405.
        """
        self._check_length()  # first: an oversized body is refused whatever else is wrong with the request
        try:
            self.check_request()
        except PayloadTooLarge:
            raise
        except Exception as exc:  # noqa: BLE001 - re-raised from the method
            self._deferred_error = exc
            setattr(self, (self.request.method or "GET").lower(), self._raise_deferred)
            return
        method = (self.request.method or "GET").lower()
        length = self.request.headers.get("Content-Length", "")
        small = length.isdigit() and int(length) <= JSON_OFF_LOOP_BYTES  # most requests: no extra step
        if method in ("post", "put", "patch") and not small:
            setattr(self, method, self._after_body(getattr(self, method)))

    def _check_length(self) -> None:
        """413 from the declared Content-Length, before a byte of the body is read."""
        limit = getattr(self.config, self.max_body_setting)
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > limit:
            # The connection closes once the 413 is sent; past the HTTP layer's own ceiling Tornado would
            # still try to answer a bare 400 of its own after ours, unless the ceiling covers this body.
            self.request.connection.set_max_body_size(int(length))  # type: ignore[union-attr]
            raise PayloadTooLarge(f"Request body exceeds {limit} bytes")

    def _after_body(self, method: Callable[P, object]) -> Callable[P, Awaitable[None]]:
        """The handler method, preceded (once the body is in) by parsing a large JSON body off the IOLoop."""

        async def run(*args: P.args, **kwargs: P.kwargs) -> None:
            if self._received > JSON_OFF_LOOP_BYTES and self._is_json():
                self._parsed_json = await run_blocking(parse_json, list(self._chunks))
            result = method(*args, **kwargs)
            if inspect.isawaitable(result):
                await result

        return run

    def _is_json(self) -> bool:
        """Whether the body may be JSON (a handler reads other types as bytes or a form)."""
        ctype = (self.request.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        return not ctype.startswith(("multipart/", "application/x-www-form-urlencoded", "application/octet-stream", "application/zip"))

    def _raise_deferred(self, *args: object, **kwargs: object) -> None:
        assert self._deferred_error is not None
        raise self._deferred_error

    def check_request(self) -> None:
        method = self.request.method or "GET"
        if method not in self.implemented_methods():
            raise MethodNotAllowed()
        if not self.is_sse():
            self._timeout_handle = asyncio.get_running_loop().call_later(self.config.request_timeout_s, self._on_timeout)
        level = self.access.get(method, LOGIN)
        self.principal = self._authenticate(required=level not in (PUBLIC, OPTIONAL))
        self._parse_path_params()
        if self.principal is not None and level != PUBLIC:
            self._authorize(level)
        if self.feature and not self.platform.web.feature_enabled(self.feature):
            raise Forbidden(f"Feature {self.feature} is disabled")
        if method in WRITE_METHODS and self.platform.storage.read_only and method not in self.read_only_methods:
            raise InsufficientStorage(f"The server is read-only: {self.platform.storage.reason}. Nothing was saved; retry once space is freed")
        key = self.request.headers.get("Idempotency-Key") if method == "POST" else None
        if key is not None and self.principal is not None and not self.is_sse():
            key = key.strip()
            if not idempotency.valid_key(key):
                raise BadRequest(f"Idempotency-Key: must be 1-{idempotency.MAX_KEY_LENGTH} printable ASCII characters")
            self._idempotency_key = key
            self.post = self._idempotent_post  # runs the handler's post once per key
        elif method in WRITE_METHODS and not self.is_sse():
            name = method.lower()
            setattr(self, name, functools.partial(self._busy_retried, getattr(self, name)))

    async def _busy_retried(self, method: Callable[P, object], *args: P.args, **kwargs: P.kwargs) -> None:
        """Run a write; one that met another connection's write lock wrote nothing (the loop waits only
        `db_loop_busy_timeout_ms` on it), so it runs again after a pause that does not hold the loop, for up
        to `db_busy_retry_s`, before the 503 goes out (a wiki batch or a checkpoint holds the lock briefly)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.db_busy_retry_s
        pause = 0.02
        while True:
            try:
                result = method(*args, **kwargs)
                if inspect.isawaitable(result):
                    await result
                return
            except Exception as exc:
                if storage_fault(exc) != "busy" or self._headers_written or self._finished or loop.time() + pause > deadline:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.25)

    async def _idempotent_post(self, *args: object, **kwargs: object) -> None:
        """The handler's POST, run once per (user, path, key); a retry gets the first answer again."""
        assert self.principal is not None and self._idempotency_key is not None
        # a spooled upload is not held in memory: its size stands for it (a retry with another file of another size is a 422)
        body = b"".join(self._chunks) if self._spool is None else b"spooled:%d" % self._received
        digest = idempotency.request_hash(body, self.request.headers.get("X-Workspace-Id", ""))
        begun = idempotency.begin(
            self.principal.user_id,
            "POST",
            self.request.path,
            self._idempotency_key,
            digest,
            self.config.idempotency_ttl_s,
            self.config.request_timeout_s,
        )
        if begun.error is not None:
            raise ApiError(begun.error[1], begun.error[0])
        if begun.status is not None:
            self.set_status(begun.status)
            self.set_header("Idempotent-Replayed", "true")
            self.finish(begun.body or "")
            return
        self._idempotency_record = begun.record_id
        await self._busy_retried(functools.partial(type(self).post, self), *args, **kwargs)

    def finish(self, chunk: str | bytes | dict[str, object] | None = None) -> Future[None]:
        record, self._idempotency_record = self._idempotency_record, None
        if record is not None:  # the answer of a request with an Idempotency-Key: kept for its retries
            text = chunk.decode("utf-8", "replace") if isinstance(chunk, bytes) else dumps(chunk) if isinstance(chunk, dict) else chunk or ""
            try:
                idempotency.finish(record, self.get_status(), text)
            except Exception as exc:  # noqa: BLE001 - the answer goes out; a retry then runs again once the key frees
                log.warning("could not keep the answer for Idempotency-Key %r: %s", self._idempotency_key, exc)
        return super().finish(chunk)

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        if self._body_rejected:
            return None
        # Counted even when a 401/403 is already due: a body without Content-Length (chunked)
        # must not be read on and on just to be discarded.
        self._received += len(chunk)
        limit = getattr(self.config, self.max_body_setting)
        if self._received > limit:
            self._body_rejected = True
            self._chunks.clear()
            self._write_error_now(PayloadTooLarge(f"Request body exceeds {limit} bytes"))
            # The 413 is sent: the method must not run on the truncated body once it ends.
            setattr(self, (self.request.method or "GET").lower(), self._skip)
            return None
        if self._deferred_error is not None:
            return None
        if not self.spool_body:
            self._chunks.append(chunk)
            return None
        if self._spool is None:
            self._spool = spool.BodySpool(spool.spool_dir(self.config.data_dir))
        if self._spool.add(chunk):
            return self._flush_spool(self._spool)  # Tornado reads on once the batch is written
        return None

    async def _flush_spool(self, body: spool.BodySpool) -> None:
        """Write a batch of a spooled body; a disk that cannot hold it answers now (507 when full) and
        the rest of the body is read and dropped, as after a 413."""
        try:
            await run_blocking(body.flush)
        except OSError as exc:
            if self._body_rejected:
                return
            self._body_rejected = True
            self.platform.storage.note_fault(exc)  # a full disk turns read-only mode on
            self._drop_spool()
            self._write_error_now(to_api_error(exc))
            setattr(self, (self.request.method or "GET").lower(), self._skip)

    def _skip(self, *args: object, **kwargs: object) -> None:
        return None

    def _cancel_timeout(self) -> None:
        if self._timeout_handle is not None:
            self._timeout_handle.cancel()
            self._timeout_handle = None

    def on_finish(self) -> None:
        inputs.note_status(type(self), self.request.method or "", self.get_status())
        self._cancel_timeout()
        self._drop_spool()

    def _drop_spool(self) -> None:
        if self._spool is not None:
            IOLoop.current().run_in_executor(None, self._spool.cleanup)  # the executor keeps the job
            self._spool = None

    def on_connection_close(self) -> None:
        self._cancel_timeout()
        if not self._spool_in_use:  # a body never completed; one being parsed is dropped by on_finish
            self._drop_spool()
        super().on_connection_close()

    def _on_timeout(self) -> None:
        self._timeout_handle = None
        if not self._finished and not self._headers_written:
            self._write_error_now(ServiceTimeout())

    # ---- auth ------------------------------------------------------------

    def bearer_token(self) -> str | None:
        header = self.request.headers.get("Authorization", "")
        if header[:7].lower() == "bearer ":
            token = header[7:].strip()
            if token:
                return token
        if self.query_token:
            token = self.get_query_argument("token", "")
            if token:
                return token
        return None

    def _authenticate(self, required: bool) -> Principal | None:
        token = self.bearer_token()
        principal = self.platform.web.authenticate(token) if token else None
        if principal is None:
            if required:
                raise Unauthorized()
            return None
        if principal.token_kind == "jwt" and principal.token_exp is not None:
            remaining_ms = (principal.token_exp - dt.datetime.now(dt.timezone.utc).timestamp()) * 1000
            if remaining_ms < self.config.jwt_renew_threshold_ms:
                self.set_header("X-New-Token", self.platform.web.renew_token(principal))
                self.set_header("Access-Control-Expose-Headers", "X-New-Token")
        return principal

    def workspace_id(self) -> int:
        """`X-Workspace-Id`, or workspace 1 when absent or unparseable."""
        raw = (self.request.headers.get("X-Workspace-Id") or "").strip()
        return int(raw) if raw.isascii() and raw.isdigit() and 0 < int(raw) < 2**63 else 1

    def _authorize(self, level: str) -> None:
        assert self.principal is not None
        ws = self.workspace_id()
        role = "owner" if self.principal.is_global_admin else self.platform.web.workspace_role(self.principal.user_id, ws)
        self.caller = Caller(self.principal, ws, role)
        if level == GLOBAL_ADMIN and not self.principal.is_global_admin:
            raise Forbidden("Global admin required")
        if level in ROLE_RANK and not self.caller.has_role(level):
            raise Forbidden(f"Workspace role '{level}' required" if role else "Not a member of this workspace")

    def require_caller(self) -> Caller:
        """The authenticated caller; 401 when the route allowed anonymous access and none was given."""
        if self.caller is None:
            if self.principal is None:
                raise Unauthorized()
            self._authorize(LOGIN)
        assert self.caller is not None
        return self.caller

    def _parse_path_params(self) -> None:
        for name, raw in list(self.path_kwargs.items()):
            if name in self.long_params:
                self.path_kwargs[name] = parse_long(name, raw)  # type: ignore[assignment]  # handlers get Longs as int
            elif name == "conversationId" and not CONVERSATION_ID_RE.fullmatch(raw):  # the document's pattern (web.openapi)
                raise BadRequest(CONVERSATION_ID_RULE)

    # ---- input -----------------------------------------------------------

    @property
    def body_bytes(self) -> bytes:
        self._note(inputs.RAW)
        return b"".join(self._chunks)

    def json_body(self) -> object:
        """The request body as JSON (400 when malformed; {} when empty)."""
        self._note(inputs.JSON)
        parsed = self._parsed_json
        if parsed is _UNPARSED:
            return decode_json(b"".join(self._chunks))
        if isinstance(parsed, BadRequest):
            raise parsed
        return parsed

    def body(self, model: type[M]) -> M:
        """Parse and validate the JSON body into a pydantic model."""
        data = self.json_body()
        if not isinstance(data, dict):
            raise BadRequest("Request body must be a JSON object")
        check_booleans(model, data)
        return validated(model, data)

    def toggle_body(self, model: type[M]) -> M:
        """A toggle's `{enabled}` body; with no body, `?enabled=` (as the original console sends it) stands in."""
        enabled = self.query_bool("enabled")
        if b"".join(self._chunks) or enabled is None:  # a body of spaces is no JSON: body() refuses it
            return self.body(model)
        return validated(model, {"enabled": enabled})

    def query(self, model: type[M]) -> M:
        """Validate query parameters into a pydantic model."""
        for name, field in model.model_fields.items():
            self._note(inputs.QUERY, field.alias or name)
        data = {k: tornado.web.RequestHandler.get_query_argument(self, k) for k in self.request.query_arguments}
        return validated(model, data)

    def query_long(self, name: str, required: bool = False) -> int | None:
        """A Long query parameter; empty counts as absent only where its documented schema takes an empty value (a
        pattern like `^[0-9]{0,18}$`); where it says integer, empty is no integer: a 400."""
        raw = self.get_query_argument(name, None, strip=False)  # as sent: a documented pattern reads it so
        schema = openapi_inputs.documented(self.query_params, self.request.method or "", self.template, name)
        if raw is None or (raw == "" and openapi_inputs.takes_empty(schema)):
            if required:
                raise BadRequest(f"{name}: must not be null")
            return None
        return parse_long(name, openapi_inputs.as_documented(name, raw, schema))

    @property
    def original_console(self) -> bool:
        """Whether the request comes from the original web console (its proxy sends `X-Original-Console: 1`)."""
        return self.request.headers.get(ORIGINAL_CONSOLE_HEADER, "").strip() == "1"

    def query_bool(self, name: str) -> bool | None:
        raw = self.get_query_argument(name, None)
        if raw is None:
            return None
        # an empty value (Tornado also drops control characters: `%00` reads as empty) is no boolean, the documented
        # type: a 400, not "absent"
        lowered = raw.strip().lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise BadRequest(f"Invalid value for parameter '{name}': expected Boolean")

    def _spooled(self) -> spool.BodySpool:
        """The body's spool (made now from the chunks kept in memory on a route that does not spool)."""
        self._spool_in_use = True
        if self._spool is None:
            self._spool = spool.BodySpool(spool.spool_dir(self.config.data_dir))
            for chunk in self._chunks:
                self._spool.add(chunk)
            self._chunks = []
        return self._spool

    async def multipart(self) -> tuple[dict[str, list[bytes]], dict[str, list[spool.UploadedFile]]]:
        """Form fields (in memory) and file parts (temporary files, removed after the request) of a
        multipart or urlencoded body, parsed off the IOLoop from the spooled body."""
        self._note(inputs.FORM)
        try:
            return await run_blocking(self._spooled().parse_form, self.request.headers.get("Content-Type", ""), self.request.headers)
        except (spool.FormError, tornado.httputil.HTTPInputError) as exc:
            raise BadRequest(f"Malformed form body: {exc}") from None

    async def raw_body(self) -> bytes:
        """The whole body as bytes, read off the IOLoop when it was spooled to disk."""
        self._note(inputs.RAW)
        if self._spool is None:
            return b"".join(self._chunks)
        return await run_blocking(self._spooled().read_all)

    # ---- output ----------------------------------------------------------

    def ok(self, data: object = None, msg: str = "success") -> None:
        """Answer `{code:200, msg, data}`."""
        if self._finished:
            return
        if isinstance(data, JsonText):  # encoded once and kept (a cached list): placed in the envelope as is
            self.finish(f'{{"code":200,"msg":{dumps(msg)},"data":{data.text}}}')
            return
        self.finish(dumps({"code": 200, "msg": msg, "data": data}))

    def _write_error_now(self, error: ApiError) -> None:
        if self._finished:
            return
        self.clear()
        self._write_error_body(error)

    def _write_error_body(self, error: ApiError) -> None:
        if self.is_sse():
            self.set_status(200)
            self.set_header("Content-Type", "text/event-stream; charset=UTF-8")
            self.finish(f"event: error\ndata: {dumps(error.stream_frame())}\n\n")
            return
        self.set_status(error.http_status)
        if isinstance(error, MethodNotAllowed):
            self.set_header("Allow", ", ".join(self.implemented_methods()))
        self.finish(dumps(error.body()))

    def write_error(self, status_code: int, **kwargs: object) -> None:
        exc_info = kwargs.get("exc_info")
        exc = exc_info[1] if isinstance(exc_info, tuple) and len(exc_info) == 3 and isinstance(exc_info[1], BaseException) else None
        if exc is not None and not isinstance(exc, ApiError):
            self.platform.storage.note_fault(exc)  # a full disk turns read-only mode on
        error = to_api_error(exc, status_code)
        if isinstance(error, (DatabaseBusy, InsufficientStorage)):
            self.set_header("Retry-After", "1" if isinstance(error, DatabaseBusy) else "30")
        self._write_error_body(error)

    def log_exception(self, typ: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(value, ApiError):
            return
        if isinstance(value, tornado.web.HTTPError) and value.status_code < 500:
            return
        if isinstance(value, tornado.iostream.StreamClosedError):
            return
        fault = storage_fault(value)
        if fault is not None:  # answered 503 / 507: one line, not a stack per refused write
            log.warning("%s %s refused: %s (%s)", self.request.method, self.request.path, value, fault)
            return
        log.error(
            "Uncaught exception %s %s", self.request.method, self.request.uri, exc_info=value
        )  # its traceback is tb (tornado passes sys.exc_info())


def to_api_error(exc: BaseException | None, status_code: int = 500) -> ApiError:
    """Map any exception to the spec's error rows; a 500 never carries the exception text."""
    if isinstance(exc, ApiError):
        return exc
    fault = storage_fault(exc)
    if fault == "busy":
        return DatabaseBusy()
    if fault is not None:
        return InsufficientStorage()
    if isinstance(exc, OverflowError):  # an integer SQLite cannot hold (beyond 64 bits) reached a query
        return BadRequest("Numeric value out of range")
    if isinstance(exc, tornado.web.HTTPError):
        status_code = exc.status_code
    if status_code == 405:
        return MethodNotAllowed()
    if status_code == 404:
        return NotFound()
    if status_code == 413:
        return PayloadTooLarge()
    if 400 <= status_code < 500:
        return ApiError(getattr(exc, "log_message", None) or "Bad request", status_code)
    return ApiError("Internal server error", 500)
