"""Token counters: the model's own tokenizer where one ships with it (the embedded GGUF model), a
calibrated, conservative estimate otherwise.

Why no `tiktoken` for OpenAI-family names: its wheel holds no encodings; it downloads the BPE files
from the internet on first use, which an offline server cannot do. The estimate below was calibrated
against o200k_base and cl100k_base (and SmolLM2's tokenizer) on this project's README, Python source,
config file, tool schemas, French, German, Russian, Chinese and Japanese text and digits: it counts
at or above o200k/cl100k on every sample but random-looking text (base64: up to 2x under), where the
per-result cap and the answer's reserve absorb the error.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from typing import Callable, Protocol, cast

from platform_server.json_types import JsonObject
from platform_server.lazy import lazy_import

llama_cpp = lazy_import("llama_cpp")


class LlamaModel(Protocol):
    """What this package uses of a `llama_cpp.Llama` (its own signatures take TypedDicts we do not build)."""

    n_tokens: int

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]: ...

    def create_chat_completion(self, **kwargs: object) -> Generator[JsonObject, None, None]: ...


def load_llama(**kwargs: object) -> LlamaModel:
    """A `llama_cpp.Llama` (the import is lazy: the library loads on first use)."""
    return cast(LlamaModel, llama_cpp.Llama(**kwargs))


# What a chat format adds around each message (role, separators); OpenAI documents 3-4.
MESSAGE_OVERHEAD = 4
# An image part, whatever its size (OpenAI: 85 low detail, up to about 1,100 high detail).
IMAGE_TOKENS = 800
_CACHE_MAX = 20_000
_DIGITS = "0123456789"


def estimate(text: str) -> int:
    """Tokens of `text`, estimated: ASCII letters and signs 3.5 characters a token, digits 1.7, other
    characters 2.5 bytes of UTF-8 a token (CJK about 1.2 a character). C-speed passes only."""
    if not text:
        return 0
    digits = sum(map(text.count, _DIGITS))
    if text.isascii():
        return int((len(text) - digits) / 3.5 + digits / 1.7) + 1
    size = len(text.encode("utf-8"))
    ascii_chars = max(len(text) - (size - len(text)), 0)  # a lower bound: a non-ASCII character takes 2+ bytes
    return int(max(ascii_chars - digits, 0) / 3.5 + digits / 1.7 + (size - ascii_chars) / 2.5) + 1


class TokenCounter:
    """Counts tokens of texts; `cached` remembers a stored message's count (keyed by its row and size),
    so a model call re-counts only what is new since the last one."""

    name = "estimate"
    blocking = False  # True: counting may take milliseconds (call it off the IOLoop)
    overhead = MESSAGE_OVERHEAD  # tokens a message costs besides its text

    def __init__(self) -> None:
        self._cache: dict[tuple[int, int, int], int] = {}

    def count(self, text: str) -> int:
        return estimate(text)

    def cached(self, key: tuple[int, int, int], text: str | Callable[[], str]) -> int:
        """The count of `text` (or of what the callable makes, only when not cached yet) under `key`."""
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()  # a crude bound: the next call re-counts its history once
            found = self._cache[key] = self.count(text if isinstance(text, str) else text())
        return found


class LlamaCounter(TokenCounter):
    """The embedded model's own tokenizer (llama.cpp, vocabulary only: about 0.1 s to load)."""

    blocking = True
    overhead = 8  # its chat template's markers, and what the local client adds (as its own fitting counts)

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.name = "llama.cpp"
        self._lock = threading.Lock()
        self._vocab: LlamaModel | None = None

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:  # one tokenizer instance: llama.cpp's calls on it are not made concurrent
            if self._vocab is None:
                self._vocab = load_llama(model_path=self.path, vocab_only=True, verbose=False)
            return len(self._vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))


ESTIMATE = TokenCounter()
_lock = threading.Lock()
_llama_counters: dict[str, LlamaCounter] = {}


def llama_counter(path: str) -> LlamaCounter:
    """The (shared) tokenizer counter of a GGUF file."""
    with _lock:
        counter = _llama_counters.get(path)
        if counter is None:
            counter = _llama_counters[path] = LlamaCounter(path)
        return counter
