"""Inputs a new fuzz seed would find (audit of the channels, models, workflows, security, audit, chat, ... operations):
each test fails on the code before its fix."""

from __future__ import annotations

from typing import Any

from tests.helpers.chat import names
from tests.helpers.client import ApiClient


async def test_a_unicode_digit_is_no_id_anywhere_an_id_may_be_given_as_text(api: ApiClient, people: dict) -> None:
    """`'²'.isdigit()` is true and `int('²')` fails: each of these answered a 500."""
    r = await api.get("/api/v1/audit/events", params={"actor": "²"}, token="alice")  # a username, or a user id
    assert r.status == 200 and r.data["records"] == [], r.body
    r = await api.get("/api/v1/audit/events", params={"actor": str(people["alice"]["id"])}, token="alice")
    assert r.status == 200 and r.data["total"] >= 1, r.body  # an ASCII id still finds the user's events
    for kind in ("im_f", "im_a"):  # an unknown channel fails verification like a bad signature (never a 500)
        r = await api.request("POST", f"/api/v1/channels/webhook/{kind}", params={"channelId": "²"}, json_body={})
        assert 400 <= r.status < 500, (kind, r.status, r.body)
    r = await api.put("/api/v1/models/active", {"provider": "local", "modelName": "²"}, token="alice")
    assert r.status == 404, r.body
    wid = (await api.post("/api/v1/workflows", {"name": "Flow"}, token="alice")).data["id"]
    graph = {"nodes": [{"id": "start", "type": "start", "config": {}},
                       {"id": "a", "type": "agent", "config": {"agentId": "²", "message": "hi"}},
                       {"id": "end", "type": "end", "config": {}}],
             "edges": [{"from": "start", "to": "a"}, {"from": "a", "to": "end"}]}
    r = await api.post("/api/v1/workflows/draft/preview-compile", {"graph": graph}, token="alice")
    assert r.status == 200 and r.data["ok"] is False, r.body
    assert (await api.put(f"/api/v1/workflows/{wid}/draft", {"graph": graph}, token="alice")).status == 200


async def test_a_streams_last_event_id_is_the_stated_ascii_digits(api: ApiClient, people: dict) -> None:
    """lastEventId was any text in the document; the server read it with isdigit() (`'²'`: a 500 frame). The document
    now states the digits the server reads, and the server checks exactly that."""
    from tests.helpers.openapi_inputs import conforms

    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    body = {"agentId": "1", "message": "hi", "reconnect": True, "conversationId": "c1"}
    for value, valid in (("²", False), (" 1", False), ("12", True), ("", True)):
        assert conforms(doc, "ChatStreamRequest", {**body, "lastEventId": value}) is valid, value
        assert conforms(doc, "WebchatRequest", {"token": "t", "sessionId": "s", "lastEventId": value}) is valid, value
        events = await api.sse("POST", "/api/v1/chat/stream", {**body, "lastEventId": value}, token="alice")
        if valid:  # nothing runs in c1: the reconnect ends without an error
            assert "error" not in names(events), (value, events)
        else:
            assert names(events) == ["error"] and events[0].data["code"] == 400, (value, events)


async def test_every_toggle_takes_a_body_or_enabled_in_the_query_or_neither_which_flips(api: ApiClient, people: dict) -> None:
    """Seed 101: `PUT /feature-flags/{key}?enabled=true` (the query stated beside an optional body) and a tool toggle
    with no body at all (the document's body is optional) were 400s. Every toggle now reads `?enabled=` for an empty
    body and flips when neither is given, as the channel, skill, cron and datasource toggles did."""
    r = await api.put("/api/v1/feature-flags/workflows", params={"enabled": "false"}, token="alice")
    assert r.status == 200 and r.data["enabled"] is False, r.body
    r = await api.request("PUT", "/api/v1/feature-flags/workflows", token="alice")
    assert r.status == 200 and r.data["enabled"] is True, r.body
    tools = (await api.get("/api/v1/tools", token="alice")).data
    tid = next(t["id"] for t in tools if t["name"] == "read_file")
    r = await api.request("PUT", f"/api/v1/tools/{tid}/toggle", token="alice")
    assert r.status == 200 and r.data["enabled"] is False, r.body
    r = await api.put(f"/api/v1/tools/{tid}/toggle", {}, token="alice")
    assert r.status == 200 and r.data["enabled"] is True, r.body
    r = await api.put(f"/api/v1/tools/{tid}/toggle", params={"enabled": "false"}, token="alice")
    assert r.status == 200 and r.data["enabled"] is False, r.body
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    for path in ("/api/v1/feature-flags/{flagKey}", "/api/v1/tools/{id}/toggle", "/api/v1/mcp/servers/{id}/toggle",
                 "/api/v1/acp/endpoints/{id}/toggle"):
        op = doc["paths"][path]["put"]
        assert op["requestBody"]["required"] is False and "enabled" in {p["name"] for p in op["parameters"]}, path


