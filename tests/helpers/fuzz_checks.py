"""Schemathesis hook module (SCHEMATHESIS_HOOKS): the checks and request hooks this API needs.

- The server-error check: the spec answers its business errors (1001 agent not found, 1002 agent busy,
  2001 LLM error, 3001 tool not found, 4001 channel error) with HTTP 500 and that code in the envelope; only
  those are allowed, and the documented 503 with Retry-After (the database stayed locked past the wait: nothing
  was saved, retry; it happens when the machine is loaded). Any other 5xx (a bare `{"code":500,...}` or
  anything not in the envelope) fails.
- Valid input may be refused only as the spec fixes it (DOCUMENTED_REFUSALS: a 400 by its message) or, on the few
  operations whose rules OpenAPI 3.0 cannot state, as unprocessable (UNPROCESSABLE: a 422 the operation documents).
- A fresh `Idempotency-Key` per request: the server replays a key's first answer and refuses the key with
  another body (422), as documented; schemathesis draws keys from a small space and reuses them across
  requests with different bodies, which tests its generator, not the server. A key the fuzzer made invalid
  on purpose is left as is, so the 400 for a bad key is still checked.
- The fuzzing identity stays signed in: an admin's password reset ends the user's JWTs and tokens, so a reset
  of the fuzzing user's own password (FUZZ_SELF_ID) goes to another user's (FUZZ_STAND_IN_ID) instead; without
  that every request after it would be a 401 that passes every check and tests nothing.
- `application/zip` bodies and parts (a skill archive's upload, a memory import) are drawn as the document describes
  them: a ZIP with one SKILL.md and its front matter `name:`, and memory entries beside it (one media type has one
  generator); schemathesis has no ZIP generator and would send random bytes.
- SSE operations answer every error as HTTP 200 with one `error` frame `{message, code}` (decisions.md,
  "Chat stream (SSE)"). The stock checks that read the HTTP status (negative_data_rejection, ignored_auth,
  missing_required_header) are switched off for them (tests/test_fuzz_openapi.fuzz_config) and replaced here
  by the same checks read from the frame: invalid input (a missing token included) must end in an `error`
  frame with a 4xx code, the request without its token in one with 401.
"""

from __future__ import annotations

import html
import io
import json
import os
import uuid
import zipfile
from typing import Any

import jsonschema
import requests
import schemathesis
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import has_only_additional_properties_in_non_body_parameters, positive_data_acceptance

BUSINESS_CODES = {1001, 1002, 2001, 3001, 4001}


@st.composite
def _zip_uploads(draw: Any) -> bytes:
    """A ZIP as the document describes both of its ZIP uploads (`application/zip`; one media type has one generator,
    so one archive serves both): a skill archive (POST /skills/install/upload: one SKILL.md with a front matter
    `name:`, at the root or one folder down, and a few other files) that is also a memory export (the memory
    import: MEMORY.md and memory/** entries beside it, anything else reported as refused). schemathesis has no ZIP
    generator of its own: without this every drawn `application/zip` would be random bytes."""
    name = draw(st.from_regex(r"[a-z0-9][a-z0-9_-]{0,30}", fullmatch=True))
    text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=120)
    description = draw(text).replace("\n", " ").replace(":", " ")
    folder = draw(st.sampled_from(["", f"{name}/"]))
    others = draw(st.dictionaries(st.from_regex(r"[a-z]{1,8}\.(txt|py|md)", fullmatch=True), st.binary(max_size=200), max_size=3))
    memory = draw(st.dictionaries(st.from_regex(r"(memory/[a-z]{1,8}|MEMORY)\.md", fullmatch=True), st.binary(max_size=64), max_size=3))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{folder}SKILL.md", f"---\nname: {name}\ndescription: {description}\n---\n{draw(text)}\n")
        for path, data in others.items():
            if path != "SKILL.md":
                archive.writestr(folder + path, data)
        for path, data in memory.items():
            archive.writestr(path, data)
    return buffer.getvalue()


schemathesis.openapi.media_type("application/zip", _zip_uploads())
MAX_KEY_LENGTH = 255  # platform_server.idempotency.MAX_KEY_LENGTH (the hook module does not import the server)


@schemathesis.check
def no_server_error_but_business_codes(ctx: Any, response: Any, case: Any) -> bool | None:
    """5xx only for the spec's business error codes."""
    if response.status_code < 500:
        return None
    try:
        code = json.loads(response.content).get("code")
    except (ValueError, AttributeError):
        code = None
    if response.status_code == 500 and code in BUSINESS_CODES:
        return None
    if response.status_code == 503 and code == 503 and response.headers.get("retry-after"):
        return None  # the documented busy answer (a write met the database lock past its wait): retry, nothing saved
    raise AssertionError(f"Server error {response.status_code}: {response.content[:300]!r}")


