"""The admin runtime snapshot in the original console's Live view shape: `{summary, runs, subagents,
timestamp}`, with `turns` beside it (every turn still kept, finished ones included)."""

from __future__ import annotations

import time

from platform_server.features.agents.models import Agent
from platform_server.features.auth.models import User
from platform_server.features.chat.turns import Turn


def live_snapshot(turns: list[Turn], stuck_s: float) -> dict[str, object]:
    """Every in-flight (or still replayable) turn; a running turn silent for `stuck_s` is stuck."""
    now, mono = time.time(), time.monotonic()
    agent_ids = {t.agent_id for t in turns}
    user_ids = {t.user_id for t in turns}
    agents = {a.id: a for a in Agent.select(Agent.id, Agent.name, Agent.icon).where(Agent.id.in_(agent_ids))} if agent_ids else {}
    users = {u.id: u.username for u in User.select(User.id, User.username).where(User.id.in_(user_ids))} if user_ids else {}
    runs = []
    for t in turns:
        silent_ms = int((mono - t.last_event_at) * 1000)
        agent = agents.get(t.agent_id)
        runs.append(
            {
                **t.snapshot(),
                "agentName": agent.name if agent else None,
                "agentIcon": (agent.icon or None) if agent else None,
                "username": users.get(t.user_id),
                "currentPhase": t.phase,
                "runningToolName": None,
                "waitingReason": "awaiting_approval" if t.phase == "awaiting_approval" else None,
                "done": not t.running,
                "firstTokenReceived": bool(t.events),
                "subscriberCount": len(t.subscribers),
                "queueLen": len(t.queue),
                "ageMs": int((now - t.started_at) * 1000),
                "msSinceLastEvent": silent_ms,
                "stuckReason": "idle_silent" if t.running and silent_ms > stuck_s * 1000 else None,
                "orphan": t.running and not t.subscribers,
                "subagentCount": 0,
            }
        )
    running = [r for r, t in zip(runs, turns) if t.running]
    queued = sum(len(t.queue) for t in turns if t.running)
    # `runs`: in flight only (the console offers Stop on each card); `turns`: also the finished ones
    # still kept for replay
    return {
        "summary": {
            "running": len(running),
            "stuck": sum(1 for r in running if r["stuckReason"]),
            "orphan": sum(1 for r in running if r["orphan"]),
            "queued": queued,
            "subagentsActive": 0,
        },
        "runs": running,
        "turns": runs,
        "subagents": [],
        "timestamp": int(now * 1000),
    }
