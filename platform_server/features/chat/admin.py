"""Admin runtime (global admin): in-flight turns, friendly stop, force recycle, sweep; agent state and execute."""

from __future__ import annotations

from platform_server.features.agents import service as agents
from platform_server.features.chat import CHAT, live, service
from platform_server.features.chat.schemas import (
    AgentStateView,
    ExecuteRequest,
    ExecuteResultView,
    RuntimeRecycleView,
    RuntimeSnapshotView,
    RuntimeStopView,
)
from platform_server.features.chat.service import ChatService, TurnRequest
from platform_server.features.conversations import service as conversations
from platform_server.features.plans import service as plans
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.errors import NotFound
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route

TAGS = ("Admin runtime",)


class AdminHandler(ApiHandler):
    access = {"GET": GLOBAL_ADMIN, "POST": GLOBAL_ADMIN}
    tags = TAGS

    @property
    def runtime(self) -> ChatService:
        return self.platform.runtime(CHAT)

    def turns_of(self, conversation_id: str) -> list[service.Turn]:
        turns = [t for t in self.runtime.find_turns(conversation_id) if t.running]
        if not turns:
            raise NotFound("No running turn for this conversation")
        return turns


class SnapshotHandler(AdminHandler):
    answers = {"GET": one(RuntimeSnapshotView)}

    def get(self) -> None:
        """Every in-flight (and recently finished, still replayable) turn as `{summary, runs, subagents, timestamp}`."""
        self.ok(live.live_snapshot(self.runtime.turns.all(), self.config.stuck_turn_s))


class AdminStopHandler(AdminHandler):
    answers = {"POST": one(RuntimeStopView)}

    def post(self, conversationId: str) -> None:
        """Friendly stop: the turn winds down at its next checkpoint."""
        turns = self.turns_of(conversationId)
        self.ok({"stopRequested": [self.runtime.request_stop(t) for t in turns].count(True)})


class RecycleHandler(AdminHandler):
    answers = {"POST": one(RuntimeRecycleView)}

    async def post(self, conversationId: str) -> None:
        """Force recycle: cancel the turn and drop its run state, for when a friendly stop is ignored."""
        turns = self.turns_of(conversationId)
        recycled = [await self.runtime.recycle(t) for t in turns]
        self.ok({"recycled": recycled.count(True)})


class SweepHandler(AdminHandler):
    answers = {"POST": one(RuntimeRecycleView)}

    async def post(self) -> None:
        """Recycle every turn with no event for longer than `stuck_turn_s`."""
        swept = await self.runtime.sweep()
        self.ok({"recycled": len(swept), "conversationIds": swept})


class AgentStateHandler(ApiHandler):
    answers = {"GET": one(AgentStateView)}
    access = {"GET": "viewer"}
    tags = ("Agents",)

    def get(self, id: int) -> None:
        """Runtime state: in-flight turns of this agent (the caller's own conversations are named)."""

        caller = self.require_caller()
        agent = agents.get_agent(caller, id)
        runtime: ChatService = self.platform.runtime(CHAT)
        running = [t for t in runtime.turns.running() if t.agent_id == agent.id]
        mine = [t.conversation_id for t in running if t.user_id == caller.user_id]
        self.ok(
            {
                "agentId": str(agent.id),
                "enabled": bool(agent.enabled),
                "state": "running" if running else "idle",
                "activeTurns": len(running),
                "myRunningConversations": mine,
            }
        )


class ExecuteHandler(ApiHandler):
    answers = {"POST": one(ExecuteResultView)}
    access = {"POST": "viewer"}
    body_models = {"POST": ExecuteRequest}
    tags = ("Agents",)

    async def post(self, id: int) -> None:
        """Run Plan-Execute on a task; answers the plan with its steps and the final answer."""

        req = self.body(ExecuteRequest)
        caller = self.require_caller()
        agent = agents.get_agent_for_chat(caller, id)
        cid = conversations.validate_id(req.conversationId or f"plan-{id}-{caller.user_id}")
        runtime: ChatService = self.platform.runtime(CHAT)
        turn = runtime.start_turn(TurnRequest(caller=caller, agent=agent, conversation_id=cid, message=req.task, source="execute"))
        result = await service.wait_result(turn)
        plan_id = turn.result.plan_id
        result["plan"] = plans.get(caller, int(plan_id)) if plan_id else None
        self.ok(result)


ROUTES = [
    route("/api/v1/admin/agent-runtime/snapshot", SnapshotHandler),
    route("/api/v1/admin/agent-runtime/runs/{conversationId:str}/stop", AdminStopHandler),
    route("/api/v1/admin/agent-runtime/runs/{conversationId:str}/recycle", RecycleHandler),
    route("/api/v1/admin/agent-runtime/sweep", SweepHandler),
    route("/api/v1/agents/{id}/state", AgentStateHandler),
    route("/api/v1/agents/{id}/execute", ExecuteHandler),
]
