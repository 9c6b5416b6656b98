"""Models: providers, their models, defaults, discovery and tests; the LLM provider pool."""

from __future__ import annotations

from platform_server.features.models import LLM, remote, service
from platform_server.features.models.pool_views import LlmProviderPoolView, LlmProviderReprobeView
from platform_server.features.models.runtime import LlmRouter
from platform_server.features.models.schemas import (
    ActiveModel,
    ActiveModelView,
    ContextWindow,
    CustomProviderCreate,
    DefaultEmbeddingIdView,
    DiscoverApply,
    DiscoveryView,
    EmbeddingDefault,
    EmbeddingProbeView,
    EmbeddingTest,
    ModelCreate,
    ModelTest,
    ModelUpdate,
    ProviderConfigUpdate,
    ProviderModelCreate,
    ProviderOptionView,
    ProviderProbeView,
)
from platform_server.ids import NOT_BLANK_RE
from platform_server.web.base import ApiHandler
from platform_server.web.context import GLOBAL_ADMIN
from platform_server.web.errors import BadRequest
from platform_server.web.openapi_answers import NOTHING, list_of, maybe, one
from platform_server.web.routing import route

ADMIN = GLOBAL_ADMIN


class _Models(ApiHandler):
    tags = ("Models",)

    @property
    def router(self) -> LlmRouter:
        return self.platform.runtime(LLM)

    def pool_states(self) -> dict[str, str]:
        return {s["providerId"]: s["state"] for s in self.router.pool_state()}


class ModelsHandler(_Models):
    answers = {"GET": list_of(service.ConsoleProviderView), "POST": one(service.ModelView)}
    access = {"GET": ADMIN, "POST": ADMIN}
    body_models = {"POST": ModelCreate}

    def get(self) -> None:
        """Enabled providers with their enabled chat models (`id` = the model name) and API keys (global admin)."""
        self.ok([service.console_provider(p) for p in service.list_providers(enabled_only=True, pool_states=self.pool_states())])

    def post(self) -> None:
        """Create a model under a provider."""
        req = self.body(ModelCreate)
        self.ok(
            service.add_model(
                self.require_caller(),
                req.providerId,
                req.modelName,
                req.displayName,
                req.modelType,
                req.modalities,
                req.maxInputTokens,
                req.enabled,
                req.capabilities,
            )
        )


class CatalogHandler(_Models):
    answers = {"GET": list_of(service.ProviderView)}
    access = {"GET": ADMIN}

    def get(self) -> None:
        """Every provider, disabled ones included, with models and API keys (global admin)."""
        self.ok(service.list_providers(enabled_only=False, pool_states=self.pool_states()))


class OptionsHandler(_Models):
    answers = {"GET": list_of(ProviderOptionView)}
    access = {"GET": "viewer"}

    def get(self) -> None:
        """Enabled providers as `{id, name}` (no settings, no keys), for any viewer."""
        self.ok(service.provider_options())


class ActiveHandler(_Models):
    answers = {"GET": one(ActiveModelView), "PUT": one(ActiveModelView)}
    access = {"GET": "viewer", "PUT": ADMIN}
    body_models = {"PUT": ActiveModel}

    def get(self) -> None:
        """The active (default chat) model as `{activeLlm: {provider, modelName}}`."""
        self.ok(service.active())

    def put(self) -> None:
        """Set the active (default chat) model."""
        req = self.body(ActiveModel)
        self.ok(service.set_active(self.require_caller(), req.provider, req.modelName))


class ByTypeHandler(_Models):
    answers = {"GET": list_of(service.ModelView)}
    access = {"GET": "viewer"}

    def get(self) -> None:
        """Enabled models of one type (`chat` or `embedding`), optionally with a `modality`."""
        # each given value is checked (an empty one too: it is none of the documented enum's), `type` wins
        given = [(n, self.query_choice(n, service.MODEL_TYPES)) for n in ("type", "modelType")]
        model_type = next((v for _, v in given if v is not None), "chat")
        modality = self.query_choice("modality", (*service.MODALITIES, "vision", "video", "audio"))
        if modality == "vision":  # the original console's name for image input
            modality = "image"
        if modality in ("video", "audio"):  # no model here takes video or audio input
            self.ok([])
            return
        self.ok([service.model_to_dict(m) for m in service.enabled_models(model_type, modality)])


class EnabledHandler(_Models):
    answers = {"GET": list_of(service.ModelView)}
    access = {"GET": "viewer"}

    def get(self) -> None:
        """Enabled models of enabled providers."""
        self.ok([service.model_to_dict(m) for m in service.enabled_models()])


class DefaultHandler(_Models):
    answers = {"GET": maybe(service.ModelView)}
    access = {"GET": "viewer"}

    def get(self) -> None:
        """The global default chat model (null when none)."""
        m = service.default_model("chat")
        self.ok(service.model_to_dict(m) if m else None)