async def test_an_enum_query_value_is_one_of_the_enum_as_sent(api: ApiClient, people: dict) -> None:
    """Seed 101: `GET /dashboard/cron-runs?status=` (none of the enum) was a 200; Tornado's reading trimmed spaces, so
    `status= pending` was taken too. An enum parameter is now one of its values exactly."""
    for path, name, value in (
        ("/api/v1/dashboard/cron-runs", "status", "running"),
        ("/api/v1/security/approvals", "status", "pending"),
        ("/api/v1/activity/feed", "kind", "audit"),
        ("/api/v1/activity/feed", "source", "audit"),
        ("/api/v1/token-usage", "groupBy", "model"),
        ("/api/v1/models/by-type", "type", "chat"),
        ("/api/v1/models/by-type", "modelType", "chat"),
        ("/api/v1/models/by-type", "modality", "text"),
    ):
        for bad in ("", " ", f" {value}", f"{value} ", f"{value}\x00"):
            r = await api.get(path, params={name: bad}, token="alice")
            assert r.status == 400 and r.msg.startswith(f"{name}: must be one of"), (path, name, bad, r.body)
        assert (await api.get(path, params={name: value}, token="alice")).status == 200, (path, name)
    # a stated limit is checked beside a page too (it was ignored there, a limit of 0 included)
    r = await api.get("/api/v1/dashboard/cron-runs", params={"limit": "0", "page": "1"}, token="alice")
    assert r.status == 400 and r.msg.startswith("limit:"), r.body


async def test_a_query_long_is_read_as_its_documented_pattern_and_range(api: ApiClient, people: dict) -> None:
    """`grantId` is stated as `^[0-9]{0,18}$`: the server took `-1`, ` 5` and 19 digits; a workflow's runs `limit` was
    an integer without a maximum, and 20 digits were refused; a feed page past 64 bits was a 400 from SQLite."""
    for bad in ("-1", " 5", "5 ", "1234567890123456789"):
        r = await api.get("/api/v1/approval/resolutions", params={"grantId": bad}, token="alice")
        assert r.status == 400 and "grantId" in r.msg, (bad, r.body)
    for good in ("", "5"):
        assert (await api.get("/api/v1/approval/resolutions", params={"grantId": good}, token="alice")).status == 200
    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    (limit,) = [p for p in doc["paths"]["/api/v1/workflows/{id}/runs"]["get"]["parameters"] if p["name"] == "limit"]
    assert limit["schema"]["maximum"] == 2**63 - 1
    wid = (await api.post("/api/v1/workflows", {"name": "Flow"}, token="alice")).data["id"]
    assert (await api.get(f"/api/v1/workflows/{wid}/runs", params={"limit": str(2**63 - 1)}, token="alice")).status == 200
    r = await api.get("/api/v1/activity/feed", params={"page": "99999999999999999999"}, token="alice")
    assert r.status == 200 and r.data["records"] == [] and r.data["total"] >= 1, r.body


async def test_a_rule_import_states_and_checks_its_integers_as_int64(api: ApiClient, people: dict) -> None:
    """Seed 101: an import entry's `id` of 2**63 (the document says int64) was taken."""
    rule = {"ruleId": "alice", "name": "0", "toolName": "*", "severity": "low"}
    r = await api.post("/api/v1/security/guard/rules/import", {"rules": [{**rule, "id": 2**63}]}, params={"dryRun": "true"}, token="alice")
    assert r.status == 400 and r.msg.startswith("rules.0.id"), r.body
    r = await api.post("/api/v1/security/guard/rules/import", {"rules": [{**rule, "id": 2**63 - 1}]}, params={"dryRun": "true"}, token="alice")
    assert r.status == 200, r.body


