// Stored messages (MessageVO) as items the chat page draws: user bubbles, assistant turns (chat/turn.js) and
// the versions of a regenerated or edited exchange with their pager.
import { html } from "../ui.js";
import { AuthImage } from "./attachments.js";
import { CopyButton, TurnView } from "./turn.js";

function toolCallsOf(message) {
  const calls = message?.metadata?.toolCalls;
  return Array.isArray(calls) ? calls : [];
}

function assistantFrames(m) {
  const frames = [];
  const thinking = m.metadata?.reasoning || m.metadata?.thinking;
  if (thinking) frames.push({ event: "thinking_delta", data: { delta: String(thinking) } });
  if (m.content) frames.push({ event: "content_delta", data: { delta: m.content } });
  if (Array.isArray(m.metadata?.citations)) frames.push({ event: "citations", data: { citations: m.metadata.citations } });
  for (const c of toolCallsOf(m)) {
    const name = c.toolName || c.name || c.function?.name;
    const id = c.toolCallId || c.id;
    const approval = c.approval; // the call's approval card, kept on the stored call: pending or resolved in place
    if (approval?.pendingId) {
      frames.push({ event: "tool_approval_requested", data: { pendingId: approval.pendingId, toolName: name, arguments: c.arguments ?? "", reason: approval.reason, maxSeverity: approval.maxSeverity } });
      if (approval.decision && approval.decision !== "pending") {
        frames.push({ event: "tool_approval_resolved", data: { pendingId: approval.pendingId, decision: approval.decision } });
      }
      if (approval.decision === "pending") continue; // nothing ran yet
    }
    frames.push({ event: "tool_call_started", data: { toolCallId: id, toolName: name, arguments: c.arguments ?? c.function?.arguments ?? "" } });
    if (c.result !== undefined) {
      frames.push({ event: "tool_call_completed", data: { toolCallId: id, toolName: name, result: c.result, success: c.success !== false } });
    }
  }
  return frames;
}

function toolFrame(m) {
  const meta = m.metadata || {};
  return { event: "tool_call_completed", data: {
    toolCallId: meta.toolCallId || m.toolCallId, toolName: m.toolName || meta.toolName,
    result: m.content, success: !(meta.success === false || m.status === "failed"),
  } };
}

const isQuestion = (m) => m.role === "user" && !m.metadata?.command && !m.metadata?.continuation;

/** Messages split into exchanges, each starting at a question (approval commands stay inside). */
function exchanges(messages) {
  const out = [];
  for (const m of messages) {
    if (isQuestion(m) || !out.length) out.push([]);
    out[out.length - 1].push(m);
  }
  return out;
}

/**
 * Earlier versions by the exchange they belong to (the `versionOf` of its first question): each version is
 * the messages retired together (`metadata.branch`: a regenerated or edited question and everything after it);
 * versions stored before branches existed are one exchange each.
 */
function versionPool(retired) {
  const branches = new Map();
  const loose = new Map();
  for (const m of retired) {
    const branch = m.metadata.branch;
    const into = branch !== undefined && branch !== null ? branches : loose;
    const key = String(branch ?? m.metadata.versionOf);
    if (!into.has(key)) into.set(key, []);
    into.get(key).push(m);
  }
  const pool = new Map();
  const add = (key, version) => {
    if (!pool.has(key)) pool.set(key, []);
    pool.get(key).push(version);
  };
  for (const version of branches.values()) {
    const first = version.find(isQuestion) || version[0];
    add(String(first.metadata.versionOf ?? first.id), version);
  }
  for (const [key, messages] of loose) exchanges(messages).forEach((ex) => add(key, ex));
  const firstId = (v) => BigInt(v[0].id);
  for (const versions of pool.values()) versions.sort((a, b) => (firstId(a) < firstId(b) ? -1 : 1));
  return pool;
}

/**
 * Items for stored messages: {kind: "user", id, text, parts, retired}, {kind: "turn", turn} and
 * {kind: "versions", versions: [items], shown}. An exchange that was regenerated or edited (its earlier
 * versions stored with `metadata.retired` and one `versionOf`) shows its latest version with a pager to the
 * earlier ones; a version holds everything after its question too (the later messages belong to it, as in
 * ChatGPT). makeTurn() makes an empty Turn. Returns {items, turns}: turns, those of the latest versions.
 */
