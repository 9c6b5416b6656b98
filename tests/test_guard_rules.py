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
