"""Guard rules and settings, approval grants, pending approvals, the resolution log and the tool-call log."""

from __future__ import annotations

import peewee

from platform_server.db import BaseModel, BooleanField, DateTimeField, JSONField, Migration, utcnow


class GuardRule(BaseModel):
    """A rule over one tool (or `*`): optional argument regexes, a severity and a decision (null: the default)."""

    rule_id = peewee.CharField(unique=True)
    name = peewee.CharField()
    tool_name = peewee.CharField(index=True)
    argument_patterns = JSONField(default=dict)  # {argName: regex}
    severity = peewee.CharField()  # low | medium | high | critical
    decision = peewee.CharField(null=True)  # allow | ask | deny; null: the config's default for the severity
    enabled = BooleanField(default=True)
    description = peewee.TextField(default="")
    builtin = BooleanField(default=False)
    create_time = DateTimeField(default=utcnow)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        table_name = "guard_rule"


class GuardSetting(peewee.Model):
    """Global guard settings by key (`config`, `file_guard`) as JSON."""

    key = peewee.CharField(primary_key=True)
    value = JSONField(null=True)
    update_time = DateTimeField(default=utcnow)

    class Meta:
        database = BaseModel._meta.database
        table_name = "guard_setting"


class ApprovalGrant(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    scope_type = peewee.CharField()  # USER | AGENT | CONVERSATION | WORKSPACE
    scope_id = peewee.CharField()  # user id, agent id, public conversation id, workspace id
    conversation_pk = peewee.BigIntegerField(null=True)  # CONVERSATION: the conversation row it was given for
    tool_name = peewee.CharField(null=True)
    rule_id = peewee.CharField(null=True)
    max_severity = peewee.CharField()
    grant_kind = peewee.CharField()  # ALWAYS | UNTIL_TIMESTAMP | UNTIL_CONVERSATION_END
    expire_at = DateTimeField(null=True)
    note = peewee.TextField(default="")
    created_by = peewee.BigIntegerField()
    create_time = DateTimeField(default=utcnow, index=True)
    revoked = BooleanField(default=False)
    revoked_at = DateTimeField(null=True)
    revoked_by = peewee.BigIntegerField(null=True)

    class Meta:
        table_name = "approval_grant"
        indexes = ((("workspace_id", "scope_type", "scope_id"), False),)


class PendingApproval(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField()  # the conversation's owner
    agent_id = peewee.BigIntegerField()
    conversation_id = peewee.CharField()  # public id (pair with user_id: `default` is per user)
    tool_call_id = peewee.CharField()
    tool_name = peewee.CharField()
    arguments = peewee.TextField(default="{}")
    reason = peewee.TextField(default="")
    severity = peewee.CharField()
    rule_id = peewee.CharField(null=True)
    assistant_message_id = peewee.BigIntegerField(null=True)
    status = peewee.CharField(default="pending")  # pending | approved | denied | expired
    create_time = DateTimeField(default=utcnow, index=True)
    expires_at = DateTimeField()
    resolved_at = DateTimeField(null=True)
    resolved_by = peewee.BigIntegerField(null=True)

    class Meta:
        table_name = "pending_approval"
        indexes = ((("user_id", "conversation_id", "status"), False),)


class ApprovalResolution(BaseModel):
    """The final decision on one call that needed approval: manual, by grant, denied or expired."""

    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField(index=True)  # the conversation's owner
    agent_id = peewee.BigIntegerField(null=True)
    conversation_id = peewee.CharField(index=True)
    pending_id = peewee.BigIntegerField(null=True)
    grant_id = peewee.BigIntegerField(null=True, index=True)
    tool_name = peewee.CharField()
    rule_id = peewee.CharField(null=True)
    severity = peewee.CharField()
    decision = peewee.CharField()  # approved | denied | expired
    source = peewee.CharField()  # manual | grant | expiry | stop
    actor_user_id = peewee.BigIntegerField(null=True)
    reason = peewee.TextField(default="")
    create_time = DateTimeField(default=utcnow, index=True)

    class Meta:
        table_name = "approval_resolution"


class ToolCallLog(BaseModel):
    workspace_id = peewee.BigIntegerField(index=True)
    user_id = peewee.BigIntegerField(index=True)
    agent_id = peewee.BigIntegerField(null=True)
    conversation_id = peewee.CharField()
    tool_name = peewee.CharField(index=True)
    arguments = peewee.TextField(default="")
    decision = peewee.CharField()
    severity = peewee.CharField()
    rule_id = peewee.CharField(null=True)
    grant_id = peewee.BigIntegerField(null=True)
    success = BooleanField(default=True)
    duration_ms = peewee.IntegerField(default=0)
    result_preview = peewee.TextField(default="")
    create_time = DateTimeField(default=utcnow, index=True)

    class Meta:
        table_name = "tool_call_log"


# Built-in rules: read-only, seeded once (only `enabled` changes, through toggle).
BUILTIN_RULES: list[dict[str, str]] = [
    {
        "rule_id": "builtin.write_file",
        "name": "Writing files needs approval",
        "tool_name": "write_file",
        "severity": "high",
        "decision": "ask",
        "description": "write_file changes the agent's workspace files.",
    },
    {
        "rule_id": "builtin.shell_exec",
        "name": "Shell commands need approval",
        "tool_name": "shell_exec",
        "severity": "high",
        "decision": "ask",
        "description": "shell_exec runs a command on the server.",
    },
    {
        "rule_id": "builtin.read_file",
        "name": "Reading files is allowed",
        "tool_name": "read_file",
        "severity": "low",
        "decision": "allow",
        "description": "read_file reads the agent's workspace files.",
    },
    {
        "rule_id": "builtin.list_files",
        "name": "Listing files is allowed",
        "tool_name": "list_files",
        "severity": "low",
        "decision": "allow",
        "description": "list_files lists the agent's workspace files.",
    },
    {
        "rule_id": "builtin.get_current_time",
        "name": "Reading the time is allowed",
        "tool_name": "get_current_time",
        "severity": "low",
        "decision": "allow",
        "description": "get_current_time has no side effect.",
    },
    {
        "rule_id": "builtin.web_fetch",
        "name": "Fetching web pages is allowed",
        "tool_name": "web_fetch",
        "severity": "medium",
        "decision": "allow",
        "description": "web_fetch reads a URL (SSRF-guarded).",
    },
    {
        "rule_id": "builtin.acp_permission",
        "name": "Delegated agents ask before they act",
        "tool_name": "acp_permission",
        "severity": "high",
        "decision": "ask",
        "description": "A permission request of an ACP agent working for acp_delegate.",
    },
]


def _tables(db: peewee.Database) -> None:
    db.create_tables([GuardRule, GuardSetting, ApprovalGrant, PendingApproval, ApprovalResolution, ToolCallLog], safe=True)
    for spec in BUILTIN_RULES:
        if not GuardRule.select().where(GuardRule.rule_id == spec["rule_id"]).exists():
            GuardRule.create(builtin=True, argument_patterns={}, **spec)


def _seed_new_builtins(db: peewee.Database) -> None:
    for spec in BUILTIN_RULES:
        if not GuardRule.select().where(GuardRule.rule_id == spec["rule_id"]).exists():
            GuardRule.create(builtin=True, argument_patterns={}, **spec)


MIGRATIONS: list[Migration] = [("guard_0001_tables", _tables), ("guard_0002_acp_permission", _seed_new_builtins)]
