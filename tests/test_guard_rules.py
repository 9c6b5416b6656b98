"""The guard's verdicts (service level) and the rule routes (HTTP level)."""
from __future__ import annotations

from typing import Any

from platform_server.features.guard import service as guard
from platform_server.features.guard import settings as guard_settings
from platform_server.features.guard.models import GuardRule
from tests.helpers.client import ApiClient
from tests.helpers.guard import caller, ctx
from tests.helpers.server import RunningServer


def custom_rule(**fields: Any) -> GuardRule:
    values = {"rule_id": "custom", "name": "custom", "tool_name": "web_fetch", "argument_patterns": {},
              "severity": "medium", "decision": "ask", "enabled": True}
    values.update(fields)
    return GuardRule.create(**values)


# ---- service level: evaluate ---------------------------------------------------------------------

async def test_built_in_rules_ask_for_writes_and_shell_and_allow_reads(server: RunningServer, people: dict) -> None:
    c = ctx(people["bob"]["id"])
    write = guard.evaluate("write_file", {"path": "notes.txt", "content": "x"}, c)
    assert (write.decision, write.severity, write.rule_id) == ("ask", "high", "builtin.write_file")
    assert "requires approval" in write.reason and write.grant_id is None
    assert guard.evaluate("shell_exec", {"command": "ls"}, c).decision == "ask"
    for tool in ("read_file", "list_files", "get_current_time"):
        v = guard.evaluate(tool, {"path": "notes.txt"}, c)
        assert (v.decision, v.severity) == ("allow", "low"), tool
    fetch = guard.evaluate("web_fetch", {"url": "https://example.com"}, c)
    assert (fetch.decision, fetch.severity) == ("allow", "medium")


async def test_an_unmatched_tool_gets_the_default_decision_for_low(server: RunningServer, people: dict) -> None:
    c = ctx(people["bob"]["id"])
    v = guard.evaluate("some_mcp_tool", {}, c)
    assert (v.decision, v.severity, v.rule_id) == ("allow", "low", None)
    guard_settings.put_config(caller(people["alice"], "alice", global_admin=True), None, {"low": "ask"})
    assert guard.evaluate("some_mcp_tool", {}, c).decision == "ask"


async def test_the_highest_severity_matching_rule_decides_and_names_match_exactly(server: RunningServer,
                                                                                   people: dict) -> None:
    c = ctx(people["bob"]["id"])
    custom_rule(rule_id="no-internal", tool_name="web_fetch", argument_patterns={"url": r"^https?://internal\."},
                severity="high", decision="deny")
    assert guard.evaluate("web_fetch", {"url": "http://internal.corp/x"}, c).decision == "deny"
    assert guard.evaluate("web_fetch", {"url": "https://example.com/internal."}, c).decision == "allow"
    assert guard.evaluate("web_fetch", {}, c).decision == "allow"  # a missing argument does not match
    custom_rule(rule_id="fetch-x", tool_name="fetch", severity="critical", decision="deny")
    assert guard.evaluate("web_fetch", {"url": "https://example.com"}, c).decision == "allow"  # no substring
    assert guard.evaluate("fetch", {}, c).decision == "deny"


async def test_a_disabled_rule_or_a_disabled_guard_no_longer_decides(server: RunningServer, people: dict) -> None:
    c = ctx(people["bob"]["id"])
    GuardRule.update(enabled=False).where(GuardRule.rule_id == "builtin.write_file").execute()
    v = guard.evaluate("write_file", {"path": "a.txt"}, c)
    assert (v.decision, v.rule_id) == ("allow", None)
    GuardRule.update(enabled=True).where(GuardRule.rule_id == "builtin.write_file").execute()
    guard_settings.put_config(caller(people["alice"], "alice", global_admin=True), False, None)
    assert guard.evaluate("write_file", {"path": "a.txt"}, c).decision == "allow"


async def test_a_critical_rule_always_asks_even_when_its_decision_says_allow(server: RunningServer,
                                                                             people: dict) -> None:
    custom_rule(rule_id="crit", tool_name="get_current_time", severity="critical", decision="allow")
    v = guard.evaluate("get_current_time", {}, ctx(people["bob"]["id"]))
    assert (v.decision, v.severity, v.rule_id) == ("ask", "critical", "crit")


