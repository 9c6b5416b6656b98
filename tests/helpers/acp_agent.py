"""A tiny ACP agent for tests: JSON-RPC 2.0, one message per line on stdin/stdout, answers `initialize`.

`python tests/helpers/acp_agent.py [--mode ok|hang|error|exit|noise]`:
ok answers initialize; hang never answers; error answers with a JSON-RPC error; exit writes to
stderr and exits; noise prints a log line, a notification and a request to the client first.
With ACP_MARKER set, the agent writes that text to `acp-agent-was-here` in its working folder.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="ok", choices=["ok", "hang", "error", "exit", "noise"])
    mode = parser.parse_args().mode
    if os.environ.get("ACP_MARKER"):
        with open("acp-agent-was-here", "w", encoding="utf-8") as fh:
            fh.write(os.environ["ACP_MARKER"])
    if mode == "exit":
        sys.stderr.write("fatal: no credentials configured\n")
        sys.exit(3)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg or "method" not in msg:
            continue  # a response or notification from the client
        if msg["method"] != "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}})
            continue
        if mode == "hang":
            time.sleep(3600)
        if mode == "error":
            send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "unsupported client"}})
            continue
        if mode == "noise":
            print("starting test agent...", flush=True)
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"note": "hello"}})
            send({"jsonrpc": "2.0", "id": "srv-1", "method": "fs/read_text_file", "params": {"path": "/etc/hostname"}})
            reply = json.loads(sys.stdin.readline())
            assert reply.get("id") == "srv-1" and "error" in reply, reply
        client = msg.get("params", {}).get("clientInfo", {}).get("name", "")
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": False, "promptCapabilities": {"image": False, "audio": False}},
            "authMethods": [],
            "agentInfo": {"name": "test-acp-agent", "title": f"Test ACP Agent (client {client})", "version": "0.1.0"},
        }})


if __name__ == "__main__":
    main()
