"""Conversation routes: every per-conversation call checks ownership first."""

from __future__ import annotations

from platform_server.features.chat import CHAT
from platform_server.features.chat.errors import AgentBusy
from platform_server.features.conversations import service
from platform_server.features.conversations.schemas import (
    BatchDeleteRequest,
    ConversationView,
    DeletedCount,
    MessageHistoryView,
    MessageView,
    ModelRequest,
    PinRequest,
    RatingRequest,
    StreamStatusView,
    TitleRequest,
)
from platform_server.web.base import ApiHandler
from platform_server.web.openapi_answers import NOTHING, list_of, one, page_of
from platform_server.web.pagination import page_request
from platform_server.web.routing import route

TAGS = ("Conversations",)


class ConversationsHandler(ApiHandler):
    answers = {"GET": list_of(ConversationView)}
    access = {"GET": "viewer"}
    tags = TAGS

    def get(self) -> None:
        """The caller's conversations in the workspace, pinned first, most recent first."""
        self.ok(service.list_for(self.require_caller()))


class ConversationPageHandler(ApiHandler):
    answers = {"GET": page_of(ConversationView)}
    access = {"GET": "viewer"}
    tags = TAGS
    query_params = {
        "GET": [
            {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 1}},
            {"name": "size", "in": "query", "schema": {"type": "integer", "minimum": 1}},
            {"name": "keyword", "in": "query", "schema": {"type": "string"}},
        ]
    }

    def get(self) -> None:
        """A page of the caller's conversations; `keyword` searches titles and messages."""
        req = page_request(self.get_query_argument("page", None), self.get_query_argument("size", None), self.config.max_page_size)
        keyword = (self.get_query_argument("keyword", "") or "").strip() or None
        self.ok(service.page_for(self.require_caller(), req, keyword))


class BatchDeleteHandler(ApiHandler):
    answers = {"POST": one(DeletedCount)}
    access = {"POST": "viewer"}
    body_models = {"POST": BatchDeleteRequest}
    tags = TAGS

    def post(self) -> None:
        """Delete up to 200 of the caller's conversations at once."""
        req = self.body(BatchDeleteRequest)
        caller = self.require_caller()
        deleted = service.batch_delete(caller, req.conversationIds)
        for conv in deleted:
            self.platform.runtime(CHAT).wind_down(caller.user_id, conv)
        self.ok({"deleted": len(deleted)})


class ConversationHandler(ApiHandler):
    answers = {"DELETE": NOTHING}
    access = {"DELETE": "viewer"}
    tags = TAGS

    def delete(self, conversationId: str) -> None:
        """Delete one conversation with its messages."""
        caller = self.require_caller()
        conv = service.owned(caller, conversationId)
        service.delete(caller, conv)
        self.platform.runtime(CHAT).wind_down(caller.user_id, conv)
        self.ok(None)


class MessagesHandler(ApiHandler):
    answers = {"GET": one(MessageHistoryView), "DELETE": NOTHING}
    access = {"GET": "viewer", "DELETE": "viewer"}
    tags = TAGS
    query_params = {
        "GET": [
            {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 500}},
            {"name": "beforeId", "in": "query", "schema": {"type": "string", "pattern": "^[0-9]{1,18}$"}},  # a Long (a message id)
        ]
    }

    def get(self, conversationId: str) -> None:
        """History: all messages (or all before `beforeId`), or the latest `limit` (`hasMore`), or `limit` before `beforeId`."""
        conv = service.owned(self.require_caller(), conversationId)
        limit = self.query_long("limit")
        answer = service.messages(conv, limit, self.query_long("beforeId"))
        self.ok(service.for_original_console(answer) if self.original_console else answer)

    def delete(self, conversationId: str) -> None:
        """Clear the messages and keep the conversation."""
        caller = self.require_caller()
        conv = service.owned(caller, conversationId)
        chat = self.platform.runtime(CHAT)
        if chat is not None and chat.is_running(conv.key):
            raise AgentBusy()
        service.clear(caller, conv)
        self.ok(None)


class TitleHandler(ApiHandler):
    answers = {"PUT": one(ConversationView)}
    access = {"PUT": "viewer"}
    body_models = {"PUT": TitleRequest}
    tags = TAGS

    def put(self, conversationId: str) -> None:
        """Rename."""
        caller = self.require_caller()
        conv = service.owned(caller, conversationId)
        self.ok(service.rename(caller, conv, self.body(TitleRequest).title.strip()))


class PinHandler(ApiHandler):
    answers = {"PUT": one(ConversationView)}
    access = {"PUT": "viewer"}
    body_models = {"PUT": PinRequest}
    tags = TAGS

    def put(self, conversationId: str) -> None:
        """Pin or unpin."""
        caller = self.require_caller()
        conv = service.owned(caller, conversationId)
        self.ok(service.pin(caller, conv, self.body(PinRequest).pinned))


class ModelHandler(ApiHandler):
    answers = {"PUT": one(ConversationView)}
    access = {"PUT": "viewer"}
    body_models = {"PUT": ModelRequest}
    tags = TAGS

    def put(self, conversationId: str) -> None:
        """Set (or clear, with nulls) the per-conversation model override."""
        caller = self.require_caller()
        conv = service.owned(caller, conversationId)
        req = self.body(ModelRequest)
        self.ok(service.set_model(caller, conv, req.modelProvider, req.modelName))


class RatingHandler(ApiHandler):
    answers = {"PUT": one(MessageView)}
    access = {"PUT": "viewer"}
    body_models = {"PUT": RatingRequest}
    tags = TAGS

    def put(self, conversationId: str, messageId: int) -> None:
        """Rate an assistant answer: `{rating: "up" | "down" | null}`, stored in its `metadata.rating`."""
        caller = self.require_caller()
        conv = service.owned(caller, conversationId)
        self.ok(service.rate_message(caller, conv, messageId, self.body(RatingRequest).rating))


class StatusHandler(ApiHandler):
    answers = {"GET": one(StreamStatusView)}
    access = {"GET": "viewer"}
    tags = TAGS

    def get(self, conversationId: str) -> None:
        """`{streamStatus}`: running while a turn is in flight."""
        conv = service.owned(self.require_caller(), conversationId)
        self.ok({"streamStatus": conv.stream_status, "conversationId": conv.conversation_id})


class TrajectoryHandler(ApiHandler):
    access = {"GET": "viewer"}
    tags = TAGS
    download_methods = frozenset({"GET"})
    download_types = {"GET": ("text/plain",)}

    def get(self, conversationId: str) -> None:
        """Plain-text trajectory in emission order."""
        conv = service.owned(self.require_caller(), conversationId)
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.finish(service.trajectory(conv))


ROUTES = [
    route("/api/v1/conversations", ConversationsHandler),
    route("/api/v1/conversations/page", ConversationPageHandler),
    route("/api/v1/conversations/batch-delete", BatchDeleteHandler),
    route("/api/v1/conversations/{conversationId:str}", ConversationHandler),
    route("/api/v1/conversations/{conversationId:str}/messages", MessagesHandler),
    route("/api/v1/conversations/{conversationId:str}/messages/{messageId}/rating", RatingHandler),
    route("/api/v1/conversations/{conversationId:str}/title", TitleHandler),
    route("/api/v1/conversations/{conversationId:str}/pin", PinHandler),
    route("/api/v1/conversations/{conversationId:str}/model", ModelHandler),
    route("/api/v1/conversations/{conversationId:str}/status", StatusHandler),
    route("/api/v1/conversations/{conversationId:str}/trajectory", TrajectoryHandler),
]