async def test_the_file_guard_denies_secret_paths_for_the_file_tools(server: RunningServer, people: dict) -> None:
    c = ctx(people["bob"]["id"])
    for path in (".env", "app/.env", "./x/../.env", "keys/server.pem", "secrets/db.txt", ".ssh/id_rsa", "SECRETS/a"):
        v = guard.evaluate("read_file", {"path": path}, c)
        assert (v.decision, v.severity, v.rule_id) == ("deny", "critical", "file-guard"), path
    assert guard.evaluate("write_file", {"path": "deploy/.env.production", "content": ""}, c).decision == "deny"
    assert guard.evaluate("list_files", {"path": "secrets"}, c).decision == "deny"
    assert guard.evaluate("read_file", {"path": "notes/env.md"}, c).decision == "allow"
    assert guard.evaluate("web_fetch", {"path": ".env", "url": "https://example.com"}, c).decision == "allow"
    admin = caller(people["alice"], "alice", global_admin=True)
    guard_settings.put_file_guard(admin, None, ["private/*.txt"])
    assert guard.evaluate("read_file", {"path": ".env"}, c).decision == "allow"
    assert guard.evaluate("read_file", {"path": "private/a.txt"}, c).decision == "deny"
    assert guard.evaluate("read_file", {"path": "private/sub/a.txt"}, c).decision == "allow"
    guard_settings.put_file_guard(admin, False, None)
    assert guard.evaluate("read_file", {"path": "private/a.txt"}, c).decision == "allow"


# ---- HTTP level: rule routes -----------------------------------------------------------------------

RULES = "/api/v1/security/guard/rules"
BLOCK_RM = {"name": "Block rm -rf", "toolName": "shell_exec", "argumentPatterns": {"command": r"rm\s+-rf"},
            "severity": "critical", "decision": "deny", "description": "never"}


async def test_built_in_rules_are_listed_with_the_custom_ones(api: ApiClient, people: dict) -> None:
    r = await api.get(RULES + "/builtin", token="alice")
    assert r.status == 200
    by_id = {x["ruleId"]: x for x in r.data}
    assert by_id["builtin.write_file"]["decision"] == "ask" and by_id["builtin.write_file"]["severity"] == "high"
    assert by_id["builtin.shell_exec"]["severity"] == "high" and by_id["builtin.web_fetch"]["severity"] == "medium"
    assert all(x["builtin"] is True for x in r.data)
    created = await api.post(RULES, BLOCK_RM, token="alice")
    assert created.status == 200 and created.data["ruleId"] == "block-rm-rf" and created.data["builtin"] is False
    r = await api.get(RULES, token="alice")
    assert [x["ruleId"] for x in r.data][-1] == "block-rm-rf" and len(r.data) == len(by_id) + 1


async def test_rule_writes_need_a_global_admin_and_reads_a_workspace_admin(api: ApiClient, people: dict) -> None:
    assert (await api.post(RULES, BLOCK_RM, token="bob")).status == 403
    assert (await api.get(RULES, token="bob")).status == 403
    assert (await api.get(RULES, token="carol")).status == 403
    dave_ws = people["dave"]["workspace"]
    assert (await api.get(RULES, token="dave", workspace=dave_ws)).status == 200
    assert (await api.post(RULES, BLOCK_RM, token="dave", workspace=dave_ws)).status == 403
    assert (await api.put(RULES + "/builtin.write_file/toggle", {"enabled": False}, token="dave",
                          workspace=dave_ws)).status == 403
    assert (await api.put("/api/v1/security/guard/config", {"enabled": False}, token="dave",
                          workspace=dave_ws)).status == 403
    assert (await api.get("/api/v1/security/guard/config", token="dave", workspace=dave_ws)).status == 200


