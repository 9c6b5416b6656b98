"""Which error statuses each operation lists: the ones its handler can answer, not one list for all.

`build_document` writes the common error rows; `fix_statuses` then drops what an operation never sends
(an SSE stream answers every error as an `error` frame of a 200; a 404 needs something to look up) and
adds what only some operations send (409 conflicts, 507 on writes, login's 401). The suite checks the
result against the statuses the handlers really answered (web.inputs.statuses, tests/conftest.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from platform_server.json_types import JsonObject

if TYPE_CHECKING:
    from platform_server.web.base import ApiHandler

_WRITES = ("POST", "PUT", "PATCH", "DELETE")

# (method, path template) -> why the operation answers 409
# cron.service.update_conversation
_STORED_MODE = "conversationId given while the stored conversationMode is new, or missing while it is fixed (or fixed is given and no id is stored)"
CONFLICTS: dict[tuple[str, str], str] = {
    ("POST", "/api/v1/cron-jobs/{id}/run"): "This job already has a running run",
    ("POST", "/api/v1/memory/{agentId}/summarize/{conversationId}"): "The conversation is with another agent, or it has no messages",
    ("POST", "/api/v1/memory/{agentId}/dreaming/focused"): "A dream is already running for this memory",
    ("POST", "/api/v1/memory/{agentId}/emergence"): "A dream is already running for this memory",
    ("POST", "/api/v1/memory/{agentId}/facts/{factId}/edit"): "The fact is not active (forgotten)",
    ("POST", "/api/v1/memory/{agentId}/facts/contradictions/{contradictionId}/resolve"): "The contradiction is already resolved",
    ("PUT", "/api/v1/cron-jobs/{id}"): _STORED_MODE,
    (
        "PUT",
        "/api/v1/triggers/{id}",
    ): f"{_STORED_MODE}; or a patternType other than the console's four that is not the stored pattern sent back unchanged;"
    " or, with no type given, another kind's fields than the stored type's (or a switch of type without the new kind's "
    "expression or event type)",
    ("PUT", "/api/v1/channels/{id}"): "What the channel's stored type refuses: its platform's settings (as on create), a "
    "reply URL that is not http(s), a token rotation of a channel that is not a webchat",
    ("POST", "/api/v1/skills"): "A skill of that name exists in the workspace",
    ("PUT", "/api/v1/skills/{id}"): "A skill of that name exists in the workspace, or a built-in skill is renamed",
    ("POST", "/api/v1/skills/synthesize-from-conversation"): "A skill of that name exists in the workspace",
    ("POST", "/api/v1/skill-templates/{id}/instantiate"): "A skill of that name exists in the workspace",
    ("POST", "/api/v1/skills/install/upload"): "A skill of that name exists (install with overwrite=true), or it is not an installed one",
    ("POST", "/api/v1/skills/routines/{id}/dismiss"): "The candidate is not in a state that allows it",
    ("POST", "/api/v1/skills/routines/{id}/reopen"): "The candidate is not in a state that allows it",
    ("POST", "/api/v1/skills/routines/{id}/promote"): "The candidate is not open, or a skill of that name exists",
    ("DELETE", "/api/v1/teams/{teamId}"): "The team has an active run",
    ("PUT", "/api/v1/teams/{teamId}"): "The stored lead or members (the ones the body does not give) leave no member besides the lead",
    ("POST", "/api/v1/teams/{teamId}/members"): "The agent is the team's lead (to add as a member), or the team has its most members",
    ("DELETE", "/api/v1/teams/{teamId}/members/{agentId}"): "The agent is the team's lead (make another agent lead first)",
    ("POST", "/api/v1/team-runs/{runId}/cancel"): "The run has already ended",
    ("POST", "/api/v1/auth/users/{id}/disable"): "The last enabled global admin cannot be disabled, nor your own account",
    ("PUT", "/api/v1/auth/users/{id}/role"): "The last enabled global admin cannot lose the role",
    ("POST", "/api/v1/workflows/{id}/runs"): "The workflow is disabled or has no published revision",
    ("POST", "/api/v1/wiki/knowledge-bases/{id}/scan"): "No source directory is linked to the knowledge base",
    # the wiki's stored state decides (a page's pending change, a material's or a run's status, a slug taken)
    **{
        ("POST", f"/api/v1/wiki/knowledge-bases/{{kbId}}/pages/{{slug}}/pending-change/{op}"): "The page has no pending change"
        for op in ("accept", "dismiss")
    },
    ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/pages/{slug}/rename"): "A page with the new slug exists",
    ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/raw/{rawId}/cancel"): "The material is not processing",
    ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/raw/{rawId}/reprocess"): "The material is processing",
    ("POST", "/api/v1/wiki/transformations/{id}/apply"): "The transformation belongs to another knowledge base, or the target holds no text",
    ("POST", "/api/v1/wiki/transformations/{id}/aggregate"): "No completed run of the transformation in the knowledge base",
    ("POST", "/api/v1/wiki/transformations/runs/{runId}/cancel"): "The run is not running",
    ("POST", "/api/v1/wiki/transformations/runs/{runId}/save-as-page"): "The run has not completed with an output",
    ("POST", "/api/v1/wiki/knowledge-bases/{id}/source-watcher/scan"): "No source directory is linked to the knowledge base",
    ("POST", "/api/v1/workflows/{id}/publish"): "The saved draft does not compile (its diagnostics: POST .../compile)",
    ("POST", "/api/v1/workflows/runs/{runId}/resume"): "The run is not paused, or the pauseToken is not its current pause",
    ("POST", "/api/v1/auth/users"): "The username is taken",
    ("POST", "/api/v1/security/guard/rules"): "A rule with that ruleId exists",
    ("PUT", "/api/v1/security/guard/rules/{ruleId}"): "The rule is a built-in one (toggle it instead), or ruleId names another",
    ("DELETE", "/api/v1/security/guard/rules/{ruleId}"): "The rule is a built-in one (disable it instead)",
    ("DELETE", "/api/v1/security/guard/rules/by-id/{id}"): "The rule is a built-in one (disable it instead)",
    ("DELETE", "/api/v1/workspaces/{id}"): "The default workspace cannot be deleted",
    ("POST", "/api/v1/workspaces/{id}/members"): "The user is already a member of this workspace",
    ("PUT", "/api/v1/workspaces/{id}/members/{targetUserId}"): "The last owner cannot be demoted",
    ("DELETE", "/api/v1/workspaces/{id}/members/{targetUserId}"): "The last owner cannot be removed",
    ("DELETE", "/api/v1/skills/install/{skillName}"): "The skill is not an installed one (delete it instead)",
    ("POST", "/api/v1/skills/{id}/restore"): "The skill is not archived",
    ("POST", "/api/v1/skills/{skillId}/secrets"): "The skill holds its most secrets already (a new key)",
    ("PUT", "/api/v1/models/{providerId}/config"): "What the provider is refuses it: a built-in's protocol, a baseUrl of the "
    "wrong kind for its protocol (a URL for remote ones, a path for local), Ollama settings for another protocol",
    **{
        (method, "/api/v1/agents/{agentId}/workspace/files/{path}"): "What the folder holds is in the way (a folder where a file "
        "is asked for, a file where a folder is, a folder that is not empty)"
        for method in ("GET", "PUT", "DELETE")
    },
    ("POST", "/api/v1/models/{id}/default"): "The model or its provider is disabled",
    ("POST", "/api/v1/models/embedding/default"): "The model is no embedding model, or it or its provider is disabled",
    ("PUT", "/api/v1/models/active"): "The model or its provider is disabled",
    ("GET", "/api/v1/skills/{id}/files/{path}"): "The bundle file is not UTF-8 text",
    ("PUT", "/api/v1/plugins/{name}/config"): "The plugin's configSchema (GET /plugins/{name}) declares no such key, or refuses "
    "the value, or a masked secret has no stored value to keep",
    ("PUT", "/api/v1/skills/{id}/files/{path}"): "Another bundle file is in the way (a file where a folder is, or the reverse)",
    ("POST", "/api/v1/approval/grants"): "expireAt has passed by the time the request arrives",
    ("PUT", "/api/v1/memory/{agentId}/files/{path}"): "MEMORY.md is rebuilt from the facts (edit the facts instead)",
    ("POST", "/api/v1/datasources"): "A datasource of that name exists in the workspace",
    ("PUT", "/api/v1/datasources/{id}"): "A datasource of that name exists in the workspace, or config is the other type's",
    ("POST", "/api/v1/auth/tokens"): "expiresAt is not in the future (the clock decides, not the request's shape)",
    ("POST", "/api/v1/goals"): "The conversation already has an open goal",
    ("PUT", "/api/v1/conversations/{conversationId}/messages/{messageId}/rating"): "The message is not an assistant answer",
    # goals.service._require: the goal's stored status decides
    ("PATCH", "/api/v1/goals/{id}"): "The goal is closed (completed, abandoned or exhausted)",
    ("POST", "/api/v1/goals/{id}/abandon"): "The goal is closed (completed, abandoned or exhausted)",
    ("POST", "/api/v1/goals/{id}/criteria"): "The goal is not active, or it has 50 criteria already",
    ("POST", "/api/v1/goals/{id}/pause"): "The goal is not active",
    ("POST", "/api/v1/goals/{id}/resume"): "The goal is not paused",
    ("DELETE", "/api/v1/tools/{id}"): "System tools cannot be deleted",
    ("POST", "/api/v1/models"): "The provider already has a model of that name and type",
    ("POST", "/api/v1/models/{providerId}/models"): "The provider already has a model of that name and type",
    ("POST", "/api/v1/models/custom-providers"): "A provider with that id exists",
    ("DELETE", "/api/v1/models/custom-providers"): "The provider is a built-in one (disable it instead)",
    ("DELETE", "/api/v1/models/custom-providers/{providerId}"): "The provider is a built-in one (disable it instead)",
    # The server's configuration, not the request, is what is missing: the same request succeeds once it is set
    **{
        (method, f"/api/v1/oauth/vendor_b/{op}"): "vendor_b OAuth is not configured on this server"
        for method, op in (("GET", "authorize"), ("POST", "device/start"), ("POST", "refresh"))
    },
}
# (method, path template) -> a 409 asking for a second confirmation, in the Confirmation shape (as `confirms` routes)
CONFIRMATIONS: dict[tuple[str, str], str] = {
    ("DELETE", "/api/v1/mcp/servers/{id}"): "Agents use the server's tools: delete again with force=true",
}
# (method, path template) -> why a request the document allows can still be unprocessable (422, errors.Unprocessable)
_NO_DATE = "The cron expression matches the pattern but names no date (31 2: February 31)"
_BUNDLE_KEYS = (
    "A `files` key is not a bundle path (relative, names without control characters, not SKILL.md nor LESSONS.md, no"
    " file where another key makes a folder): OpenAPI 3.0 has no rule on an object's keys (propertyNames is 3.1)"
)
UNPROCESSABLE: dict[tuple[str, str], str] = {
    ("POST", "/api/v1/skills"): _BUNDLE_KEYS,
    ("PUT", "/api/v1/skills/{id}"): _BUNDLE_KEYS,
    ("POST", "/api/v1/cron-jobs"): _NO_DATE,
    ("PUT", "/api/v1/cron-jobs/{id}"): _NO_DATE,
    ("POST", "/api/v1/triggers"): _NO_DATE,
    ("PUT", "/api/v1/triggers/{id}"): _NO_DATE,
    **{
        (method, path): "memberAgentIds names no agent besides leadAgentId: OpenAPI 3.0 cannot relate an array's items to another field"
        for method, path in (("POST", "/api/v1/teams"), ("PUT", "/api/v1/teams/{teamId}"))
    },
    ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/pages/{slug}/rename"): (
        "The new slug (newSlug, or newTitle when no newSlug is given) holds no letter or digit of any script: OpenAPI 3.0's"
        " patterns cannot name every script's letters"
    ),
    ("PUT", "/api/v1/wiki/knowledge-bases/{id}/config"): "chunkOverlap is not under half of chunkSize (either may be the stored one)",
    ("POST", "/api/v1/wiki/knowledge-bases/{kbId}/pipelines"): (
        "The definition does not hold together (extract first, each step once and after the one it needs, chunk with"
        " embed, an overlap under half the size, a transformation of this KB, YAML text that is a definition): every"
        " error is listed, as POST .../pipelines/validate lists them"
    ),
}
# (method, path template) -> why a public operation answers 401 all the same
UNAUTHORIZED: dict[tuple[str, str], str] = {
    ("POST", "/api/v1/auth/login"): "Invalid username or password, or the user is disabled",
    ("GET", "/api/v1/channels/webhook/im_f"): "The URL check's signature does not verify, or no such channel",
    **{
        ("POST", f"/api/v1/channels/webhook/{t}"): "The call's signature does not verify, or no such channel"
        for t in ("im_a", "im_b", "im_c", "im_d", "im_e", "im_f", "im_g", "im_h")
    },
}
# (method, path template) of operations without a path parameter that still answer 404 (an id in the query or body)
NOT_FOUND: set[tuple[str, str]] = {
    ("GET", "/api/v1/channels/webchat/config"),  # the `token` names a webchat channel
    ("POST", "/api/v1/skills/curator/adopt"),  # the body is an array of skill ids
    ("POST", "/api/v1/skills/curator/release"),
    ("PUT", "/api/v1/models/active"),  # the body names a provider and a model
    ("POST", "/api/v1/security/guard/rules/import"),  # an entry's ruleId may name a built-in rule that is not there
    ("POST", "/api/v1/datasources"),  # a SQLite datasource's config.path names a file
    ("POST", "/api/v1/oauth/vendor_b/callback-paste"),  # the state names a sign-in in progress
    ("GET", "/api/v1/cron-jobs/preview"),  # the timezone names a zone of the zone database
}


def _names_a_resource(handler: type[ApiHandler], method: str, op: JsonObject) -> bool:
    """Whether the operation names something that may not exist: a path parameter, or an id in query or body."""
    params = op.get("parameters")
    for p in params if isinstance(params, list) else []:
        if isinstance(p, dict) and (p.get("in") == "path" or str(p.get("name", "")).lower().endswith(("id", "ids", "slug"))):
            return True
    model = handler.body_models.get(method)
    return model is not None and any(name.lower().endswith(("id", "ids")) for name in model.model_fields)


def _error(description: str) -> JsonObject:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def fix_statuses(handler: type[ApiHandler], template: str, method: str, op: JsonObject) -> None:
    """Make `op["responses"]` the statuses this operation can answer."""
    responses = op["responses"]
    assert isinstance(responses, dict)  # build_document writes a map
    key = (method, template)
    if method in handler.sse_methods:  # every error is an `error` frame of the 200 stream (ApiHandler._write_error_body)
        for code in [c for c in responses if c != "200"]:
            del responses[code]
        return
    if "404" in responses and not _names_a_resource(handler, method, op) and key not in NOT_FOUND:
        del responses["404"]
    if key in UNAUTHORIZED:
        responses["401"] = _error(UNAUTHORIZED[key])
    if key in CONFIRMATIONS:
        responses["409"] = {
            "description": CONFIRMATIONS[key],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Confirmation"}}},
        }
    if key in CONFLICTS and "409" not in responses:
        responses["409"] = _error(CONFLICTS[key])
    if method == "POST":  # with an Idempotency-Key (ApiHandler._idempotent_post)
        if "409" not in responses:
            responses["409"] = _error("A request with this Idempotency-Key is still being processed")
        responses["422"] = _error("This Idempotency-Key was used with a different request body")
    if key in UNPROCESSABLE:
        reused = "; or this Idempotency-Key was used with a different request body" if method == "POST" else ""
        responses["422"] = _error(UNPROCESSABLE[key] + reused)
    if method in _WRITES and "507" not in responses:
        responses["507"] = _error("Out of storage: the server is read-only until space is freed; nothing was saved")