class CustomProvidersHandler(_Models):
    answers = {"POST": one(service.ProviderView), "DELETE": NOTHING}
    access = {"POST": ADMIN, "DELETE": ADMIN}
    body_models = {"POST": CustomProviderCreate}

    def post(self) -> None:
        """Create an enabled custom provider."""
        req = self.body(CustomProviderCreate)
        settings = req.model_dump(include=set(service.SETTING_FIELDS), exclude_unset=True)
        self.ok(service.create_custom_provider(self.require_caller(), req.providerId, req.name, req.baseUrl, req.apiKey, req.protocol, settings))

    def delete(self) -> None:
        """Delete a custom provider named by the `providerId` query parameter."""
        provider_id = self.get_query_argument("providerId", "", strip=False)
        if not NOT_BLANK_RE.search(provider_id):  # the document's QUERY_NOT_BLANK_PATTERN, as Tornado gives the value
            raise BadRequest("providerId: must not be blank")
        service.delete_custom_provider(self.require_caller(), provider_id.strip())
        self.ok(None)


class CustomProviderHandler(_Models):
    answers = {"DELETE": NOTHING}
    access = {"DELETE": ADMIN}

    def delete(self, providerId: str) -> None:
        """Delete a custom provider and its models."""
        service.delete_custom_provider(self.require_caller(), providerId)
        self.ok(None)


class EmbeddingDefaultHandler(_Models):
    answers = {"GET": one(DefaultEmbeddingIdView), "POST": one(service.ModelView)}
    access = {"GET": "viewer", "POST": ADMIN}
    body_models = {"POST": EmbeddingDefault}

    def get(self) -> None:
        """The default embedding model's id (null when none)."""
        m = service.default_model("embedding")
        self.ok(str(m.id) if m else None)

    def post(self) -> None:
        """Set the default embedding model."""
        req = self.body(EmbeddingDefault)
        self.ok(service.set_default_embedding(self.require_caller(), req.modelId))


class EmbeddingTestHandler(_Models):
    answers = {"POST": one(EmbeddingProbeView)}
    access = {"POST": ADMIN}
    body_models = {"POST": EmbeddingTest}

    async def post(self, modelId: int) -> None:
        """Embed a short text with the model and report the dimensions."""
        req = self.body(EmbeddingTest)
        self.ok(await remote.test_embedding(self.router, modelId, req.text))


class ModelHandler(_Models):
    answers = {"GET": one(service.ModelView), "PUT": one(service.ModelView), "DELETE": NOTHING}
    access = {"GET": "viewer", "PUT": ADMIN, "DELETE": ADMIN}
    body_models = {"PUT": ModelUpdate}

    def get(self, id: int) -> None:
        """One model."""
        self.ok(service.model_to_dict(service.get_model_row(id)))

    def put(self, id: int) -> None:
        """Update displayName, modalities, maxInputTokens, enabled or capabilities."""
        req = self.body(ModelUpdate)
        self.ok(service.update_model(self.require_caller(), id, req.model_dump(exclude_unset=True)))

    def delete(self, id: int) -> None:
        """Delete a model."""
        service.delete_model(self.require_caller(), id)
        self.ok(None)


class ModelDefaultHandler(_Models):
    answers = {"POST": one(service.ModelView)}
    access = {"POST": ADMIN}

    def post(self, id: int) -> None:
        """Make the model the default of its type."""
        self.ok(service.set_default(self.require_caller(), id))


class ProviderConfigHandler(_Models):
    answers = {"PUT": one(service.ProviderView)}
    access = {"PUT": ADMIN}
    body_models = {"PUT": ProviderConfigUpdate}

    def put(self, providerId: str) -> None:
        """Update a provider's baseUrl, apiKey (empty clears), name, protocol, or an Ollama provider's keepAlive and numCtx."""
        req = self.body(ProviderConfigUpdate)
        settings = req.model_dump(include=set(service.SETTING_FIELDS), exclude_unset=True)
        self.ok(service.update_config(self.require_caller(), providerId, req.baseUrl, req.apiKey, req.name, req.protocol, settings))


class ProviderEnableHandler(_Models):
    answers = {"POST": one(service.ProviderView)}
    access = {"POST": ADMIN}

    def post(self, providerId: str) -> None:
        """Enable a provider."""
        self.ok(service.set_provider_enabled(self.require_caller(), providerId, True))


class ProviderDisableHandler(_Models):
    answers = {"POST": one(service.ProviderView)}
    access = {"POST": ADMIN}

    def post(self, providerId: str) -> None:
        """Disable a provider (the default moves to another enabled chat model)."""
        self.ok(service.set_provider_enabled(self.require_caller(), providerId, False))


class DiscoverHandler(_Models):
    answers = {"POST": one(DiscoveryView)}
    access = {"POST": ADMIN}

    async def post(self, providerId: str) -> None:
        """List the models the provider itself offers."""
        self.ok(await remote.discover(self.router, providerId))


class DiscoverApplyHandler(_Models):
    answers = {"POST": list_of(service.ModelView)}
    access = {"POST": ADMIN}
    body_models = {"POST": DiscoverApply}

    async def post(self, providerId: str) -> None:
        """Add discovered models (`modelNames`, or all new ones) in bulk."""
        req = self.body(DiscoverApply)
        self.ok(await remote.discover_apply(self.router, self.require_caller(), providerId, req.modelNames))


