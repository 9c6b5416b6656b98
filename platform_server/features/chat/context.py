"""Context that fits: each model call's messages built within the model's window.

The window is the smallest of the turn's targets (a failover target gets the same request): the
model's maxInputTokens, the embedded model's own context, or `chat_context_default_tokens`; the
answer's reserve comes off it. Within that budget: the system prompt (at most half), the tools
(dropped from the end when they leave no room), then the newest turns kept whole. When the history
does not fit, the older turns are compacted into a summary made by the model once, stored on the
conversation and reused by later calls until more must go (the kept turns then fill at most half the
room, so the next compaction is several turns away). A failed summary call cuts those turns with a
note instead. Long tool results are cut, with a note saying how much.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, ParamSpec, TypeVar

from platform_server.blocking import run_blocking
from platform_server.config import Config
from platform_server.db import database
from platform_server.features.chat import history
from platform_server.features.chat.history import Item, TurnGroup
from platform_server.features.chat.store import TurnStore
from platform_server.features.conversations.models import Conversation
from platform_server.features.models.runtime import LlmRouter, ModelTarget
from platform_server.features.usage.meter import UsageAccount
from platform_server.integrations.llm import ChatMessage, ChatRequest, LlmError, ToolSpec, local, ollama, tokens
from platform_server.integrations.llm.tokens import IMAGE_TOKENS, TokenCounter
from platform_server.json_types import JsonObject

if TYPE_CHECKING:
    from platform_server.features.chat.turn_setup import TurnSetup

log = logging.getLogger(__name__)

KEEP_SHARE = 0.5  # after a compaction the kept turns fill at most this share of the room
MIN_WINDOW = 256
SUMMARY_INSTRUCTIONS = (
    "You compact conversations. Summarise the conversation below for the assistant that will continue it: "
    "what the user wants, the facts, names, numbers and decisions, what the tools returned, and what is "
    "still open. Merge the summary so far with the new part. Plain text, at most {words} words."
)
SUMMARY_HEADER = "## Earlier in this conversation (a summary; the turns it replaces are no longer shown)\n\n"
CUT_NOTE = "({count} earlier messages of this conversation were left out to fit the model's context.)"
TRUNCATED_NOTE = "\n[... {cut} of {total} characters cut to fit the model's context ...]\n"
_SUMMARY_SQL = (
    "SELECT s.upto_message_id, s.summary, s.messages FROM chat_context_summary s WHERE s.conversation_id = ?"
    " AND EXISTS (SELECT 1 FROM message m WHERE m.id = s.upto_message_id)"  # a cleared conversation drops it
)

R = TypeVar("R")
P = ParamSpec("P")


@dataclass(frozen=True)
class Window:
    """How many tokens a call may send, and the counter that measures them."""

    tokens: int
    reserve: int
    counter: TokenCounter

    @property
    def budget(self) -> int:
        return self.tokens - self.reserve

    @property
    def summary_cap(self) -> int:
        """A summary's size: it is an answer (within the reserve) and a part of later requests."""
        return max(32, min(self.reserve, self.budget // 4))


@dataclass
class Summary:
    upto: int
    text: str
    messages: int


@dataclass
class Plan:
    """What one model call sends, and what was left out of it."""

    system: str
    tools: list[ToolSpec]
    keep: list[TurnGroup]
    compact: list[TurnGroup]
    fixed_tokens: int  # system prompt, tools, extra messages
    summary: Summary | None = None
    summary_tokens: int = 0
    summary_new: int = 0  # stored messages compacted by this call
    cut: int = 0  # stored messages left out without a summary
    cut_tokens: int = 0
    truncated: int = 0
    truncated_tokens: int = 0
    tools_dropped: list[str] = field(default_factory=list)
    system_truncated: bool = False


@dataclass
class Built:
    messages: list[ChatMessage]
    tools: list[ToolSpec]
    report: JsonObject | None  # the `context` event's data, when anything was summarised or left out


# ---- the window -----------------------------------------------------------------------------------


_local_counters: dict[tuple[str, str], TokenCounter] = {}


def _local_counter(base_url: str, model_name: str) -> TokenCounter:
    """The embedded model's tokenizer (its GGUF resolved once), else the estimate."""
    key = (base_url, model_name)
    counter = _local_counters.get(key)
    if counter is None:
        try:
            counter = tokens.llama_counter(local.LocalClient(base_url).model_path(model_name))
        except LlmError:
            counter = tokens.ESTIMATE
        _local_counters[key] = counter
    return counter


def window_for(config: Config, targets: list[ModelTarget]) -> Window:
    """The smallest window of the targets, its answer reserve and the counter that fits them all."""
    sizes, any_local, all_local = [], False, bool(targets)
    for t in targets:
        size = t.max_input_tokens or config.chat_context_default_tokens
        if t.protocol == "ollama":  # Ollama cuts a prompt past its num_ctx without a word: fit within it
            size = min(size, ollama.context_cap(t.settings, config.ollama_num_ctx_default))
        if t.protocol == "local":
            any_local, size = True, min(size, local.N_CTX)
        else:
            all_local = False
        sizes.append(size)
    window = max(min(sizes, default=config.chat_context_default_tokens), MIN_WINDOW)
    reserve = min(config.chat_answer_reserve_tokens, window // 4)
    if any_local:  # the embedded model keeps room for its own answer: never send into that room
        reserve = max(reserve, min(local.DEFAULT_MAX_TOKENS + 16, window // 2))
    # The model's own tokenizer only when every target is that model; the estimate is the safe side otherwise.
    counter = _local_counter(targets[0].base_url, targets[0].model_name) if all_local else tokens.ESTIMATE
    return Window(window, max(reserve, 0), counter)


# ---- counting and cutting -------------------------------------------------------------------------


def _flat(m: ChatMessage) -> tuple[str, int]:
    """The text a message costs, and its images."""
    text = m.text() + "".join(c.name + c.arguments for c in m.tool_calls) + (m.name or "")
    images = sum(1 for p in m.content if p.get("type") == "image") if isinstance(m.content, list) else 0
    return text, images


def message_tokens(counter: TokenCounter, m: ChatMessage, row_id: int = 0) -> int:
    """A message's tokens; a stored message's count is cached by its row (it never changes)."""
    text, images = _flat(m)
    counted = counter.cached((row_id, len(text), images), text) if row_id else counter.count(text)
    return counter.overhead + counted + images * IMAGE_TOKENS


def tool_tokens(counter: TokenCounter, spec: ToolSpec) -> int:
    """A tool's tokens (its JSON); counted once per name, description and schema object (the registry keeps them)."""
    key = (-2, hash((spec.name, spec.description)), id(spec.parameters))
    wire = {"name": spec.name, "description": spec.description, "parameters": spec.parameters}
    return counter.overhead + counter.cached(key, lambda: json.dumps(wire))


def shorten(counter: TokenCounter, text: str, limit: int) -> str:
    """`text` within `limit` tokens: its head and tail around a note saying how much was cut."""
    size = counter.count(text)
    if size <= limit:
        return text
    keep = int(len(text) * limit / size * 0.9)
    for _ in range(8):
        head, tail = keep * 2 // 3, keep - keep * 2 // 3
        out = text[:head] + TRUNCATED_NOTE.format(cut=len(text) - keep, total=len(text)) + (text[len(text) - tail :] if tail else "")
        if counter.count(out) <= limit or keep == 0:
            return out
        keep = int(keep * 0.7)
    return TRUNCATED_NOTE.format(cut=len(text), total=len(text))


def _cut_item(counter: TokenCounter, item: Item, limit: int) -> tuple[Item, int]:
    """The item with its text cut to about `limit` tokens, and the tokens that saved."""
    m = item.message
    before = message_tokens(counter, m, item.row_id)
    text_limit = max(limit - before + counter.count(m.text()), 16)  # what is not text (calls, images) stays
    if isinstance(m.content, list):
        parts = [{**p, "text": shorten(counter, str(p.get("text", "")), text_limit)} if p.get("type") == "text" else p for p in m.content]
        new = ChatMessage(m.role, parts, m.tool_calls, m.tool_call_id, m.name)
    else:
        new = ChatMessage(m.role, shorten(counter, m.text(), text_limit), m.tool_calls, m.tool_call_id, m.name)
    return Item(0, new), before - message_tokens(counter, new)


def _count_group(counter: TokenCounter, group: TurnGroup) -> int:
    group.tokens = sum(message_tokens(counter, i.message, i.row_id) for i in group.items)
    return group.tokens


# ---- fitting (pure, may run in a worker thread) ---------------------------------------------------


def fit(
    win: Window,
    system_prompt: str,
    tools: list[ToolSpec],
    extra: list[ChatMessage],
    groups: list[TurnGroup],
    summary: Summary | None,
) -> Plan:
    """Decide what one call sends: everything when it fits, else the newest turns and what to compact."""
    c, budget = win.counter, win.budget
    plan = Plan(system_prompt, list(tools), groups, [], 0, summary)
    # the same prompt for every call of an answer: counted once (a str caches its hash)
    system_tokens = c.cached((-1, hash(system_prompt), len(system_prompt)), system_prompt) + c.overhead if system_prompt else 0
    if system_tokens > budget // 2:
        plan.system, plan.system_truncated = shorten(c, system_prompt, budget // 2 - c.overhead), True
        system_tokens = c.count(plan.system) + c.overhead
    sizes = [tool_tokens(c, spec) for spec in plan.tools]
    while plan.tools and system_tokens + sum(sizes) > budget * 3 // 4:  # a quarter at least for the conversation
        plan.tools_dropped.insert(0, plan.tools.pop().name)
        sizes.pop()
    plan.fixed_tokens = system_tokens + sum(sizes) + sum(message_tokens(c, m) for m in extra)
    avail = budget - plan.fixed_tokens
    tool_cap = max(64, avail // 3)
    cuts: list[tuple[int, int]] = []  # per group: results cut, tokens saved (reported for the groups sent)
    for group in groups:
        cut, saved = 0, 0
        for n, item in enumerate(group.items):
            if item.message.role == "tool" and message_tokens(c, item.message, item.row_id) > tool_cap:
                group.items[n], less = _cut_item(c, item, tool_cap)
                cut, saved = cut + 1, saved + less
        cuts.append((cut, saved))
        _count_group(c, group)
    if summary is not None:
        summary.text = shorten(c, summary.text, win.summary_cap)
        plan.summary_tokens = c.count(SUMMARY_HEADER + summary.text)
    if sum(g.tokens for g in groups) + plan.summary_tokens <= avail or not groups:
        plan.truncated, plan.truncated_tokens = sum(n for n, _ in cuts), sum(t for _, t in cuts)
        return plan
    room = avail - max(win.summary_cap + c.count(SUMMARY_HEADER), plan.summary_tokens)
    start, kept = len(groups) - 1, groups[-1].tokens
    while start > 0 and kept + groups[start - 1].tokens <= room * KEEP_SHARE:
        start -= 1
        kept += groups[start].tokens
    plan.keep, plan.compact = groups[start:], groups[:start]
    plan.truncated, plan.truncated_tokens = sum(n for n, _ in cuts[start:]), sum(t for _, t in cuts[start:])
    limit = room if plan.compact else avail - plan.summary_tokens
    _shrink(c, plan, groups[-1], limit)
    return plan


def _shrink(c: TokenCounter, plan: Plan, group: TurnGroup, limit: int) -> None:
    """The current turn within `limit`: cut its largest messages, then leave out its oldest calls."""
    for _ in range(12):
        if group.tokens <= limit:
            return
        n = max(range(len(group.items)), key=lambda i: message_tokens(c, group.items[i].message, group.items[i].row_id))
        size = message_tokens(c, group.items[n].message, group.items[n].row_id)
        if size <= 64:
            break
        first_cut = group.items[n].row_id != 0  # a cut message has no row: count each message once
        group.items[n], saved = _cut_item(c, group.items[n], max(size // 2, size - (group.tokens - limit)))
        plan.truncated, plan.truncated_tokens = plan.truncated + first_cut, plan.truncated_tokens + saved
        _count_group(c, group)
    while group.tokens > limit:  # many small calls: the oldest assistant call and its results go
        first = next((i for i, it in enumerate(group.items) if i and it.message.role == "assistant"), None)
        if first is None:
            break
        end = first + 1
        while end < len(group.items) and group.items[end].message.role == "tool":
            end += 1
        before = group.tokens
        del group.items[first:end]
        plan.cut, plan.cut_tokens = plan.cut + end - first, plan.cut_tokens + before - _count_group(c, group)


# ---- the stored summary ---------------------------------------------------------------------------


def stored_summary(conversation_db_id: int) -> Summary | None:
    row = database.execute_sql(_SUMMARY_SQL, (conversation_db_id,)).fetchone()
    return Summary(int(row[0]), row[1], int(row[2])) if row else None


def _render(item: Item) -> str:
    m = item.message
    if m.role == "tool":
        return f"Tool result ({m.name or 'tool'}): {m.text()}"
    calls = "".join(f" [called {c.name} with {c.arguments}]" for c in m.tool_calls)
    return f"{m.role.capitalize()}: {m.text()}{calls}"


def summary_request(win: Window, previous: Summary | None, groups: list[TurnGroup]) -> ChatRequest:
    """The compaction call, itself within the budget: each message cut to its share, the oldest left out last."""
    c = win.counter
    instructions = SUMMARY_INSTRUCTIONS.format(words=max(20, int(win.summary_cap * 0.6)))
    head = f"Summary so far:\n{previous.text}\n\n" if previous else ""
    room = win.budget - c.count(instructions) - c.count(head) - 3 * c.overhead - 16
    lines = [_render(item) for g in groups for item in g.items]
    share = max(48, room // max(len(lines), 1))
    lines = [shorten(c, line, share) for line in lines]
    sizes = [c.count(line) + 1 for line in lines]
    left_out = 0
    while lines and sum(sizes) > room:
        lines.pop(0)
        sizes.pop(0)
        left_out += 1
    note = f"({left_out} older messages left out)\n" if left_out else ""
    body = head + "Conversation to add:\n" + note + "\n".join(lines)
    messages = [ChatMessage("system", instructions), ChatMessage("user", body)]
    return ChatRequest(model="", messages=messages, max_tokens=win.summary_cap, thinking_level="off")


async def _off_loop(counter: TokenCounter, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Counting with a real tokenizer takes milliseconds per message: a worker thread does it."""
    return await run_blocking(functools.partial(fn, *args, **kwargs)) if counter.blocking else fn(*args, **kwargs)


async def _compact(
    router: LlmRouter, store: TurnStore, usage: UsageAccount, conv: Conversation, targets: list[ModelTarget], win: Window, plan: Plan
) -> Summary | None:
    """One summary call over the previous summary and the turns to compact (counted on the turn's `usage`);
    stored. None when it failed."""
    req = await _off_loop(win.counter, summary_request, win, plan.summary, plan.compact)
    try:
        _, result = await router.chat(targets, req, usage)
        text = (result.content or "").strip()
        if not text:
            raise LlmError("the model answered an empty summary")
    except Exception as exc:  # noqa: BLE001 - a failed summary falls back to cutting, the turn goes on
        log.warning("compacting conversation %s failed: %s", conv.conversation_id, exc)
        return None
    rows = sum(g.rows for g in plan.compact)
    summary = Summary(plan.compact[-1].last_id, text, rows + (plan.summary.messages if plan.summary else 0))
    summary.text = await _off_loop(win.counter, shorten, win.counter, text, win.summary_cap)
    store.replace_summary(conv.id, summary.upto, summary.text, summary.messages)
    plan.summary_new = rows
    return summary


# ---- the model's messages -------------------------------------------------------------------------


async def build(
    router: LlmRouter,
    config: Config,
    store: TurnStore,
    usage: UsageAccount,
    conv: Conversation,
    setup: TurnSetup,
    extra: list[ChatMessage] | None = None,
    use_tools: bool = True,
) -> Built:
    """The messages (and tools) of one model call, within the model's window (a compaction's summary call
    counted on `usage`)."""
    win = window_for(config, setup.targets)
    summary = None if conv.id in store.without_summary else stored_summary(conv.id)
    groups = history.turn_groups(conv, setup.vision, summary.upto if summary else 0)
    extra = list(extra or [])
    plan = await _off_loop(win.counter, fit, win, setup.system_prompt, setup.specs if use_tools else [], extra, groups, summary)
    if plan.compact:
        made = await _compact(router, store, usage, conv, setup.targets, win, plan)
        if made is None:
            plan.cut += sum(g.rows for g in plan.compact)
            plan.cut_tokens += sum(g.tokens for g in plan.compact)
        else:
            plan.summary = made
            plan.summary_tokens = win.counter.count(SUMMARY_HEADER + made.text)
    return _assemble(win, plan, extra)


def _assemble(win: Window, plan: Plan, extra: list[ChatMessage]) -> Built:
    system = plan.system
    if plan.summary is not None:
        system = (system + "\n\n" if system else "") + SUMMARY_HEADER + plan.summary.text
    if plan.cut:
        system = (system + "\n\n" if system else "") + CUT_NOTE.format(count=plan.cut)
    messages = [ChatMessage("system", system)] if system else []
    messages += [item.message for g in plan.keep for item in g.items]
    messages += extra
    return Built(messages, plan.tools, _report(win, plan))


def _report(win: Window, plan: Plan) -> JsonObject | None:
    if not (plan.summary or plan.cut or plan.truncated or plan.tools_dropped or plan.system_truncated):
        return None
    kept_rows = sum(g.rows for g in plan.keep)
    kept_tokens = sum(g.tokens for g in plan.keep)
    return {
        "window": win.tokens,
        "reserve": win.reserve,
        "counter": win.counter.name,
        "tokens": plan.fixed_tokens + plan.summary_tokens + kept_tokens,
        "kept": {"messages": kept_rows, "tokens": kept_tokens},
        "summarised": {
            "messages": plan.summary.messages if plan.summary else 0,
            "tokens": plan.summary_tokens,
            "new": plan.summary_new,
        },
        "cut": {"messages": plan.cut, "tokens": plan.cut_tokens},
        "truncated": {"messages": plan.truncated, "tokens": plan.truncated_tokens},
        "toolsDropped": plan.tools_dropped,
        "systemTruncated": plan.system_truncated,
    }
