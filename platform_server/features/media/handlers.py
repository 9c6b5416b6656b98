"""Speech to text, text to speech, voices, and the one-time download of tool-generated files."""

from __future__ import annotations

from platform_server.blocking import run_blocking
from platform_server.features.conversations import service as conversations
from platform_server.features.media import SPEECH_LOCAL, lifecycle, service
from platform_server.features.media.schemas import ConversationFilesView, SynthesizeRequest, TranscriptView, VoicesView
from platform_server.features.tools.registry import ToolFactory
from platform_server.integrations.local_speech import LocalSpeech
from platform_server.web.base import ApiHandler
from platform_server.web.context import PUBLIC
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import one
from platform_server.web.routing import route


class SpeechHandler(ApiHandler):
    @property
    def local_speech(self) -> LocalSpeech:
        return self.platform.runtime(SPEECH_LOCAL)


class TranscribeHandler(SpeechHandler):
    answers = {"POST": one(TranscriptView)}
    access = {"POST": "viewer"}
    max_body_setting = "upload_max_bytes"
    spool_body = True
    tags = ("Speech",)

    async def post(self) -> None:
        """Speech to text: multipart `file` (audio) and optional `language`."""
        args, files = await self.multipart()
        if not files.get("file"):
            raise BadRequest("file: must not be null")
        f = files["file"][0]
        if not f.size:
            raise BadRequest("file: must not be empty")
        language = (args.get("language") or [b""])[0].decode("utf-8", "replace").strip() or None
        audio = await run_blocking(f.read)
        self.ok(await service.transcribe(self.local_speech, f.filename or "audio", audio, f.content_type, language))


class SynthesizeHandler(SpeechHandler):
    access = {"POST": "viewer"}
    body_models = {"POST": SynthesizeRequest}
    download_methods = frozenset({"POST"})
    tags = ("Speech",)

    async def post(self) -> None:
        """Text to speech: audio bytes (`X-Speech-Engine` names the engine); local `piper` when no provider."""
        req = self.body(SynthesizeRequest)
        audio, content_type, engine = await service.synthesize(self.local_speech, req.text, req.voice, req.format)
        self.set_header("Content-Type", content_type)
        self.set_header("X-Speech-Engine", engine)
        self.set_header("Access-Control-Expose-Headers", "X-Speech-Engine")
        self.finish(audio)


class VoicesHandler(ApiHandler):
    answers = {"GET": one(VoicesView)}
    access = {"GET": "viewer"}
    tags = ("Speech",)

    def get(self) -> None:
        """Voices of the speech engine in use (provider or local) and the default one."""
        self.ok(service.voices())


class GeneratedFileHandler(ApiHandler):
    access = {"GET": PUBLIC}
    download_methods = frozenset({"GET"})
    tags = ("Files",)

    async def get(self, id: int) -> None:
        """Download a tool-generated file once by its unguessable id (public)."""
        body, row = await service.take_generated(id)
        self.set_header("Content-Type", row.content_type)
        self.set_header("Content-Disposition", f'attachment; filename="{row.name}"')
        self.set_header("Content-Security-Policy", "default-src 'none'; sandbox")
        self.finish(body)


class ConversationFilesHandler(ApiHandler):
    answers = {"GET": one(ConversationFilesView)}
    access = {"GET": "viewer"}
    tags = ("Files",)

    def get(self, conversationId: str) -> None:
        """The owner's uploads into the conversation and the files its tools generated (one-time links)."""
        caller = self.require_caller()
        conv = conversations.owned(caller, conversationId)
        self.ok(service.conversation_files(caller.user_id, caller.workspace_id, conv.conversation_id))


ROUTES = [
    route("/api/v1/stt/transcribe", TranscribeHandler),
    route("/api/v1/tts/synthesize", SynthesizeHandler),
    route("/api/v1/tts/voices", VoicesHandler),
    route("/api/v1/files/generated/{id}", GeneratedFileHandler),
    route("/api/v1/conversations/{conversationId:str}/files", ConversationFilesHandler),
]

AGENT_TOOLS: list[ToolFactory] = [lifecycle.agent_tools]