export function buildHistory(messages, makeTurn) {
  const live = messages.filter((m) => !m.metadata?.retired);
  const pool = versionPool(messages.filter((m) => m.metadata?.retired));
  return buildBranch(live, pool, makeTurn, new Set());
}

/** One version's messages; `open`: the exchanges whose pager encloses this one (not paged again inside). */
function buildBranch(messages, pool, makeTurn, open) {
  const exs = exchanges(messages);
  for (let i = 0; i < exs.length; i++) {
    const ex = exs[i];
    const key = isQuestion(ex[0]) ? String(ex[0].metadata?.versionOf ?? "") : "";
    if (!key || open.has(key) || !pool.has(key)) continue;
    const before = buildFlat(exs.slice(0, i).flat(), makeTurn);
    const inner = new Set(open).add(key);
    const versions = [...pool.get(key), exs.slice(i).flat()].map((ms) => buildBranch(ms, pool, makeTurn, inner));
    const item = { kind: "versions", versions: versions.map((v) => v.items), shown: versions.length - 1 };
    return { items: [...before.items, item], turns: [...before.turns, ...versions[versions.length - 1].turns] };
  }
  return buildFlat(messages, makeTurn);
}

/**
 * User bubbles, and one assistant Turn per run of assistant and tool messages. A tool result lands on the
 * card of the call it answers, even when it was stored after a later user message (a call resumed by /approve).
 */
function buildFlat(messages, makeTurn) {
  const owners = new Map(); // toolCallId -> Turn
  const items = [];
  const turns = [];
  let question = null;
  let turn = null;
  let group = [];
  const close = () => {
    if (!turn) return;
    const last = group[group.length - 1];
    const waiting = turn.waitingForApproval;
    const status = waiting ? "awaiting_approval" : last?.status && last.status !== "streaming" ? last.status : "completed";
    const sum = (key) => group.reduce((n, m) => n + (Number(m[key]) || 0), 0);
    const model = [...group].reverse().find((m) => m.runtimeModel)?.runtimeModel;
    const timing = [...group].reverse().find((m) => m.metadata?.timing)?.metadata.timing;
    const answer = [...group].reverse().find((m) => m.role === "assistant"); // the one a rating is stored with
    turn.apply({ event: "done", data: {
      status, runtimeModel: model, promptTokens: sum("promptTokens"), completionTokens: sum("completionTokens"), timing,
      assistantMessageId: answer?.id, rating: answer?.metadata?.rating ?? null, finishReason: answer?.metadata?.finishReason ?? null,
    } });
    turn.state.retired = Boolean(answer?.metadata?.retired); // an earlier version's: nothing to regenerate there
    turn = null;
    group = [];
  };
  const open = () => {
    if (!turn) {
      turn = makeTurn();
      if (question) turn.apply({ event: "meta", data: { userMessageId: question } }); // the question Regenerate asks anew
      items.push({ kind: "turn", turn });
      turns.push(turn);
    }
    return turn;
  };
  for (const m of messages) {
    // an approval's /approve or /deny (its card says it), a "continue" prompt (the answer goes on in its turn)
    if (m.role === "user" && (m.metadata?.command || m.metadata?.continuation)) continue;
    if (m.role === "user") {
      close();
      question = m.id;
      items.push({ kind: "user", id: m.id, text: m.content, parts: m.contentParts, retired: Boolean(m.metadata?.retired) });
    } else if (m.role === "assistant") {
      const t = open();
      group.push(m);
      assistantFrames(m).forEach((f) => t.apply(f));
      for (const c of toolCallsOf(m)) owners.set(String(c.toolCallId || c.id), t);
    } else if (m.role === "tool") {
      const frame = toolFrame(m);
      const owner = owners.get(String(frame.data.toolCallId));
      if (owner) owner.apply(frame);
      else { open().apply(frame); group.push(m); }
    }
  }
  close();
  return { items, turns };
}