# Refusals of valid input that the spec itself fixes as a 400, by operation and message, each with the line that
# demands it: the stock positive_data_acceptance gives way to positive_data_acceptance_but_documented_refusals.
DOCUMENTED_REFUSALS: dict[str, tuple[str, str]] = {
    # decisions.md, setup: "Once an admin exists it answers 400 `Already initialized`" (the fuzzed server has one)
    "POST /api/v1/setup/init": ("Already initialized", "decisions.md: Once an admin exists it answers 400 `Already initialized`"),
    # decisions.md, wiki source directories: "the only folders a KB may link ... Outside every root: 400" (the fuzzed
    # server lists no root, so every folder is outside every root)
    "PUT /api/v1/wiki/knowledge-bases/{id}/source-directory": (
        "No folder may be linked: the administrator lists the allowed folders in the wiki_source_roots setting "
        "(env PLATFORM_WIKI_SOURCE_ROOTS, comma separated)",
        "decisions.md: Setting `wiki_source_roots`: the only folders a KB may link. ... Outside every root: 400",
    ),
}


# Operations whose valid input can still be unprocessable in a way OpenAPI 3.0 cannot state, answered 422 (never 400)
# and documented so on the operation (web.openapi_statuses.UNPROCESSABLE); each with why the document cannot say it.
UNPROCESSABLE: dict[str, str] = {
    # 3.0 has no propertyNames: a skill's `files` keys must be bundle paths (relative, not SKILL.md, no file where
    # another key makes a folder)
    "POST /api/v1/skills": "a bundle's file paths (the keys of `files`)",
    "PUT /api/v1/skills/{id}": "a bundle's file paths (the keys of `files`)",
    # 3.0's `items` is one schema (no tuples, no `contains`): "extract first, each step after the one it needs" and
    # YAML text that must parse into a definition have no JSON Schema form
    "POST /api/v1/wiki/knowledge-bases/{kbId}/pipelines": "a pipeline's step order and its YAML text",
    # a KB's chunkOverlap must stay under half its chunkSize: two values (one maybe stored) JSON Schema cannot relate
    "PUT /api/v1/wiki/knowledge-bases/{id}/config": "a KB's chunk overlap beside its chunk size",
    # a page's new slug needs a letter or digit of any script: 3.0's patterns (no `u` flag) cannot name them
    "POST /api/v1/wiki/knowledge-bases/{kbId}/pages/{slug}/rename": "a slug's letters of any script",
    # a team's members must name an agent besides its lead: 3.0 cannot relate an array's items to another field
    "POST /api/v1/teams": "a member besides the lead",
    "PUT /api/v1/teams/{teamId}": "a member besides the lead",
    # a cron expression's pattern cannot know the months' lengths: `0 0 31 2 *` matches it and names no date
    **{op: "a cron expression naming no date" for op in ("POST /api/v1/cron-jobs", "PUT /api/v1/cron-jobs/{id}",
                                                          "POST /api/v1/triggers", "PUT /api/v1/triggers/{id}")},
}


def breaks_its_path_parameters(case: Any) -> bool:
    """Whether a path value breaks its parameter's own schema: the stateful phase carries values between answers
    along links it infers by name (the OpenAI models list's `id`, a model name, into `/models/{id}`, a Long), and
    such a request is not valid input, whatever phase it came from. A path value is text on the wire; a null carried
    over (a list row's empty `templateId` into `/templates/{id}/apply`) goes out as the text `None`."""
    given = case.path_parameters or {}
    for parameter in case.operation.path_parameters:
        value = given.get(parameter.name)
        if value is None and parameter.name in given:
            value = "None"  # what goes out for a null
        schema = parameter.definition.get("schema") or {}
        if value is not None and not jsonschema.Draft4Validator(schema).is_valid(str(value) if schema.get("type") == "string" else value):
            return True
    return False


@schemathesis.check
def positive_data_acceptance_but_documented_refusals(ctx: Any, response: Any, case: Any) -> bool | None:
    """The stock positive_data_acceptance, except the 400s the spec fixes for valid input (DOCUMENTED_REFUSALS) and
    a request whose path value breaks its parameter's schema (an inferred link's, breaks_its_path_parameters)."""
    if response.status_code == 400 and breaks_its_path_parameters(case):
        return None
    if case.operation.label in UNPROCESSABLE and response.status_code == 422:
        return None  # the definition does not hold together: documented, and told apart from a malformed request (400)
    refusal = DOCUMENTED_REFUSALS.get(case.operation.label)
    if refusal is not None and response.status_code == 400:
        try:
            msg = json.loads(response.content).get("msg")
        except (ValueError, AttributeError):
            msg = None
        if msg == refusal[0]:
            return None
    return positive_data_acceptance(ctx, response, case)


