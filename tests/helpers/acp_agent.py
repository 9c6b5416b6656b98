"""A tiny ACP agent for tests: JSON-RPC 2.0, one message per line on stdin/stdout, answers `initialize`.

`python tests/helpers/acp_agent.py [--mode ok|hang|error|exit|noise]`:
ok answers initialize; hang never answers; error answers with a JSON-RPC error; exit writes to
stderr and exits; noise prints a log line, a notification and a request to the client first.
With ACP_MARKER set, the agent writes that text to `acp-agent-was-here` in its working folder.

In `ok` mode it also runs sessions: `session/new` answers a session id; `session/prompt` streams an
`agent_message_chunk`, a `tool_call` update, asks `session/request_permission` to write `notes.txt`
(writing it when allowed), then answers with a final chunk and `stopReason: end_turn`. A prompt
containing "wait" streams one chunk and waits for `session/cancel` (then writes `acp-cancelled` and
answers `stopReason: cancelled`); one containing "quick" skips the permission request.
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
        if mode == "ok" and msg["method"] in ("session/new", "session/prompt"):
            session(msg)
            continue
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


def update(session_id: str, body: dict) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": body}})


def chunk(session_id: str, text: str) -> None:
    update(session_id, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def session(msg: dict) -> None:
    params = msg.get("params") or {}
    if msg["method"] == "session/new":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "sess-1", "cwd": params.get("cwd")}})
        return
    sid = params.get("sessionId")
    task = "".join(p.get("text", "") for p in params.get("prompt") or [] if p.get("type") == "text")
    chunk(sid, f"Working on: {task}. ")
    if "wait" in task:
        for line in sys.stdin:
            note = json.loads(line)
            if note.get("method") == "session/cancel":
                with open("acp-cancelled", "w", encoding="utf-8") as fh:
                    fh.write(task)
                send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "cancelled"}})
                return
        return
    outcome = "skipped"
    if "quick" not in task:
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Write notes.txt", "kind": "edit",
                     "status": "pending"})
        send({"jsonrpc": "2.0", "id": "perm-1", "method": "session/request_permission", "params": {
            "sessionId": sid, "toolCall": {"toolCallId": "t1", "title": "Write notes.txt", "kind": "edit"},
            "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}})
        reply = json.loads(sys.stdin.readline())
        picked = ((reply.get("result") or {}).get("outcome") or {})
        outcome = "allowed" if picked.get("optionId") == "yes" else "refused"
        if outcome == "allowed":
            with open("notes.txt", "w", encoding="utf-8") as fh:
                fh.write(task)
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                     "status": "completed" if outcome == "allowed" else "failed"})
    chunk(sid, f"Done ({outcome}): the answer is 42.")
    send({"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}})


if __name__ == "__main__":
    main()