async def test_rule_bodies_are_validated(api: ApiClient, people: dict) -> None:
    async def bad(body: dict, field: str) -> None:
        r = await api.post(RULES, body, token="alice")
        assert r.status == 400 and r.msg.startswith(field), (body, r.body)

    await bad({**BLOCK_RM, "argumentPatterns": {"command": "rm ("}}, "argumentPatterns.command")
    await bad({**BLOCK_RM, "argumentPatterns": {"command": "x" * 501}}, "argumentPatterns.command")
    await bad({**BLOCK_RM, "severity": "urgent"}, "severity")
    await bad({**BLOCK_RM, "decision": "maybe"}, "decision")
    await bad({**BLOCK_RM, "decision": "allow"}, "decision")  # critical never allows
    await bad({**BLOCK_RM, "ruleId": "Bad Id"}, "ruleId")
    for reserved in ("builtin.mine", "export"):  # well-formed, but taken by a built-in rule or a route: 409
        r = await api.post(RULES, {**BLOCK_RM, "ruleId": reserved}, token="alice")
        assert r.status == 409 and r.msg.startswith("ruleId"), r.body
    await bad({**BLOCK_RM, "toolName": "a b"}, "toolName")
    await bad({k: v for k, v in BLOCK_RM.items() if k != "name"}, "name")
    await bad({**BLOCK_RM, "surprise": 1}, "surprise")
    assert (await api.post(RULES, {**BLOCK_RM, "ruleId": "rm"}, token="alice")).status == 200
    taken = await api.post(RULES, {**BLOCK_RM, "ruleId": "rm"}, token="alice")
    assert taken.status == 409 and taken.msg.startswith("ruleId")  # well-formed, but the id exists: a conflict
    r = await api.get(RULES, token="alice")
    assert [x["ruleId"] for x in r.data if not x["builtin"]] == ["rm"]


async def test_update_toggle_and_delete_a_custom_rule(api: ApiClient, people: dict) -> None:
    r = await api.post(RULES, {**BLOCK_RM, "ruleId": "rm"}, token="alice")
    pk = r.data["id"]
    r = await api.put(RULES + "/rm", {"severity": "high", "decision": "ask", "name": "Ask before rm"}, token="alice")
    assert r.status == 200 and (r.data["severity"], r.data["decision"], r.data["name"]) == ("high", "ask", "Ask before rm")
    assert r.data["argumentPatterns"] == BLOCK_RM["argumentPatterns"]
    r = await api.put(RULES + "/rm", {"severity": "critical", "decision": "allow"}, token="alice")
    assert r.status == 400
    r = await api.put(RULES + "/rm/toggle", {}, token="alice")
    assert r.data["enabled"] is False
    r = await api.put(RULES + "/rm/toggle", {"enabled": True}, token="alice")
    assert r.data["enabled"] is True
    assert (await api.put(RULES + "/nope", {"name": "x"}, token="alice")).status == 404
    assert (await api.delete(RULES + "/rm", token="alice")).status == 200
    assert (await api.delete(RULES + "/rm", token="alice")).status == 404
    r = await api.post(RULES, {**BLOCK_RM, "ruleId": "again"}, token="alice")
    assert (await api.delete(RULES + f"/by-id/{r.data['id']}", token="alice")).status == 200
    assert (await api.delete(RULES + f"/by-id/{pk}", token="alice")).status == 404
    events = await api.get("/api/v1/audit/events", params={"resourceType": "GUARD_RULE"}, token="alice")
    assert [e["action"] for e in events.data["records"]].count("DELETE") == 2


async def test_built_in_rules_are_read_only_but_can_be_toggled(api: ApiClient, people: dict) -> None:
    # the rule's state refuses these, not the request's shape: a 409, as each operation documents
    assert (await api.put(RULES + "/builtin.write_file", {"severity": "low"}, token="alice")).status == 409
    assert (await api.delete(RULES + "/builtin.write_file", token="alice")).status == 409
    r = await api.get(RULES + "/builtin", token="alice")
    pk = next(x["id"] for x in r.data if x["ruleId"] == "builtin.write_file")
    assert (await api.delete(RULES + f"/by-id/{pk}", token="alice")).status == 409
    r = await api.put(RULES + "/builtin.write_file/toggle", {"enabled": False}, token="alice")
    assert r.status == 200 and r.data["enabled"] is False
    v = guard.evaluate("write_file", {"path": "a"}, ctx(people["bob"]["id"]))
    assert v.decision == "allow"


