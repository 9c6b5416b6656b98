#!/usr/bin/env python3
"""Use a client generated from the served OpenAPI document: log in, list and create agents, chat (not
streaming) and list conversations. Generate the client first (README, "Generating a client"):

    openapi-python-client generate --url http://127.0.0.1:8080/v3/api-docs --output-path agent_platform_client --meta none
    PYTHONPATH=. python scripts/client_demo.py http://127.0.0.1:8080 alice 'password'

Prints one JSON line per step; exits non-zero at the first step that fails.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _data(response: Any, step: str) -> Any:
    """The envelope's `data`, after checking the call succeeded."""
    if response.status_code != 200 or response.parsed is None:
        raise SystemExit(f"{step}: HTTP {response.status_code} {response.content[:300]!r}")
    envelope = response.parsed.to_dict()
    print(json.dumps({"step": step, "code": envelope["code"]}))
    return envelope.get("data")


def main(base_url: str, username: str, password: str, message: str = "Hello from the generated client") -> None:
    from agent_platform_client import AuthenticatedClient, Client
    from agent_platform_client.api.agents import agents_create, agents_list
    from agent_platform_client.api.authentication import auth_login_create
    from agent_platform_client.api.chat import chat_create
    from agent_platform_client.api.conversations import conversations_list
    from agent_platform_client.models import AgentCreate, LoginRequest, SyncChatRequest

    anonymous = Client(base_url=base_url)
    login = _data(auth_login_create.sync_detailed(client=anonymous, body=LoginRequest(username=username, password=password)), "login")
    client = AuthenticatedClient(base_url=base_url, token=login["token"])
    before = _data(agents_list.sync_detailed(client=client), "agents_list")
    agent = _data(agents_create.sync_detailed(client=client, body=AgentCreate(name="Made by the generated client")), "agents_create")
    after = _data(agents_list.sync_detailed(client=client), "agents_list")
    reply = _data(
        chat_create.sync_detailed(
            client=client, body=SyncChatRequest(agent_id=str(agent["id"]), message=message, conversation_id="generated-client")
        ),
        "chat",
    )
    conversations = _data(conversations_list.sync_detailed(client=client), "conversations_list")
    print(
        json.dumps(
            {"agentsBefore": len(before), "agentsAfter": len(after), "agentId": str(agent["id"]), "reply": reply, "conversations": conversations}
        )
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