async def test_a_required_query_text_is_blank_as_the_server_reads_it(api: ApiClient, people: dict) -> None:
    """`\\S` let `%00` or `%1c` through as a non-blank value; Tornado reads control characters as spaces, so the server
    found it blank (a 400 for valid input). The document's pattern now counts them as the server does, both ways."""
    import re

    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    for path, method, name in (("/api/v1/models/custom-providers", "delete", "providerId"), ("/api/v1/docs/content", "get", "slug")):
        (param,) = [p for p in doc["paths"][path][method]["parameters"] if p["name"] == name]
        for value in ("\x00", "\x1c", " \x01 ", "\ufeff", "x", " x\x00"):
            valid = re.search(param["schema"]["pattern"], value) is not None
            r = await api.request(method.upper(), path, params={name: value}, token="alice")
            assert (r.status != 400) == valid, (path, repr(value), r.body)


async def test_a_grants_scope_id_is_blank_as_both_readings_count_it_and_an_unknown_rule_is_a_404(api: ApiClient, people: dict) -> None:
    """`^\\s*\\S` (ECMA's spaces) took U+001C as a scope id, which Python's strip() found blank: a 400 for valid input.
    A grant's `ruleId` naming no stored rule is what is stored, like its scope: 404, not 400."""
    from tests.helpers.openapi_inputs import conforms

    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    base = {"scopeType": "USER", "maxSeverity": "low", "grantKind": "ALWAYS", "toolName": "read_file"}
    for scope in ("\x1c", " ", "\ufeff", "\x1c5"):
        body = {**base, "scopeId": scope}
        r = await api.post("/api/v1/approval/grants", body, token="alice")
        assert (r.status == 400) == (not conforms(doc, "GrantBody", body)), (repr(scope), r.body)
        assert r.status in (400, 404), r.body
    me = str(people["alice"]["id"])
    r = await api.post("/api/v1/approval/grants", {**base, "scopeId": f" {me} "}, token="alice")
    assert r.status == 200 and r.data["scopeId"] == me, r.body
    r = await api.post("/api/v1/approval/grants", {**base, "scopeId": me, "ruleId": "no-such-rule"}, token="alice")
    assert r.status == 404 and r.msg.startswith("ruleId:"), r.body


ECMA_SPACES = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"


