"""SKILL.md: a YAML-ish front matter block between `---` lines, then markdown instructions.

The front matter understands what skills use: `key: value` scalars (plain, quoted), inline lists
`[a, b]`, block lists (`- item`), one nested map level (`requires:` with `env`, `bins`, `secrets`)
and `|` / `>` block scalars. Anything else is kept as text; nothing is ever executed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from platform_server.web.errors import BadRequest

SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
BIN_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,127}$")
MAX_FRONT_LINES = 300
REQUIRE_KINDS = ("env", "bins", "secrets")
_KIND_ALIASES = {
    "env": "env",
    "envs": "env",
    "env_vars": "env",
    "environment": "env",
    "bins": "bins",
    "bin": "bins",
    "binaries": "bins",
    "commands": "bins",
    "secrets": "secrets",
    "secret": "secrets",
}
_PLAIN = re.compile(r"^[A-Za-z0-9_./@+-][A-Za-z0-9 _./@+,()-]*$")


@dataclass
class SkillDoc:
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    has_front_matter: bool = False

    def text(self, key: str) -> str | None:
        value = self.meta.get(key)
        if value is None or isinstance(value, (dict, list)):
            return None
        text = str(value).strip()
        return text or None


def slugify(text: str) -> str:
    """A slug of `[a-z0-9][a-z0-9_-]*` (at most 64 characters) from any text; "skill" when empty."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", text.strip().lower()).strip("-_")
    slug = re.sub(r"-{2,}", "-", slug)[:64].strip("-_")
    return slug or "skill"


def check_slug(name: str) -> str:
    if not SLUG_RE.match(name):
        raise BadRequest("name: must be a slug of lowercase letters, digits, '-' and '_' (at most 64, starting alphanumeric)")
    return name


# ---- parsing ------------------------------------------------------------------------------


def _split_inline_list(text: str) -> list[str]:
    items: list[str] = []
    current = ""
    quote: str | None = None
    for ch in text:
        if quote:
            current += ch
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            current += ch
        elif ch == ",":
            items.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        items.append(current)
    return [str(_scalar(i)) for i in items if i.strip()]


def _strip_comment(text: str) -> str:
    if text[:1] in "\"'":
        return text
    idx = text.find(" #")
    return text[:idx] if idx >= 0 else text


