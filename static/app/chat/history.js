// Render stored messages (MessageVO) as user bubbles and assistant turns.
import { h } from "../dom.js";
import { authImage } from "./attachments.js";
import { Turn, copyButton } from "./turn.js";

/** A user message bubble; text and image parts, never HTML. */
export function userBubble({ text, parts, id, retired }) {
  const images = (parts || []).filter((p) => p && p.type === "image" && p.url);
  const partText = (parts || []).filter((p) => p && p.type === "text").map((p) => p.text).join("\n");
  return h("div", { class: "msg user", dataset: retired ? { id: id || "", retired: "1" } : { id: id || "" } },
    h("div", { class: "bubble" },
      images.length ? h("div", { class: "msg-images" }, images.map((p) => authImage(p.url, p.name || "attachment"))) : null,
      h("div", { class: "msg-text", text: text || partText || "" })),
    h("div", { class: "msg-actions", role: "toolbar", "aria-label": "Message actions" }, copyButton("Copy", () => text || partText || "")));
}

/** An empty assistant container for a Turn. */
export function assistantBox() {
  return h("div", { class: "msg assistant" });
}

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
 * Render stored messages into `list`. An exchange that was regenerated or edited (its earlier versions
 * stored with `metadata.retired` and one `versionOf`) shows its latest version with a pager to the
 * earlier ones; a version holds everything after its question too (the later messages belong to it, as in
 * ChatGPT). Returns the Turns of what shows (the latest versions).
 */
export function renderHistory(list, messages, options = {}) {
  const live = messages.filter((m) => !m.metadata?.retired);
  const pool = versionPool(messages.filter((m) => m.metadata?.retired));
  return renderBranch(list, live, pool, options, new Set());
}

/** One version's messages; `open`: the exchanges whose pager encloses this one (not paged again inside). */
function renderBranch(list, messages, pool, options, open) {
  const exs = exchanges(messages);
  let plain = [];
  for (let i = 0; i < exs.length; i++) {
    const ex = exs[i];
    const key = isQuestion(ex[0]) ? String(ex[0].metadata?.versionOf ?? "") : "";
    if (!key || open.has(key) || !pool.has(key)) { plain.push(...ex); continue; }
    const turns = renderFlat(list, plain, options);
    const inner = new Set(open).add(key);
    const versions = [...pool.get(key), exs.slice(i).flat()];
    turns.push(...renderVersions(list, versions, (pane, ms) => renderBranch(pane, ms, pool, options, inner)));
    return turns;
  }
  return renderFlat(list, plain, options);
}

/** The versions of one exchange, the latest shown, with "‹ n / N ›" to page through them. */
function renderVersions(list, versions, renderOne) {
  const box = h("div", { class: "versions" });
  list.append(box);
  const pager = h("div", { class: "version-pager", role: "group", "aria-label": "Answer versions" });
  box.append(pager);
  const panes = versions.map((ex) => {
    const pane = h("div", { class: "version" });
    box.append(pane);
    return { pane, turns: renderOne(pane, ex) };
  });
  const label = h("span", { class: "version-label" });
  const prev = h("button", { class: "btn btn-small btn-ghost", type: "button", "aria-label": "Previous version", text: "‹" });
  const next = h("button", { class: "btn btn-small btn-ghost", type: "button", "aria-label": "Next version", text: "›" });
  const show = (k) => {
    panes.forEach((p, i) => { p.pane.hidden = i !== k; });
    label.textContent = `${k + 1} / ${panes.length}`;
    prev.disabled = k === 0;
    next.disabled = k === panes.length - 1;
    prev.onclick = () => show(k - 1);
    next.onclick = () => show(k + 1);
  };
  pager.append(prev, label, next);
  show(panes.length - 1);
  return panes[panes.length - 1].turns;
}

/**
 * Render stored messages into `list`: user bubbles, and one assistant Turn per run of assistant
 * and tool messages. A tool result lands on the card of the call it answers, even when it was
 * stored after a later user message (a call resumed by /approve). Returns the Turns it made.
 */
function renderFlat(list, messages, { onDecision, onRate, onRegenerate, onContinue } = {}) {
  const owners = new Map(); // toolCallId -> Turn
  let question = null;
  const turns = [];
  let turn = null;
  let group = [];
  const close = () => {
    if (!turn) return;
    const last = group[group.length - 1];
    const waiting = turn.snapshot().blocks.some((b) => b.kind === "approval" && !b.decision);
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
    turn.flush();
    turn = null;
    group = [];
  };
  const open = () => {
    if (!turn) {
      const box = assistantBox();
      list.append(box);
      turn = new Turn(box, { onDecision, onRate, onRegenerate, onContinue });
      if (question) turn.apply({ event: "meta", data: { userMessageId: question } }); // the question Regenerate asks anew
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
      list.append(userBubble({ text: m.content, parts: m.contentParts, id: m.id, retired: Boolean(m.metadata?.retired) }));
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
  return turns;
}