def ecma(pattern: str) -> str:
    """A document pattern as an ECMA validator (schemathesis, a generated client) reads it: `\\s` is ECMA's spaces."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            pair = pattern[i : i + 2]
            out.append({"\\s": ECMA_SPACES if in_class else f"[{ECMA_SPACES}]", "\\S": f"[^{ECMA_SPACES}]"}.get(pair, pair))
            i += 2
            continue
        in_class = {"[": True, "]": False}.get(pattern[i], in_class)
        out.append(pattern[i])
        i += 1
    return "".join(out)


def patterns_in(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [node["pattern"]] if isinstance(node.get("pattern"), str) else [p for v in node.values() for p in patterns_in(v)]
    return [p for v in node for p in patterns_in(v)] if isinstance(node, list) else []


async def test_spaces_in_a_stated_pattern_are_the_ones_the_server_strips(api: ApiClient, people: dict) -> None:
    """`\\s` means ECMA's spaces to a validator, Python's to strip() and Unicode's to pydantic: a cron job's agentId
    `\\ufeff<id>` (a space to ECMA, not to strip()) was valid to the document and no Long to the server, and a file
    guard glob of U+0085 was valid to the document and blank to the server. The patterns now name the spaces."""
    import re

    schemas: dict[str, Any] = (await api.get("/v3/api-docs")).body["components"]["schemas"]
    (long_text,) = patterns_in(schemas["CronJobCreate"]["properties"]["agentId"])
    (glob,) = patterns_in(schemas["FileGuardBody"]["properties"]["patterns"])
    agent_id = (await api.post("/api/v1/agents", {"name": "Digest", "agentType": "react"}, token="alice")).data["id"]
    job = {"name": "Digest", "cronExpression": "*/5 * * * *", "message": "Write"}
    for text in (f"\ufeff{agent_id}", f"\x1c{agent_id}\u3000", f" {agent_id}\n"):
        r = await api.post("/api/v1/cron-jobs", {**job, "agentId": text}, token="alice")
        assert (r.status == 200) == bool(re.search(ecma(long_text), text)), (repr(text), r.body)
    for value in ("\x85", "\ufeff", "\u00a0*.env", "a\x1f", "*.env"):
        r = await api.put("/api/v1/security/guard/config/file-guard", {"patterns": [value]}, token="alice")
        assert (r.status == 200) == bool(re.search(ecma(glob), value)), (repr(value), r.body)


async def test_an_id_given_as_text_is_a_long_of_at_most_18_digits(api: ApiClient, people: dict) -> None:
    """`^[0-9]{1,19}$` took 9999999999999999999, past 64 bits: the database refused it (400 for valid input)."""
    from tests.helpers.openapi_inputs import conforms

    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    agent_id = (await api.post("/api/v1/agents", {"name": "Bot", "agentType": "react"}, token="alice")).data["id"]
    for digits, status in (("9" * 19, 400), (agent_id, 200)):
        body = {"name": "Bot", "channelType": "webchat", "agentId": digits}
        r = await api.post("/api/v1/channels", body, token="alice")
        assert r.status == status and conforms(doc, "ChannelCreate", body) == (status == 200), (digits, r.body)
    assert not conforms(doc, "ChannelUpdate", {"agentId": "9" * 19})
    assert not conforms(doc, "McpToolCreate", {"serverId": "9" * 19, "name": "x", "toolName": "x"})


async def test_a_body_of_spaces_is_no_json(api: ApiClient, people: dict) -> None:
    """Seed 404: `PUT /security/guard/rules/{ruleId}` with the body `\\n` (no JSON text) was read as {} and saved; a
    toggle took it as no body. No body is still {} where the body is optional."""
    rule = {"ruleId": "r1", "name": "R", "toolName": "*", "severity": "low"}
    assert (await api.post("/api/v1/security/guard/rules", rule, token="alice")).status == 200
    tid = next(t["id"] for t in (await api.get("/api/v1/tools", token="alice")).data if t["name"] == "read_file")
    for method, path, params in (("PUT", "/api/v1/security/guard/rules/r1", None), ("PUT", f"/api/v1/tools/{tid}/toggle", {"enabled": "true"})):
        r = await api.request(method, path, data=b"\n", params=params, token="alice", headers={"Content-Type": "application/json"})
        assert r.status == 400 and r.msg == "Malformed JSON request body", (path, r.body)
        assert (await api.request(method, path, params=params, token="alice")).status == 200, path


async def test_a_guard_rules_name_is_blank_by_the_named_spaces(api: ApiClient, people: dict) -> None:
    """`[^\\s\\x1c-\\x1f]`: U+FEFF is a space to ECMA (the document refused it) but not to pydantic's regex nor to
    strip(), so a rule named "\\ufeff" was saved. The name's rule is ids.NOT_BLANK_PATTERN, read the same everywhere."""
    from tests.helpers.openapi_inputs import conforms

    doc: dict[str, Any] = (await api.get("/v3/api-docs")).body
    for name, status in (("\ufeff", 400), ("\u3000", 400), ("\ufeffR", 200)):
        body = {"name": name, "toolName": "*", "severity": "low"}
        r = await api.post("/api/v1/security/guard/rules", body, token="alice")
        assert r.status == status and conforms(doc, "RuleCreateBody", body) == (status == 200), (repr(name), r.body)
        assert r.status == 200 or r.msg == "name: must not be blank", r.body


async def test_a_proxy_urls_spaces_are_named_as_every_reader_counts_them(api: ApiClient, people: dict) -> None:
    """`\\s` in the proxy URL's pattern: U+0085 is one to pydantic's regex (a 400) and not to ECMA (the document took
    it); U+FEFF the reverse (saved, though the document refused it). The pattern now names the spaces."""
    schemas: dict[str, Any] = (await api.get("/v3/api-docs")).body["components"]["schemas"]
    (pattern,) = patterns_in(schemas["ProxyRequest"]["properties"]["url"])
    import re

    for url in ("http://h:1/\x85", "http://h:1/\ufeff", "http://a\ufeffb@h:1", "http://h:1/p"):
        r = await api.put("/api/v1/settings/proxy", {"enabled": True, "url": url}, token="alice")
        assert (r.status == 200) == bool(re.search(ecma(pattern), url)), (repr(url), r.body)