def _valid_key(key: object) -> bool:
    return isinstance(key, str) and 0 < len(key.strip()) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable()


@st.composite
def _material_text(draw: Any, kind: str) -> bytes:
    """A wiki material as its part's text type says (POST .../raw/upload, web.openapi_inputs.WIKI_MATERIAL_TYPES): UTF-8
    text that says something (a material with no text is refused, as the document's description says), as HTML
    markup for text/html. schemathesis has no generator for text parts and would send its image samples."""
    words = draw(st.from_regex(r"[A-Za-z0-9]", fullmatch=True)) + draw(
        st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=200)
    )
    return (f"<p>{html.escape(words)}</p>" if kind == "html" else words).encode("utf-8")


for _kind in ("plain", "markdown", "csv", "html"):
    schemathesis.openapi.media_type(f"text/{_kind}", _material_text(_kind))


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    """Each request's valid Idempotency-Key made unique (same length where it can be), the invalid ones kept."""
    headers = case.headers or {}
    for name in [n for n in headers if n.lower() == "idempotency-key"]:
        key = headers[name]
        if _valid_key(key):
            fresh = uuid.uuid4().hex
            headers[name] = (fresh + key)[: max(len(key), len(fresh))][:MAX_KEY_LENGTH]
    own, stand_in = os.environ.get("FUZZ_SELF_ID"), os.environ.get("FUZZ_STAND_IN_ID")
    params = case.path_parameters or {}
    if own and stand_in and case.path.endswith("/reset-password") and str(params.get("id")) == own:
        params["id"] = stand_in
    # Neither change alters what the case tests: without this, schemathesis would revalidate the edited case and
    # could relabel a negative one ("Missing `Authorization`") as positive, then send the CLI's token after all.
    case._sync_validated_hashes()


def _frames(response: Any) -> list[tuple[str, Any]]:
    """The (event, data) frames of an event-stream answer."""
    return _frames_text(response.content.decode("utf-8", "replace"))


def _frames_text(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for block in text.split("\n\n"):
        event, data = "message", []
        for line in block.splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            try:
                out.append((event, json.loads("\n".join(data))))
            except ValueError:
                out.append((event, "\n".join(data)))
    return out


def _is_stream(response: Any) -> bool:
    """Whether the answer is an event stream (schemathesis keeps headers lowercased, each a list)."""
    values = response.headers.get("content-type") or [""]
    return str(values[0]).startswith("text/event-stream")


def _error_code(response: Any) -> int | None:
    """The code of the stream's `error` frame when the stream is one error frame, else None."""
    frames = _frames(response)
    if len(frames) == 1 and frames[0][0] == "error" and isinstance(frames[0][1], dict):
        code = frames[0][1].get("code")
        return code if isinstance(code, int) else None
    return None


@schemathesis.check
def sse_negative_data_rejection(ctx: Any, response: Any, case: Any) -> bool | None:
    """negative_data_rejection for an SSE operation: schema-violating input ends in a 4xx `error` frame."""
    meta = getattr(case, "meta", None)
    if not _is_stream(response) or meta is None or not meta.generation.mode.is_negative:
        return None
    if has_only_additional_properties_in_non_body_parameters(case):  # as the stock check: unknown query names are ignored
        return None
    code = _error_code(response)
    if code is None or not 400 <= code < 500:
        raise AssertionError(f"Invalid data should have been refused with a 4xx `error` frame; got {response.content[:300]!r}")
    return None


@schemathesis.check
def sse_ignored_auth(ctx: Any, response: Any, case: Any) -> bool | None:
    """ignored_auth for an SSE operation: the same request without its token ends in a 401 `error` frame."""
    if not _is_stream(response) or case.operation.definition.raw.get("security") == []:
        return None
    req = response.request
    headers = {k: v for k, v in req.headers.items() if k.lower() != "authorization"}
    url = requests.utils.urlparse(req.url)
    query = "&".join(p for p in (url.query or "").split("&") if p and not p.startswith("token="))
    # Read the probe's first frame only: a stream that (wrongly) stays open must not hold the run.
    with requests.request(req.method, url._replace(query=query).geturl(), headers=headers, data=req.body, timeout=20, stream=True) as probe:
        first = b""
        for chunk in probe.iter_content(chunk_size=None):
            first += chunk
            if b"\n\n" in first or len(first) > 65536:
                break
    frames = _frames_text(first.decode("utf-8", "replace"))[:1]
    code = frames[0][1].get("code") if frames and frames[0][0] == "error" and isinstance(frames[0][1], dict) else None
    if code != 401:
        raise AssertionError(f"Without a token {case.operation.label} should end in a 401 `error` frame; got {first[:300]!r}")
    return None
