"""A lean reader of model2vec static models with a Unigram tokenizer (the shipped tokenlearn-static-model).

`tokenizers` builds a search trie of the Unigram vocabulary that takes ~330 MB for the shipped model's 276k pieces
(model2vec then copies it: ~700 MB). Here the vocabulary is one dict (piece -> id) and a score array, and the best
segmentation of each word is the same Viterbi search `tokenizers` runs, in Python; the text's normalization and
its split into words still come from `tokenizers`, built from the same tokenizer.json without the vocabulary. The
vectors are model2vec's: the rows of the ids (through the token mapping, times the token weights) averaged and
normalized.

Runs in the embedding worker process only (see local_embeddings); it is not imported by the server.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from platform_server.lazy import lazy_import

if TYPE_CHECKING:
    import tokenizers
else:
    tokenizers = lazy_import("tokenizers")  # the normalizer and the split into words, exactly as model2vec's tokenizer does them

# The score of an unknown character: the lowest piece's score minus this (tokenizers' kUnkPenalty).
UNK_PENALTY = 10.0
WORD_CACHE = 20_000

_ENTRY = re.compile(rb'\[\s*"((?:[^"\\]|\\.)*)"\s*,\s*(-?[0-9.eE+-]+)\s*\]\s*(,?)\s*')
_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I8": np.int8, "I32": np.int32, "I64": np.int64}


class Unsupported(ValueError):
    """The model is not one this reader handles (the caller falls back to model2vec)."""


def _read_vocab(raw: bytes) -> tuple[dict[str, int], np.ndarray, int, int]:
    """The pieces (piece -> id), their scores and the byte span of the vocabulary list in tokenizer.json."""
    found = re.search(rb'"vocab"\s*:\s*\[', raw)
    if found is None:
        raise Unsupported("tokenizer.json has no Unigram vocabulary list")
    ids: dict[str, int] = {}
    scores: list[float] = []
    at = found.end()
    while True:
        m = _ENTRY.match(raw, at)
        if m is None:
            break
        piece = m.group(1)
        text = json.loads(b'"' + piece + b'"') if b"\\" in piece else piece.decode()
        ids[text] = len(scores)  # a repeated piece keeps its last id, as in tokenizers
        scores.append(float(m.group(2)))
        at = m.end()
        if not m.group(3):
            break
    end = raw.find(b"]", at)
    if end < 0 or raw[at:end].strip():
        raise Unsupported(f"tokenizer.json's vocabulary could not be read to its end (byte {at})")
    return ids, np.asarray(scores, dtype=np.float64), found.end() - 1, end + 1


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    with open(path, "rb") as fh:
        size = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(size))
        data = fh.read()
    out: dict[str, np.ndarray] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] not in _DTYPES:
            raise Unsupported(f"tensor {name} has dtype {meta['dtype']}")
        start, stop = meta["data_offsets"]
        out[name] = np.frombuffer(data[start:stop], dtype=_DTYPES[meta["dtype"]]).reshape(meta["shape"]).copy()
    return out


def _alternation(contents: list[str]) -> re.Pattern[str] | None:
    """A pattern matching any of the strings, the longest first (None for none)."""
    return re.compile("|".join(re.escape(c) for c in sorted(contents, key=len, reverse=True))) if contents else None


class StaticModel:
    """encode(texts) -> float32 array (len(texts), dim), the vectors model2vec's StaticModel.encode gives."""

    def __init__(self, folder: str, max_length: int = 512) -> None:
        self.tokens_read = 0  # tokens the last encode read
        root = Path(folder)
        config = json.loads((root / "config.json").read_text())
        raw = (root / "tokenizer.json").read_bytes()
        self.pieces, scores, start, stop = _read_vocab(raw)
        spec = json.loads(raw[:start] + b'[["<unk>", 0.0]]' + raw[stop:])
        del raw
        model = spec["model"]
        if model.get("type") != "Unigram" or model.get("byte_fallback"):
            raise Unsupported(f"model type {model.get('type')} (byte_fallback={model.get('byte_fallback')})")
        if spec.get("truncation"):
            raise Unsupported("tokenizer.json truncates")
        self.unk_id: int | None = model.get("unk_id")
        self.scores: list[float] = scores.tolist()  # Python floats: numpy scalars would slow the search ~5x
        self.unk_score = float(scores.min()) - UNK_PENALTY
        # The longest piece starting with each two characters: the search tries no longer substring there.
        self.reach: dict[str, int] = {}
        for piece in self.pieces:
            head = piece[:2]
            if len(piece) > self.reach.get(head, 0):
                self.reach[head] = len(piece)

        # Added tokens are split out before the vocabulary is searched, as tokenizers does: those not normalized
        # in the raw text, the normalized ones (the shipped model's `<pad>`) in the normalized text, with their
        # whole-word and whitespace-stripping rules.
        added = spec.get("added_tokens", [])
        self.added = {t["content"]: int(t["id"]) for t in added}
        self.added_rx = _alternation([t["content"] for t in added if not t.get("normalized")])
        self.normalized_rules = {
            t["content"]: (bool(t.get("single_word")), bool(t.get("lstrip")), bool(t.get("rstrip"))) for t in added if t.get("normalized")
        }
        self.normalized_rx = _alternation(list(self.normalized_rules))
        model["unk_id"] = 0
        spec["added_tokens"] = []
        shell = tokenizers.Tokenizer.from_str(json.dumps(spec))
        self.normalizer: Any = shell.normalizer
        self.pre_tokenizer: Any = shell.pre_tokenizer
        tensors = _read_safetensors(root / "model.safetensors")
        table = tensors.get("embeddings")
        if table is None:
            raise Unsupported("model.safetensors has no embeddings")
        self.embedding = table.astype(np.float32) if table.dtype == np.int8 else table
        self.mapping = tensors.get("mapping")
        self.weights = tensors.get("weights")
        self.normalize = bool(config.get("normalize", False))
        self.max_length = max_length
        lengths = np.fromiter((len(p) for p in self.pieces), dtype=np.int64, count=len(self.pieces))
        self.median_token_length = int(np.median(lengths))
        self._words: dict[str, list[int]] = {}

    @property
    def dim(self) -> int:
        return int(self.embedding.shape[1])

    def _segment(self, word: str) -> list[int]:
        """The ids of the best segmentation of one word (tokenizers' Unigram Viterbi, unknown runs fused)."""
        cached = self._words.get(word)
        if cached is not None:
            return cached
        n = len(word)
        best = [0.0] + [float("-inf")] * n
        back: list[tuple[int, int]] = [(0, -1)] * (n + 1)
        pieces, scores, unk_score, reach = self.pieces, self.scores, self.unk_score, self.reach
        for s in range(n):
            base = best[s]
            if base == float("-inf"):
                continue
            single = False
            for e in range(s + 1, min(n, s + max(1, reach.get(word[s : s + 2], 0))) + 1):
                pid = pieces.get(word[s:e])
                if pid is None:
                    continue
                single = single or e == s + 1
                score = base + scores[pid]
                if score > best[e]:
                    best[e], back[e] = score, (s, pid)
            if not single:
                score = base + unk_score
                if score > best[s + 1]:
                    best[s + 1], back[s + 1] = score, (s, -1)
        unk = self.unk_id if self.unk_id is not None else -1
        path: list[tuple[int, int]] = []
        e = n
        while e > 0:
            s, pid = back[e]
            path.append((s, e if pid != -1 else -e))
            e = s
        path.reverse()
        # As tokenizers does: consecutive nodes with the unknown id (unknown characters, and real pieces that
        # share that id) are fused into one string, and every string is then looked up in the vocabulary.
        out: list[int] = []
        run_start: int | None = None
        for s, signed_end in path:
            end = abs(signed_end)
            pid = -1 if signed_end < 0 else pieces[word[s:end]]
            if pid == -1 or pid == unk:
                run_start = s if run_start is None else run_start
                continue
            if run_start is not None:
                out.append(pieces.get(word[run_start:s], unk))
                run_start = None
            out.append(pid)
        if run_start is not None:
            out.append(pieces.get(word[run_start:], unk))
        if len(self._words) < WORD_CACHE:
            self._words[word] = out
        return out

    def tokenize(self, text: str) -> list[int]:
        """The ids model2vec's tokenize gives: cut, tokenized, truncated, unknown ids dropped."""
        text = text[: self.max_length * self.median_token_length]
        ids: list[int] = []
        at = 0
        for m in self.added_rx.finditer(text) if self.added_rx is not None else ():
            self._words_of(text[at : m.start()], ids)
            ids.append(self.added[m.group(0)])
            at = m.end()
        self._words_of(text[at:], ids)
        ids = ids[: self.max_length]
        return [i for i in ids if i != self.unk_id] if self.unk_id is not None else ids

    def _words_of(self, text: str, ids: list[int]) -> None:
        """Append the ids of a stretch of text without added tokens (normalized, split into words, segmented)."""
        if not text or len(ids) >= self.max_length:
            return
        normalized = self.normalizer.normalize_str(text) if self.normalizer is not None else text
        at = 0
        for m in self.normalized_rx.finditer(normalized) if self.normalized_rx is not None else ():
            single_word, lstrip, rstrip = self.normalized_rules[m.group(0)]
            start, stop = m.start(), m.end()
            if single_word and ((start > 0 and normalized[start - 1].isalnum()) or (stop < len(normalized) and normalized[stop].isalnum())):
                continue
            if start < at:
                continue
            while lstrip and start > at and normalized[start - 1].isspace():
                start -= 1
            while rstrip and stop < len(normalized) and normalized[stop].isspace():
                stop += 1
            self._pieces_of(normalized[at:start], ids)
            ids.append(self.added[m.group(0)])
            at = stop
        self._pieces_of(normalized[at:], ids)

    def _pieces_of(self, normalized: str, ids: list[int]) -> None:
        if not normalized:
            return
        words = self.pre_tokenizer.pre_tokenize_str(normalized) if self.pre_tokenizer is not None else [(normalized, None)]
        for word, _ in words:
            ids.extend(self._segment(word))
            if len(ids) >= self.max_length:
                return

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        self.tokens_read = 0  # this call's token count, read by the worker for the usage records
        for row, text in enumerate(texts):
            ids = self.tokenize(text)
            self.tokens_read += len(ids)
            if not ids:
                continue
            index = np.asarray(ids, dtype=np.int64)
            vectors = self.embedding[self.mapping[index] if self.mapping is not None else index]
            if self.weights is not None:
                vectors = vectors * self.weights[index][:, None]
            out[row] = vectors.mean(axis=0)
        if self.normalize:
            out = out / (np.linalg.norm(out, axis=1, keepdims=True) + 1e-32)
        return out