class ContextWindowHandler(_Models):
    answers = {"PUT": one(service.ModelView)}
    access = {"PUT": ADMIN}
    body_models = {"PUT": ContextWindow}

    def put(self, providerId: str) -> None:
        """Set a model's maxInputTokens; null or non-positive clears it."""
        req = self.body(ContextWindow)
        self.ok(service.set_context_window(self.require_caller(), providerId, req.modelId, req.maxInputTokens))


class ProviderModelsHandler(_Models):
    answers = {"POST": one(service.ModelView), "DELETE": NOTHING}
    access = {"POST": ADMIN, "DELETE": ADMIN}
    body_models = {"POST": ProviderModelCreate}

    def post(self, providerId: str) -> None:
        """Add a model to the provider."""
        req = self.body(ProviderModelCreate)
        self.ok(
            service.add_model(
                self.require_caller(),
                providerId,
                req.modelName,
                req.displayName,
                req.modelType,
                req.modalities,
                req.maxInputTokens,
                req.enabled,
                req.capabilities,
            )
        )

    def delete(self, providerId: str) -> None:
        """Remove the model named by the `modelName` query parameter (`modelId` also accepted)."""
        # Either parameter names the model; one that names none (absent or blank) finds none: 404, as any unknown
        # name (OpenAPI 3.0 cannot state "one of these two query parameters", so neither is required)
        name = self.get_query_argument("modelName", "") or self.get_query_argument("modelId", "")
        service.remove_model_by_name(self.require_caller(), providerId, name)
        self.ok(None)


class ProviderModelTestHandler(_Models):
    answers = {"POST": one(ProviderProbeView)}
    access = {"POST": ADMIN}
    body_models = {"POST": ModelTest}

    async def post(self, providerId: str) -> None:
        """A real one-token call to one model (`modelName`, default: the provider's)."""
        req = self.body(ModelTest)
        service.get_provider(providerId)
        # the original console names the model in the `modelId` query parameter
        name = req.modelName or service.model_name_of(providerId, self.get_query_argument("modelId", None))
        self.ok(await self.router.probe(providerId, name))


class TestConnectionHandler(_Models):
    answers = {"POST": one(ProviderProbeView)}
    access = {"POST": ADMIN}

    async def post(self, providerId: str) -> None:
        """Test the provider with a real one-token call (or its model list when it has no chat model)."""
        service.get_provider(providerId)
        self.ok(await self.router.probe(providerId))


class PoolHandler(_Models):
    access = {"GET": ADMIN}
    answers = {"GET": list_of(LlmProviderPoolView)}
    tags = ("LLM runtime",)

    def get(self) -> None:
        """Pool state, consecutive failures and cooldown end of every provider."""
        self.ok(self.router.pool_state())


class ReprobeHandler(_Models):
    access = {"POST": ADMIN}
    answers = {"POST": one(LlmProviderReprobeView)}
    tags = ("LLM runtime",)

    async def post(self, providerId: str) -> None:
        """Probe the provider now and update its pool state."""
        service.get_provider(providerId)
        self.ok(await self.router.reprobe(providerId))


ROUTES = [
    route("/api/v1/models", ModelsHandler),
    route("/api/v1/models/catalog", CatalogHandler),
    route("/api/v1/models/options", OptionsHandler),
    route("/api/v1/models/active", ActiveHandler),
    route("/api/v1/models/by-type", ByTypeHandler),
    route("/api/v1/models/enabled", EnabledHandler),
    route("/api/v1/models/default", DefaultHandler),
    route("/api/v1/models/custom-providers", CustomProvidersHandler),
    route("/api/v1/models/custom-providers/{providerId:str}", CustomProviderHandler),
    route("/api/v1/models/embedding/default", EmbeddingDefaultHandler),
    route("/api/v1/models/embedding/{modelId}/test", EmbeddingTestHandler),
    route("/api/v1/models/{id}", ModelHandler),
    route("/api/v1/models/{id}/default", ModelDefaultHandler),
    route("/api/v1/models/{providerId:str}/config", ProviderConfigHandler),
    route("/api/v1/models/{providerId:str}/enable", ProviderEnableHandler),
    route("/api/v1/models/{providerId:str}/disable", ProviderDisableHandler),
    route("/api/v1/models/{providerId:str}/discover", DiscoverHandler),
    route("/api/v1/models/{providerId:str}/discover/apply", DiscoverApplyHandler),
    route("/api/v1/models/{providerId:str}/models", ProviderModelsHandler),
    route("/api/v1/models/{providerId:str}/models/context-window", ContextWindowHandler),
    route("/api/v1/models/{providerId:str}/models/test", ProviderModelTestHandler),
    route("/api/v1/models/{providerId:str}/test-connection", TestConnectionHandler),
    route("/api/v1/llm/provider-pool", PoolHandler),
    route("/api/v1/llm/provider-pool/{providerId:str}/reprobe", ReprobeHandler),
]