def _scalar(raw: str) -> Any:
    text = _strip_comment(raw.strip()).strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        try:
            return json.loads(text)
        except ValueError:
            return text[1:-1]
    if len(text) >= 2 and text[0] == "'" and text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if text.startswith("[") and text.endswith("]"):
        return _split_inline_list(text[1:-1])
    if text in ("true", "True", "yes"):
        return True
    if text in ("false", "False", "no"):
        return False
    if text in ("", "~", "null"):
        return None
    return text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block(lines: list[str], start: int, parent_indent: int) -> tuple[list[str], int]:
    """The lines indented deeper than parent_indent from `start` (blank lines included)."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > parent_indent):
        end += 1
    return lines[start:end], end


def _parse(lines: list[str]) -> Any:
    content = [ln for ln in lines if ln.strip() and not ln.strip().startswith("#")]
    if not content:
        return None
    base = min(_indent(ln) for ln in content)
    if content[0].strip().startswith("- ") or content[0].strip() == "-":
        return [_scalar(ln.strip()[1:]) for ln in content if _indent(ln) == base and ln.strip().startswith("-")]
    result: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or _indent(line) != base or ":" not in stripped:
            i += 1
            continue
        key, _, rest = stripped.partition(":")
        key = key.strip().strip("\"'")
        rest = rest.strip()
        child, end = _block(lines, i + 1, _indent(line))
        if rest in ("|", ">", "|-", ">-"):
            deep = min((_indent(c) for c in child if c.strip()), default=0)
            texts = [c[deep:] for c in child]
            joined = "\n".join(texts) if rest.startswith("|") else " ".join(t.strip() for t in texts if t.strip())
            result[key] = joined.strip("\n")
        elif rest == "" or rest.startswith("#"):
            result[key] = _parse(child)
        else:
            result[key] = _scalar(rest)
        i = end
    return result


def parse(text: str) -> SkillDoc:
    """Split SKILL.md into front matter (a dict) and body; text without front matter is all body."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return SkillDoc({}, text.strip("\n"), False)
    end = next((i for i in range(1, min(len(lines), MAX_FRONT_LINES + 1)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise BadRequest("SKILL.md: the front matter has no closing '---' line")
    meta = _parse(lines[1:end])
    if meta is not None and not isinstance(meta, dict):
        raise BadRequest("SKILL.md: the front matter must be a map of 'key: value' lines")
    return SkillDoc(meta or {}, "\n".join(lines[end + 1 :]).strip("\n"), True)


def requirements(meta: dict[str, Any], strict: bool = False) -> dict[str, list[str]]:
    """`requires` normalized to {env, bins, secrets}; with strict, a malformed name is a 400."""
    raw = meta.get("requires")
    out: dict[str, list[str]] = {k: [] for k in REQUIRE_KINDS}
    if raw is None:
        return out
    pairs: list[tuple[str, Any]] = []
    if isinstance(raw, dict):
        for key, value in raw.items():
            kind = _KIND_ALIASES.get(str(key).strip().lower())
            if kind is None:
                if strict:
                    raise BadRequest(f"requires: unknown kind '{key}' (use env, bins or secrets)")
                continue
            pairs.extend((kind, v) for v in (value if isinstance(value, list) else [value]))
    elif isinstance(raw, list):  # `- env:NAME`, `- secret:NAME`, `- bin:NAME` or a bare binary name
        for item in raw:
            prefix, sep, name = str(item).partition(":")
            kind = _KIND_ALIASES.get(prefix.strip().lower()) if sep else "bins"
            pairs.append((kind or "bins", name if sep else item))
    elif strict:
        raise BadRequest("requires: must be a map of env, bins and secrets")
    for kind, value in pairs:
        if value is None or str(value).strip() == "":
            continue
        name = str(value).strip()
        pattern = BIN_RE if kind == "bins" else ENV_RE
        if not pattern.match(name):
            if strict:
                raise BadRequest(f"requires.{kind}: '{name[:80]}' is not a valid name")
            continue
        if name not in out[kind]:
            out[kind].append(name)
    return out


# ---- writing ------------------------------------------------------------------------------


def _dump_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = "" if value is None else str(value)
    if text and _PLAIN.match(text) and text not in ("true", "false", "yes", "no", "null", "~") and not text.endswith(" "):
        return text
    return json.dumps(text, ensure_ascii=False)


def dump_meta(meta: dict[str, Any]) -> str:
    """Front matter text for a dict (scalars, lists, one nested map level)."""
    out: list[str] = []
    for key, value in meta.items():
        if value is None:
            continue
        if isinstance(value, dict):
            nested = {k: v for k, v in value.items() if v not in (None, [], {})}
            if not nested:
                continue
            out.append(f"{key}:")
            for sub, sv in nested.items():
                rendered = "[" + ", ".join(_dump_scalar(v) for v in sv) + "]" if isinstance(sv, list) else _dump_scalar(sv)
                out.append(f"  {sub}: {rendered}")
        elif isinstance(value, list):
            out.append(f"{key}: [" + ", ".join(_dump_scalar(v) for v in value) + "]")
        elif isinstance(value, str) and "\n" in value:
            out.append(f"{key}: |")
            out.extend("  " + ln for ln in value.splitlines())
        else:
            out.append(f"{key}: {_dump_scalar(value)}")
    return "\n".join(out)


def compose(meta: dict[str, Any], body: str) -> str:
    """A SKILL.md from front matter values and the instructions."""
    return f"---\n{dump_meta(meta)}\n---\n\n{body.strip()}\n"


def with_meta(text: str, updates: dict[str, Any]) -> str:
    """The SKILL.md with some front matter keys set; unchanged text when they already agree."""
    doc = parse(text)
    if all(doc.meta.get(k) == v for k, v in updates.items() if v is not None):
        return text
    meta = dict(doc.meta)
    for key, value in updates.items():
        if value is not None:
            meta[key] = value
    return compose(meta, doc.body)


def strip_fences(text: str) -> str:
    """Model output without a surrounding ```markdown fence."""
    stripped = text.strip()
    match = re.match(r"^```[A-Za-z]*\n(.*)\n```$", stripped, re.S)
    return match.group(1).strip() if match else stripped