async def test_rules_round_trip_through_export_and_import(api: ApiClient, people: dict) -> None:
    await api.post(RULES, {**BLOCK_RM, "ruleId": "rm"}, token="alice")
    await api.post(RULES, {"name": "Fetch intranet", "toolName": "web_fetch", "severity": "high",
                           "argumentPatterns": {"url": "intranet"}}, token="alice")
    await api.put(RULES + "/builtin.web_fetch/toggle", {"enabled": False}, token="alice")
    exported = (await api.get(RULES + "/export", token="alice")).data
    assert exported["version"] == 1 and len(exported["rules"]) == 9  # 7 built-in, 2 custom
    before = (await api.get(RULES, token="alice")).data
    for rule_id in ("rm", "fetch-intranet"):
        await api.delete(f"{RULES}/{rule_id}", token="alice")
    await api.put(RULES + "/builtin.web_fetch/toggle", {"enabled": True}, token="alice")
    r = await api.post(RULES + "/import", exported, token="alice")
    assert r.status == 200 and r.data == {"created": 2, "updated": 7, "total": 9}
    after = (await api.get(RULES, token="alice")).data
    strip = lambda rs: [{k: v for k, v in x.items() if k not in ("id", "createTime", "updateTime")} for x in rs]  # noqa: E731
    assert strip(after) == strip(before)
    r = await api.post(RULES + "/import", [{**BLOCK_RM, "ruleId": "rm", "decision": "ask", "severity": "high"}],
                       token="alice")
    assert r.data == {"created": 0, "updated": 1, "total": 1}
    rm = next(x for x in (await api.get(RULES, token="alice")).data if x["ruleId"] == "rm")
    assert (rm["decision"], rm["severity"]) == ("ask", "high")


async def test_an_import_with_one_bad_rule_writes_nothing(api: ApiClient, people: dict) -> None:
    good = {**BLOCK_RM, "ruleId": "good"}
    for bad in ({**BLOCK_RM, "ruleId": "bad", "argumentPatterns": {"command": "("}},
                {**BLOCK_RM, "ruleId": "good", "updateTime": 5},  # an export's field, of the wrong type
                {"ruleId": "builtin.unknown", **BLOCK_RM},  # a 404: it names no built-in rule
                "not an object"):
        r = await api.post(RULES + "/import", {"rules": [good, bad]}, token="alice")
        assert r.status in ((404,) if isinstance(bad, dict) and bad["ruleId"] == "builtin.unknown" else (400,)), bad
    assert (await api.post(RULES + "/import", {"rules": "x"}, token="alice")).status == 400
    assert [x for x in (await api.get(RULES, token="alice")).data if not x["builtin"]] == []
    assert (await api.post(RULES + "/import", {"rules": [good]}, token="bob")).status == 403


async def test_a_dry_run_import_answers_the_plan_and_writes_nothing(api: ApiClient, people: dict) -> None:
    await api.post(RULES, {**BLOCK_RM, "ruleId": "rm"}, token="alice")
    payload = {"rules": [{**BLOCK_RM, "ruleId": "rm", "decision": "ask", "severity": "high"},
                         {**BLOCK_RM, "ruleId": "new-one", "name": "New one"},
                         {"ruleId": "builtin.web_fetch", "enabled": False}]}
    r = await api.post(RULES + "/import", payload, token="alice", params={"dryRun": "true"})
    assert r.status == 200, r.body
    assert (r.data["dryRun"], r.data["created"], r.data["updated"], r.data["total"]) == (True, 1, 2, 3)
    assert [(p["ruleId"], p["action"], p["builtin"]) for p in r.data["rules"]] == [
        ("rm", "update", False), ("new-one", "create", False), ("builtin.web_fetch", "update", True)]
    assert r.data["rules"][0]["decision"] == "ask" and r.data["rules"][2]["enabled"] is False
    rules = {x["ruleId"]: x for x in (await api.get(RULES, token="alice")).data}
    assert "new-one" not in rules and rules["rm"]["decision"] == BLOCK_RM.get("decision", "deny")
    assert rules["builtin.web_fetch"]["enabled"] is True
    bad = await api.post(RULES + "/import", {"rules": [{**BLOCK_RM, "ruleId": "x", "argumentPatterns": {"command": "("}}]},
                         token="alice", params={"dryRun": "true"})
    assert bad.status == 400 and bad.msg.startswith("rules[0].argumentPatterns")


