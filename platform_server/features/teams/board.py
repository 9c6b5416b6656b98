"""The team board's live stream (`GET /teams/{id}/events`): what changes in the team's runs, as the original
console's board reads it.

After each write of a run the runner calls `announce(run)`; the board compares the run with what it last
announced and publishes, on the team's topic, `team_run_<status>` when the run's state changed and
`team_task_<event>` per member task that appeared (`created`) or moved (`dispatched`, `completed`,
`failed`, `cancelled`). Every frame carries `teamId`, `runId` (strings, as the console compares them),
`status`, `progress` and a unique `eventId` (the console de-duplicates by it); task frames add `taskId`
(`<runId>-<index>`, the board's task id), `taskNumber`, `subject` and the assignee. Nothing is published
while nobody watches the team, and nothing is kept: a client that reconnects reloads the board.
"""

from __future__ import annotations

import itertools
from typing import Any

from platform_server.features.teams import service
from platform_server.features.teams.console import TASK_STATUS
from platform_server.features.teams.models import TeamRun
from platform_server.ports import events
from platform_server.ports.events import Subscription, TopicBus

# a member task's state -> the board event its arrival there is
TASK_EVENT = {"pending": "created", "running": "dispatched", "completed": "completed", "failed": "failed", "cancelled": "cancelled"}


def progress(tasks: list[dict[str, Any]]) -> dict[str, int]:
    """`{total, done, failed, inReview, percent}`: the console's run progress."""
    total = len(tasks)
    done = sum(1 for t in tasks if t["status"] == "completed")
    failed = sum(1 for t in tasks if t["status"] in ("failed", "cancelled"))
    return {"total": total, "done": done, "failed": failed, "inReview": 0, "percent": round(100 * (done + failed) / total) if total else 0}


class TeamBoard:
    """Topics by team id; remembers per active run what it last announced (dropped once the run ended)."""

    def __init__(self) -> None:
        self.topics: TopicBus[int] = events.current().topics("team-board")
        self._seen: dict[int, tuple[str, dict[int, str]]] = {}  # run id -> (status, task index -> status)
        self._ids = itertools.count(1)

    def subscribe(self, team_id: int) -> Subscription:
        return self.topics.subscribe(team_id)

    def announce(self, run: TeamRun) -> None:
        """Publish what changed in `run` since the last call (every change when it is new)."""
        status, tasks = str(run.status), list(run.tasks or [])
        last_status, last_tasks = self._seen.get(run.id, ("", {}))
        self._seen[run.id] = (status, {int(t["index"]): str(t["status"]) for t in tasks})
        if status not in service.ACTIVE and not any(t["status"] in ("pending", "running") for t in tasks):
            self._seen.pop(run.id, None)  # ended, and no task is left to move (a cancel stops them next)
        if not self.topics.watched(run.team_id):
            return  # nobody follows the team (on any process)
        base = {
            "teamId": str(run.team_id),
            "runId": str(run.id),
            "leadConversationId": run.conversation_id,
            "progress": progress(tasks),
        }
        for t in tasks:
            if last_tasks.get(int(t["index"])) == t["status"]:
                continue
            self._publish(
                run.team_id,
                f"team_task_{TASK_EVENT.get(t['status'], 'progress')}",
                {
                    **base,
                    "taskId": f"{run.id}-{t['index']}",
                    "taskNumber": int(t["index"]) + 1,
                    "subject": str(t["task"])[:120],
                    "status": TASK_STATUS.get(t["status"], t["status"]),
                    "assigneeAgentId": t["agentId"],
                    "assigneeName": t.get("agentName"),
                },
            )
        if status != last_status:
            self._publish(run.team_id, f"team_run_{status}", {**base, "status": status, "goal": run.goal})

    def _publish(self, team_id: int, name: str, data: dict[str, Any]) -> None:
        self.topics.publish(team_id, name, {**data, "eventId": f"{data['runId']}-{next(self._ids)}"})

    def close(self) -> None:
        self.topics.close()