/** The items on screen: a versions item contributes the version it shows. */
export function visibleItems(items) {
  return items.flatMap((item) => (item.kind === "versions" ? visibleItems(item.versions[item.shown]) : [item]));
}

/** A user message bubble; text and image parts, never HTML. */
export function UserBubble({ item, onEdit }) {
  const images = (item.parts || []).filter((p) => p && p.type === "image" && p.url);
  const partText = (item.parts || []).filter((p) => p && p.type === "text").map((p) => p.text).join("\n");
  const text = item.text || partText || "";
  return html`<div class="msg user" data-id=${item.id || ""} data-retired=${item.retired ? "1" : undefined}>
    <div class="bubble">
      ${images.length > 0 && html`<div class="msg-images">${images.map((p) => html`<${AuthImage} url=${p.url} alt=${p.name || "attachment"} />`)}</div>`}
      <div class="msg-text">${text}</div>
    </div>
    <div class="msg-actions" role="toolbar" aria-label="Message actions">
      <${CopyButton} label="Copy" text=${() => text} />
      ${onEdit && html`<button class="btn btn-small btn-ghost edit-question" type="button" onClick=${() => onEdit(item)}>Edit</button>`}
    </div>
  </div>`;
}

/** The edit-and-resend form that stands in for a question's bubble. */
function EditForm({ item, onCancel, onSend }) {
  const submit = (e) => {
    e.preventDefault();
    const value = e.currentTarget.elements.edit.value;
    if (value.trim()) onSend(item, value);
  };
  const focus = (el) => { if (el && !el.dataset.focused) { el.dataset.focused = "1"; el.focus(); } };
  return html`<form class="edit-form" onSubmit=${submit}>
    <textarea class="edit-box" name="edit" aria-label="Edit message" rows="3" ref=${focus} defaultValue=${item.text || ""}></textarea>
    <div class="actions">
      <button type="button" class="btn btn-small" onClick=${onCancel}>Cancel</button>
      <button type="submit" class="btn btn-small btn-primary">Send</button>
    </div>
  </form>`;
}

/**
 * Draws items. ctx: {actions (TurnView's), latest (the Turn Continue goes on with), canEdit(item), editing
 * (the item being edited), onEdit(item), onCancelEdit(), onResend(item, text), onEarlier(item), onShow()}.
 */
export function MessageItems({ items, ctx }) {
  return items.map((item) => {
    if (item.kind === "user") {
      if (ctx.editing === item) return html`<${EditForm} item=${item} onCancel=${ctx.onCancelEdit} onSend=${ctx.onResend} />`;
      return html`<${UserBubble} item=${item} onEdit=${ctx.canEdit(item) ? ctx.onEdit : null} />`;
    }
    if (item.kind === "turn") return html`<${TurnView} turn=${item.turn} latest=${item.turn === ctx.latest} actions=${ctx.actions} />`;
    if (item.kind === "earlier") {
      return html`<button type="button" class="btn btn-small load-earlier" disabled=${item.busy} onClick=${() => ctx.onEarlier(item)}>Load earlier messages</button>`;
    }
    if (item.kind === "versions") return html`<${Versions} item=${item} ctx=${ctx} />`;
    return null;
  });
}

/** The versions of one exchange, "‹ n / N ›" to page through them. */
function Versions({ item, ctx }) {
  const k = item.shown;
  const show = (to) => { item.shown = to; ctx.onShow(); };
  return html`<div class="versions">
    <div class="version-pager" role="group" aria-label="Answer versions">
      <button class="btn btn-small btn-ghost" type="button" aria-label="Previous version" disabled=${k === 0} onClick=${() => show(k - 1)}>‹</button>
      <span class="version-label">${k + 1} / ${item.versions.length}</span>
      <button class="btn btn-small btn-ghost" type="button" aria-label="Next version" disabled=${k === item.versions.length - 1} onClick=${() => show(k + 1)}>›</button>
    </div>
    <div class="version" key=${k}><${MessageItems} items=${item.versions[k]} ctx=${ctx} /></div>
  </div>`;
}