async def test_guard_and_file_guard_configs_are_validated_and_applied(api: ApiClient, people: dict) -> None:
    r = await api.get("/api/v1/security/guard/config", token="alice")
    assert r.data == {"enabled": True, "defaultDecisions": {"low": "allow", "medium": "allow", "high": "ask",
                                                             "critical": "ask"}}
    bad = await api.put("/api/v1/security/guard/config", {"defaultDecisions": {"critical": "allow"}}, token="alice")
    assert bad.status == 400 and "critical" in bad.msg
    assert (await api.put("/api/v1/security/guard/config", {"defaultDecisions": {"extreme": "ask"}},
                          token="alice")).status == 400
    r = await api.put("/api/v1/security/guard/config", {"defaultDecisions": {"low": "ask"}}, token="alice")
    assert r.data["defaultDecisions"]["low"] == "ask" and r.data["enabled"] is True
    r = await api.get("/api/v1/security/guard/config/file-guard", token="alice")
    assert r.data["enabled"] is True and "**/.env" in r.data["patterns"] and "**/*.pem" in r.data["patterns"]
    r = await api.put("/api/v1/security/guard/config/file-guard", {"patterns": ["private/**", "/x.txt"]}, token="alice")
    assert {k: r.data[k] for k in ("enabled", "patterns")} == {"enabled": True, "patterns": ["private/**", "x.txt"]}
    assert (await api.put("/api/v1/security/guard/config/file-guard", {"patterns": [""]}, token="alice")).status == 400
    assert (await api.put("/api/v1/security/guard/config/file-guard", {"patterns": "x"}, token="alice")).status == 400
    assert (await api.get("/api/v1/security/guard/config/file-guard", token="bob")).status == 403


async def test_rule_bodies_take_what_the_document_allows_and_refuse_the_rest(api: ApiClient, people: dict) -> None:
    schemas = (await api.get("/v3/api-docs")).body["components"]["schemas"]
    create = schemas["RuleCreateBody"]
    assert sorted(create["required"]) == ["name", "severity", "toolName"] and create["additionalProperties"] is False
    assert create["not"]["properties"] == {"severity": {"enum": ["critical"]}, "decision": {"enum": ["allow"]}}
    assert create["properties"]["argumentPatterns"]["additionalProperties"]["format"] == "regex"
    assert schemas["DefaultDecisionsBody"]["additionalProperties"] is False
    assert schemas["DefaultDecisionsBody"]["properties"]["critical"]["enum"] == ["ask", "deny", None]
    # Allowed by the document: any argument name (the tool's own key), a name with spaces around it
    rule = {"name": " Block ", "toolName": "*", "severity": "low", "argumentPatterns": {"weird key!": "a+"}}
    r = await api.post(RULES, rule, token="alice")
    assert r.status == 200 and r.data["name"] == "Block" and r.data["argumentPatterns"] == {"weird key!": "a+"}, r.body
    # Refused as the document says: a name str.strip() empties (\x1e is whitespace to Python), a null name
    for body in ({**rule, "name": "\x1e"}, {**rule, "name": None}, {k: v for k, v in rule.items() if k != "severity"}):
        assert (await api.post(RULES, body, token="alice")).status == 400, body
    # An import upserts by ruleId: a rule listed twice ends as its later entry, as two imports in a row would
    twice = {"rules": [{**rule, "ruleId": "dup", "severity": "high"}, {**rule, "ruleId": "dup", "severity": "medium"}]}
    r = await api.post(RULES + "/import", twice, token="alice")
    assert r.status == 200 and r.data["created"] == 1, r.body
    assert {x["ruleId"]: x["severity"] for x in (await api.get(RULES, token="alice")).data}["dup"] == "medium"
    # The list's size is an integer of at least 1, as documented, with or without a page
    assert (await api.get(RULES, params={"size": "0"}, token="alice")).status == 400
    assert (await api.get(RULES, params={"size": "2"}, token="alice")).status == 200
    # A sparse update leaves a null field as it is
    r = await api.put(f"{RULES}/dup", {"name": None, "description": "d"}, token="alice")
    assert r.status == 200 and r.data["name"] == "Block" and r.data["description"] == "d"
    # ruleId too: null (or the rule's own) keeps it; another id is a 409 (it names the rule, it does not rename it)
    for same in (None, "dup"):
        r = await api.put(f"{RULES}/dup", {"ruleId": same, "description": "e"}, token="alice")
        assert r.status == 200 and r.data["ruleId"] == "dup", r.body
    assert (await api.put(f"{RULES}/dup", {"ruleId": "other"}, token="alice")).status == 409
    # The file guard's globs: a blank or control-character one is refused, as the document's pattern says
    glob = schemas["FileGuardBody"]["properties"]["patterns"]["items"]
    assert glob["minLength"] == 1 and "pattern" in glob
    for patterns in ([" \x1f "], ["a\x00b"]):
        r = await api.put("/api/v1/security/guard/config/file-guard", {"patterns": patterns}, token="alice")
        assert r.status == 400 and r.msg.startswith("patterns"), r.body
