"""The inputs of an operation that no request model carries: hand-written bodies, query tokens, toggles.

`build_document` calls `add_inputs` for every operation after it wrote the declared ones, so these are
stated once here instead of in every handler; `tests/test_openapi_inputs.py` holds the result to what
the handlers read (web.inputs).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from platform_server.idempotency import MAX_KEY_LENGTH
from platform_server.ids import CONVERSATION_ID_PATTERN, QUERY_NOT_BLANK_PATTERN
from platform_server.json_types import JsonObject
from platform_server.web.bodies import INT64_MAX
from platform_server.web.errors import BadRequest

if TYPE_CHECKING:
    from platform_server.web.base import ApiHandler

_TOKEN = {
    "name": "token",
    "in": "query",
    "required": False,
    "description": "The bearer token, for clients that cannot set a header (EventSource)",
    "schema": {"type": "string"},
}
_ENABLED = {
    "name": "enabled",
    "in": "query",
    "required": False,
    "description": "Stands in for the body's `enabled` when the body is empty (the original console sends it so)",
    "schema": {"type": "boolean"},
}


_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Run this POST once per key: a retry gets the first answer again (409 while the first still runs, "
    "422 when the key came with another body)",
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": "^[ -~]+$"},
}


def upload(description: str, **fields: JsonObject) -> JsonObject:
    """A multipart/form-data body with a binary `file` (and the given extra form fields)."""
    props: JsonObject = {"file": {"type": "string", "format": "binary", "description": description}}
    props.update(fields)
    schema = {"type": "object", "required": ["file"], "properties": props}
    return {"required": True, "content": {"multipart/form-data": {"schema": schema}}}


def free_json(description: str) -> JsonObject:
    """A JSON object body whose shape the service checks itself (documented in prose)."""
    return {"required": True, "content": {"application/json": {"schema": {"type": "object", "description": description}}}}


def add_inputs(handler: type[ApiHandler], template: str, method: str, op: JsonObject) -> None:
    """Add to `op` the inputs the handler reads beyond its `body_models` and `query_params`."""
    params = op["parameters"]
    assert isinstance(params, list)  # build_document writes a list
    names = {p["name"] for p in params if isinstance(p, dict) and p.get("in") == "query"}
    extra = list(PARAMS.get((method, template), []))
    if handler.query_token:
        extra.append(_TOKEN)
    custom = getattr(handler, "openapi_responses", {})  # a door answering in a client's own shape lists its own
    if method == "POST" and method not in handler.sse_methods and method not in custom:  # ApiHandler.check_request
        extra.append(_IDEMPOTENCY_KEY)
    model = handler.body_models.get(method)
    if model is not None and set(model.model_fields) == {"enabled"}:
        extra.append(_ENABLED)  # ApiHandler.toggle_body: an empty body with ?enabled= is accepted
        body = op.get("requestBody")
        if isinstance(body, dict):
            body["required"] = False
    for param in extra:
        if param["in"] == "query" and param["name"] in names:  # restated here with the limits the server checks
            params[:] = [p for p in params if not (isinstance(p, dict) and p.get("in") == "query" and p.get("name") == param["name"])]
        names.add(str(param["name"]))
        params.append(dict(param))
    if (method, template) in BODIES and "requestBody" not in op:
        op["requestBody"] = BODIES[(method, template)]
    body = op.get("requestBody")
    if (method, template) in OPTIONAL_BODY and isinstance(body, dict):
        body["required"] = False
    if (method, template) in MORE_CONTENT and isinstance(body, dict) and isinstance(body.get("content"), dict):
        body["content"] = {**body["content"], **MORE_CONTENT[(method, template)]}


def documented(declared: Mapping[str, Sequence[Mapping[str, object]]], method: str, template: str, name: str) -> JsonObject | None:
    """The schema the document states for a query parameter (PARAMS restate a handler's `query_params` with their
    limits), or None."""
    params = [*PARAMS.get((method, template), []), *declared.get(method, [])]
    found = next((p for p in params if p.get("in") == "query" and p.get("name") == name), None)
    schema = found.get("schema") if found else None
    return schema if isinstance(schema, dict) else None


def takes_empty(schema: JsonObject | None) -> bool:
    """Whether an empty query value is valid for its documented schema (`documented`), so the server reads it as
    absent: a string with no minimum length whose pattern (if any) matches it. An undocumented parameter keeps the old
    reading: absent."""
    if schema is None:
        return True
    pattern = schema.get("pattern")
    return schema.get("type") == "string" and not schema.get("minLength") and (not isinstance(pattern, str) or re.search(pattern, "") is not None)


def as_documented(name: str, raw: str, schema: JsonObject | None) -> str:
    """A query value as sent, when its documented schema has no pattern or it matches the pattern (fullmatch: a
    validator reads the closing `$` as the end); else the 400 naming it. A Long stated as `^[0-9]{0,18}$` took
    `-1`, ` 5` or 19 digits, which the document refuses."""
    pattern = schema.get("pattern") if schema else None
    if isinstance(pattern, str) and not re.fullmatch(pattern, raw):
        raise BadRequest(f"Invalid value for parameter '{name}': must match {pattern}")
    return raw


def _q(name: str, schema: JsonObject, description: str = "", required: bool = False) -> JsonObject:
    param: JsonObject = {"name": name, "in": "query", "required": required, "schema": schema}
    if description:
        param["description"] = description
    return param


_LONG: JsonObject = {"type": "string", "pattern": "^[0-9]{1,18}$"}  # a Long, as web.base.parse_long reads it
_STR: JsonObject = {"type": "string"}
_TEXT: JsonObject = {"type": "string", "minLength": 1, "pattern": QUERY_NOT_BLANK_PATTERN}  # blank is refused, as the server reads it
_DAY: JsonObject = {"type": "string", "format": "date"}  # RFC 3339 full-date (usage.handlers reads exactly that)
_BOOL: JsonObject = {"type": "boolean"}
# web.pagination.page_request: below 1 (or empty) is a 400, a size above the maximum is clamped
_PAGE = [
    _q("page", {"type": "integer", "minimum": 1}, "Page number from 1"),
    _q("size", {"type": "integer", "minimum": 1}, "Page size from 1 (clamped to the maximum)"),
]
_OPT_LONG: JsonObject = {"type": "string", "pattern": "^[0-9]{0,18}$"}  # an optional Long: empty means absent


def _range(name: str, low: int, high: int, description: str = "") -> JsonObject:
    return _q(name, {"type": "integer", "minimum": low, "maximum": high}, description)


# (method, path template) -> query (and header) parameters read by handlers that declare none or only some of them
PARAMS: dict[tuple[str, str], list[JsonObject]] = {
    ("PUT", "/api/v1/auth/users/{id}/password"): [
        _q("oldPassword", {"type": "string", "minLength": 1}, "The current password", required=True),
        _q("newPassword", {"type": "string", "minLength": 8}, "The new password (8 characters or more)", required=True),
    ],
    # guard.views.FEED_KINDS
    ("GET", "/api/v1/activity/feed"): [
        *_PAGE,
        _q("source", {"type": "string", "enum": ["audit", "approval", "tool_call"]}, "The original console's name for `kind`"),
    ],
    ("GET", "/api/v1/wiki/knowledge-bases/bindable"): [_q("agentId", _OPT_LONG, "Mark the KBs this agent is bound to")],
    ("GET", "/api/v1/models/by-type"): [
        _q("type", {"type": "string", "enum": ["chat", "embedding"]}, "Model type (default chat)"),
        _q("modelType", {"type": "string", "enum": ["chat", "embedding"]}, "Same as `type`"),
        _q(
            "modality",
            {"type": "string", "enum": ["text", "image", "vision", "video", "audio"]},
            "An input modality the model must accept (`vision` means `image`; no model takes video or audio: [])",
        ),
    ],
    ("GET", "/api/v1/content-items"): _PAGE,
    ("GET", "/api/v1/dashboard/cron-runs"): [*_PAGE, _range("limit", 1, 100, "The latest runs, unpaged (without page and size)")],
    ("GET", "/api/v1/dashboard/cron-runs/{cronJobId}"): [*_PAGE, _range("limit", 1, 100, "The latest runs, unpaged")],
    ("GET", "/api/v1/token-usage"): [
        _q("startDate", _DAY, "A whole first day, YYYY-MM-DD (when `startTime` is absent)"),
        _q("endDate", _DAY, "A whole last day, YYYY-MM-DD (when `endTime` is absent)"),
    ],
    ("DELETE", "/api/v1/models/custom-providers"): [_q("providerId", _TEXT, "The custom provider to delete", required=True)],
    ("GET", "/api/v1/docs/content"): [_q("slug", _TEXT, "The document's slug", required=True)],
    ("GET", "/api/v1/skills/install/hub/search"): [_q("q", _STR, "Same as `keyword`")],
    ("GET", "/api/v1/wiki/kb/{kbId}/jobs"): [_range("limit", 1, 200, "How many (default 50)"), _q("rawId", _OPT_LONG, "Jobs of one raw document")],
    ("GET", "/api/v1/wiki/pages/lookup"): [
        _q("title", _STR, "A page title, any case (give it or `slug`: naming neither matches no page)"),
        _q("slug", _STR, "A page slug"),
    ],
    ("GET", "/api/v1/wiki/knowledge-bases/{kbId}/pages"): [
        *_PAGE,
        _q("pendingChange", {"type": "string", "enum": ["true", "false"]}, "Only pages with a pending change"),
        _q("rawId", _OPT_LONG, "Pages made from one raw document"),
        _q("pageType", _STR),
        _q("q", _STR, "Title or slug contains"),
    ],
    ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/process"): [_q("force", _BOOL, "Process documents already processed too")],
    ("POST", "/api/v1/models/{providerId}/models/test"): [_q("modelId", _STR, "The model, when the body names none")],
    ("DELETE", "/api/v1/models/{providerId}/models"): [
        _q("modelName", _STR, "The model to remove (give it or `modelId`: naming none finds none, a 404)"),
        _q("modelId", _STR, "Same as `modelName`, or the model's id (the original console sends it so)"),
    ],
    ("GET", "/api/v1/wiki/knowledge-bases/{kbId}/raw"): [_q("status", _STR, "Only documents in this state")],
    ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/raw/{rawId}/reprocess"): [_q("force", _BOOL, "Requeue even when running")],
    ("GET", "/api/v1/wiki/kb/{kbId}/pages/{slug}/related"): [_range("limit", 1, 50, "How many (default 10)")],
    ("GET", "/api/v1/security/guard/rules"): [
        _q("page", {"type": "integer", "minimum": 1}, "Paged when given"),
        _q("size", {"type": "integer", "minimum": 1}, "Page size (with page; at most 500)"),
    ],
    **{
        ("GET", path): _PAGE
        for path in (
            "/api/v1/approval/grants",
            "/api/v1/approval/resolutions",
            "/api/v1/audit/events",
            "/api/v1/security/approvals",
            "/api/v1/security/audit/logs",
            "/api/v1/skills",
        )
    },
    ("GET", "/api/v1/approval/resolutions"): [*_PAGE, _q("grantId", _OPT_LONG, "Resolutions under one grant")],
    ("GET", "/api/v1/security/audit/stats"): [_range("days", 1, 3650, "The last N days")],
    ("GET", "/api/v1/skills/curator/reports"): [_range("limit", 1, 100)],
    ("GET", "/api/v1/skills/curator/snapshots"): [_range("limit", 1, 100)],
    ("GET", "/api/v1/conversations/{conversationId}/team-runs/page"): [_q("limit", {"type": "integer", "minimum": 1})],
    ("GET", "/api/v1/teams/{teamId}/runs/page"): [_q("limit", {"type": "integer", "minimum": 1})],
    # read as a Long (web.errors.parse_long: 64 bits), at most 50 answered
    ("GET", "/api/v1/workflows/{id}/runs"): [_range("limit", 1, INT64_MAX, "How many (default 20, at most 50 answered)")],
    ("GET", "/api/v1/plans"): [_q("agentId", _LONG, "The agent", required=True)],
    ("GET", "/api/v1/skills/prompt-preview"): [_q("agentId", _LONG, "The agent", required=True)],
    ("GET", "/api/v1/skills/routines"): [_q("status", {"type": "string", "enum": ["open", "dismissed", "promoted"]})],
    ("GET", "/api/v1/wiki/knowledge-bases/{kbId}/pipelines/{id}/runs"): [_range("limit", 1, 500, "How many (default 100)")],
    ("GET", "/api/v1/wiki/transformations/runs"): [
        _q("transformationId", _OPT_LONG),
        _q("kbId", _OPT_LONG),
        _q("status", {"type": "string", "enum": ["running", "completed", "failed", "cancelled"]}),  # wiki.transform.RUN_STATES
    ],
    ("GET", "/api/v1/wiki/transformations"): [_q("kbId", _OPT_LONG, "Transformations of one KB")],
    ("DELETE", "/api/v1/mcp/servers/{id}"): [_q("force", _BOOL, "Delete even when agents use the server")],
    # skills.models.SKILL_TYPES
    ("GET", "/api/v1/skills"): [
        *_PAGE,
        _q("skillType", {"type": "string", "enum": ["builtin", "custom", "installed", "synthesized", "template"]}, "Same as `type`"),
    ],
    ("POST", "/api/v1/skills/curator/activate"): [
        _q("activate", _BOOL, "Stands in for the body's `active` when the body is empty (the original console sends it so)")
    ],
    ("POST", "/api/v1/mcp/serve"): [
        {
            "name": "X-Workspace-Id",
            "in": "header",
            "required": False,
            "description": "Serve one workspace only (default: every workspace of the caller)",
            "schema": _LONG,
        }
    ],
    ("GET", "/api/v1/teams/{teamId}/tasks/stats"): [_q("runId", _OPT_LONG, "Tasks of one run")],
    ("GET", "/api/v1/teams/{teamId}/tasks"): [
        _q("status", _STR, "Comma-separated task statuses"),
        _q("runId", _OPT_LONG, "Tasks of one run"),
        _q("limit", {"type": "integer", "minimum": 1, "maximum": 100}),
        _q("offset", {"type": "integer", "minimum": 0, "maximum": INT64_MAX}),  # a Long (query_long): a 400 beyond
    ],
}


def _zip_upload(description: str) -> JsonObject:
    """A ZIP archive: as a multipart `file` (its part typed application/zip), or as the body itself (any type but a form:
    the document names application/zip, so a generator sends a ZIP and a client knows the bytes must be one)."""
    body = upload(description)
    content = body["content"]
    assert isinstance(content, dict)  # upload() writes a content map
    form = content["multipart/form-data"]
    assert isinstance(form, dict)
    form["encoding"] = {"file": {"contentType": "application/zip"}}
    content["application/zip"] = {"schema": {"type": "string", "format": "binary", "description": description}}
    return body


# The content types a wiki material's part may name (wiki.text.TEXT_TYPES; source code goes by its file name)
WIKI_MATERIAL_TYPES = (
    "text/plain",
    "text/markdown",
    "text/csv",
    "text/html",
    "application/pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/epub+zip",
)


def _typed_upload(description: str, types: tuple[str, ...], **fields: JsonObject) -> JsonObject:
    """A multipart `file` whose part names one of `types`, so a client (or a fuzzer) sends a file of one of them."""
    body = upload(description, **fields)
    content = body["content"]
    assert isinstance(content, dict)  # upload() writes a content map
    form = content["multipart/form-data"]
    assert isinstance(form, dict)
    form["encoding"] = {"file": {"contentType": ", ".join(types)}}
    return body


def _skill_zip_upload() -> JsonObject:
    """A skill archive (install.read_zip): a ZIP holding one SKILL.md, at its root or one folder down, whose front
    matter has a `name:` (else the folder's name), as a multipart `file` or as the body itself. The part's and the
    body's media type say ZIP, so a client (or a fuzzer) knows to send one."""
    body = upload("The skill as a ZIP archive: one SKILL.md (front matter with `name:`) at its root or one folder down")
    content = body["content"]
    assert isinstance(content, dict)  # upload() writes a content map
    form = content["multipart/form-data"]
    assert isinstance(form, dict)
    form["encoding"] = {"file": {"contentType": "application/zip"}}
    content["application/zip"] = {"schema": {"type": "string", "format": "binary"}}
    return body


_WEBHOOK: JsonObject = {
    "required": True,
    "description": "The messaging platform's own event payload, verified with the channel's secret as the platform documents",
    "content": {"application/json": {"schema": {"type": "object"}}},
}
_SLACK_WEBHOOK: JsonObject = {
    "required": True,
    "description": _WEBHOOK["description"],
    "content": {
        "application/json": {"schema": {"type": "object"}},
        "application/x-www-form-urlencoded": {
            "schema": {"type": "object", "properties": {"payload": {"type": "string", "description": "Interactivity JSON"}}}
        },
    },
}
_CHANNEL_ID = _q("channelId", _LONG, "The channel this call is for", required=True)

# (method, path template) -> the request body of a handler that reads one without a body model
BODIES: dict[tuple[str, str], JsonObject] = {
    ("PUT", "/api/v1/agents/{agentId}/kbs"): {
        "required": True,
        "content": {"application/json": {"schema": {"type": "array", "maxItems": 200, "items": _LONG, "description": "Knowledge base ids to bind"}}},
    },
    ("POST", "/api/v1/skills/install/upload"): _skill_zip_upload(),
    ("POST", "/api/v1/agents/{agentId}/workspace/memory/import"): _zip_upload("A memory export (ZIP)"),
    ("POST", "/api/v1/agents/{agentId}/workspace/memory/import/preview"): _zip_upload("A memory export (ZIP)"),
    ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/raw/upload"): _typed_upload(
        "A material with some text: text, markdown, CSV, HTML, PDF, Word, PowerPoint, Excel, EPUB or source code, known by"
        " its file name's extension (.txt, .md, .csv, .html, .pdf, .docx, .pptx, .xlsx, .epub, .py, ...) or else by its"
        " part's content type",
        WIKI_MATERIAL_TYPES,
        title={"type": "string", "description": "Default: the file's name"},
    ),
    ("POST", "/api/v1/stt/transcribe"): upload("Audio", language={"type": "string", "description": "A language hint"}),
    ("POST", "/api/v1/chat/upload"): upload(
        "The attachment",  # the one conversationId rule (ids.CONVERSATION_ID_PATTERN), as every route that takes one
        conversationId={"type": "string", "pattern": CONVERSATION_ID_PATTERN, "description": "The conversation it belongs to (default: `default`)"},
    ),
    **{("POST", f"/api/v1/channels/webhook/{t}"): _WEBHOOK for t in ("im_a", "im_b", "im_c", "im_e", "im_f", "im_g", "im_h")},
    ("POST", "/api/v1/channels/webhook/im_d"): _SLACK_WEBHOOK,
    ("POST", "/api/v1/mcp/serve"): {
        "required": True,
        "description": "An MCP JSON-RPC message (streamable HTTP transport)",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["jsonrpc", "method"],
                    "properties": {
                        "jsonrpc": {"type": "string", "enum": ["2.0"]},
                        "id": {},
                        "method": {"type": "string"},
                        "params": {"type": "object"},
                    },
                }
            }
        },
    },
}
# (method, path template) of body-model operations that also take an empty body (a query parameter stands in)
OPTIONAL_BODY = {("POST", "/api/v1/skills/curator/activate")}
# (method, path template) -> media types a body-model operation also takes
MORE_CONTENT: dict[tuple[str, str], JsonObject] = {
    ("PUT", "/api/v1/agents/{agentId}/workspace/files/{path}"): {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary", "description": "The file's bytes"}}
    },
}
_WECOM = [  # the smart bot's signed callbacks (msg_signature over token, timestamp, nonce and the payload)
    _q("msg_signature", _STR, "The platform's signature", required=True),
    _q("timestamp", _STR, required=True),
    _q("nonce", _STR, required=True),
]
PARAMS[("GET", "/api/v1/channels/webhook/im_f")] = [
    _CHANNEL_ID,
    *_WECOM,
    _q("echostr", _STR, "The encrypted string the URL check echoes back decrypted", required=True),
]
PARAMS[("POST", "/api/v1/channels/webhook/im_f")] = [_CHANNEL_ID, *_WECOM]
for _t in ("im_a", "im_b", "im_c", "im_d", "im_e", "im_g", "im_h"):
    PARAMS[("POST", f"/api/v1/channels/webhook/{_t}")] = [_CHANNEL_ID]
