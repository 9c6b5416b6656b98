// One assistant turn: a list of blocks (thinking, text, tool calls, approvals) built from
// chat stream events or stored messages, rendered incrementally and serializable for reconnects.
import { h, mount } from "../dom.js";
import { renderMarkdown } from "../markdown.js";
import { icon } from "../icons.js";

function pretty(value) {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") return JSON.stringify(value, null, 2);
  try { return JSON.stringify(JSON.parse(value), null, 2); } catch { return value; }
}

/** A `context` event as a short note: what the model did not see of the conversation. */
function contextNote(d) {
  const n = (count, what) => `${count} ${what}${count === 1 ? "" : "s"}`;
  const parts = [];
  if (d.summarised?.messages) parts.push(`${n(d.summarised.messages, "earlier message")} summarised`);
  if (d.cut?.messages) parts.push(`${n(d.cut.messages, "message")} left out`);
  if (d.truncated?.messages) parts.push(`${n(d.truncated.messages, "long message")} shortened`);
  if (d.toolsDropped?.length) parts.push(`${n(d.toolsDropped.length, "tool")} not offered`);
  return parts.length ? `to fit the model's context: ${parts.join(", ")}` : "";
}

/** A `phase` event as the words of the live status line (the server's phases; unknown ones as they come). */
export function phaseLabel(phase, toolName) {
  const names = {
    queued: "Queued", thinking: "Thinking", writing: "Writing", awaiting_approval: "Waiting for approval",
    planning: "Planning", executing: "Running the plan", answering: "Answering", subagent: "Asking a sub-agent",
  };
  if (phase === "calling_tool") return toolName ? `Calling ${toolName}` : "Calling a tool";
  return names[phase] || String(phase || "").replace(/_/g, " ");
}

/** The finished answer's speed: time to first token and tokens per second (stored with the message). */
function timingNote(t) {
  if (!t || typeof t !== "object") return "";
  const parts = [];
  if (Number.isFinite(t.timeToFirstTokenMs)) parts.push(`${(t.timeToFirstTokenMs / 1000).toFixed(1)} s to first token`);
  if (Number.isFinite(t.tokensPerSecond)) parts.push(`${t.tokensPerSecond} tokens/s`);
  return parts.join(" · ");
}

export class Turn {
  /** el: the container; onDecision(decision) is called by Approve/Deny buttons, onRate(messageId, rating) by the thumbs. */
  constructor(el, { onDecision, onRate, onRegenerate, onContinue } = {}) {
    this.el = el;
    this.onDecision = onDecision;
    this.state = { userMessageId: null, blocks: [], status: "streaming", phase: "", error: "" };
    this.nodes = [];
    this.dirty = new Set();
    this.frame = 0;
    this.body = h("div", { class: "turn-body" });
    this.statusLine = h("div", { class: "turn-status", "aria-live": "polite" });
    this.sources = h("div", { class: "turn-sources", "aria-label": "Sources" });
    this.actions = h("div", { class: "msg-actions", role: "toolbar", "aria-label": "Message actions" });
    this.onRate = onRate;
    this.onRegenerate = onRegenerate;
    this.onContinue = onContinue;
    this.latest = false; // the conversation's last answer: the one Regenerate answers again
    mount(el, this.body, this.sources, this.statusLine, this.actions);
    this.renderActions();
  }

  /** Mark whether this is the conversation's last answer (only that one offers Regenerate). */
  setLatest(latest) {
    this.latest = latest;
    this.renderActions();
  }

  /** The answer's Markdown as written (its text blocks), and as the reader sees it (plain text). */
  markdown() {
    return this.state.blocks.filter((b) => b.kind === "text").map((b) => b.text).join("\n\n");
  }

  plainText() {
    return Array.from(this.body.querySelectorAll(".md"), (n) => n.innerText.trim()).join("\n\n");
  }

  /** Copy, copy as Markdown, thumbs up/down: on a finished answer (rating needs its stored message id). */
  renderActions() {
    const s = this.state;
    const show = s.status !== "streaming" && this.state.blocks.some((b) => b.kind === "text");
    this.actions.hidden = !show;
    if (!show) return this.actions.replaceChildren();
    const rate = (value) => {
      const next = s.rating === value ? null : value;
      this.onRate?.(s.messageId, next).then(() => { s.rating = next; this.renderActions(); }, () => {});
    };
    const canRate = Boolean(s.messageId && this.onRate);
    this.actions.replaceChildren(
      copyButton("Copy", () => this.plainText()),
      copyButton("Copy Markdown", () => this.markdown()),
      this.latest && this.onContinue && (s.status === "stopped" || (s.status === "completed" && s.finishReason === "length")) ? h("button", { class: "btn btn-small btn-ghost", type: "button", text: "Continue", title: "Go on with this answer where it stopped", onclick: () => this.onContinue(this) }) : null,
      this.onRegenerate && !s.retired && (this.latest || s.userMessageId) ? h("button", { class: "btn btn-small btn-ghost", type: "button", text: "Regenerate", title: "Answer again; this answer (and what came after it) stays as an earlier version", onclick: () => this.onRegenerate(this) }) : null,
      canRate ? h("button", { class: "btn btn-small btn-ghost", type: "button", "aria-label": "Good answer", "aria-pressed": String(s.rating === "up"), text: "👍", onclick: () => rate("up") }) : null,
      canRate ? h("button", { class: "btn btn-small btn-ghost", type: "button", "aria-label": "Bad answer", "aria-pressed": String(s.rating === "down"), text: "👎", onclick: () => rate("down") }) : null,
    );
  }

  /** Rebuild from a snapshot (see snapshot()). */
  restore(state) {
    this.state = structuredClone(state);
    this.nodes = [];
    this.body.replaceChildren();
    this.state.blocks.forEach((block, i) => this.body.append(this.renderBlock(block, i)));
    this.renderSources();
    this.renderStatus();
    return this;
  }

  snapshot() {
    return this.state;
  }

  get finished() {
    return this.state.status !== "streaming";
  }

  /** Apply one chat stream frame. */
  apply({ event, data }) {
    const d = data && typeof data === "object" ? data : {};
    switch (event) {
      case "meta":
        this.state.userMessageId = d.userMessageId ?? this.state.userMessageId;
        break;
      case "thinking_delta":
        this.appendText("thinking", d.delta);
        break;
      case "content_delta":
        this.appendText("text", d.delta);
        break;
      case "tool_call_started":
        this.add({ kind: "tool", toolCallId: d.toolCallId, toolName: d.toolName, arguments: d.arguments, result: null, success: null });
        break;
      case "tool_call_completed": {
        const i = this.findTool(d.toolCallId, d.toolName);
        if (i < 0) this.add({ kind: "tool", toolCallId: d.toolCallId, toolName: d.toolName, arguments: "", result: d.result, success: d.success });
        else this.update(i, { result: d.result, success: d.success });
        break;
      }
      case "tool_approval_requested":
        this.add({ kind: "approval", pendingId: d.pendingId, toolName: d.toolName, arguments: d.arguments, reason: d.reason, maxSeverity: d.maxSeverity, decision: null });
        break;
      case "tool_approval_resolved": {
        const i = this.state.blocks.findIndex((b) => b.kind === "approval" && String(b.pendingId) === String(d.pendingId));
        if (i >= 0) this.update(i, { decision: d.decision }); // else: the card is in an earlier turn, settled there
        break;
      }
      case "citations": // the knowledge passages the answer was given: source chips under it
        this.state.citations = Array.isArray(d.citations) ? d.citations : [];
        this.renderSources();
        break;
      case "context": // the request left something out to fit the model's window: say so under the answer
        this.state.context = contextNote(d);
        this.renderStatus();
        break;
      case "phase":
        this.state.phase = d.phase || "";
        this.state.phaseTool = d.toolName || "";
        this.renderStatus();
        break;
      case "error":
        this.state.error = d.message || "Error";
        this.state.status = "failed";
        this.renderStatus();
        break;
      case "message_complete":
        this.state.messageId = d.assistantMessageId || this.state.messageId;
        break;
      case "done":
        this.state.messageId = d.assistantMessageId || this.state.messageId || null;
        if (d.rating !== undefined) this.state.rating = d.rating;
        this.state.status = d.status || "completed";
        this.state.model = d.runtimeModel || this.state.model || "";
        this.state.tokens = (d.promptTokens || 0) + (d.completionTokens || 0) || this.state.tokens || 0;
        this.state.timing = d.timing || this.state.timing || null;
        this.state.finishReason = d.finishReason || null; // "length": cut at the token limit, Continue offered
        this.state.phase = "";
        this.renderStatus();
        break;
      default:
        break;
    }
  }

  /** Whether a card here still waits for a decision. */
  get waitingForApproval() {
    return this.state.blocks.some((b) => b.kind === "approval" && !b.decision);
  }

  /** The paused turn goes on in place (its approval was decided): the continuation streams into it. */
  resume() {
    this.state.status = "streaming";
    this.state.error = "";
    this.state.phase = "";
    this.renderStatus();
  }

  /** Mark pending approvals as answered (a decision was sent). */
  settleApprovals(decision) {
    this.state.blocks.forEach((b, i) => {
      if (b.kind === "approval" && !b.decision) this.update(i, { decision });
    });
    if (this.state.status === "awaiting_approval") { // no stale "Waiting for approval" under a decided card
      this.state.status = "completed";
      this.renderStatus();
    }
  }

  appendText(kind, delta) {
    if (!delta) return;
    const last = this.state.blocks.length - 1;
    if (last >= 0 && this.state.blocks[last].kind === kind) {
      this.state.blocks[last].text += delta;
      this.schedule(last);
    } else {
      this.add({ kind, text: delta });
    }
  }

  findTool(toolCallId, toolName) {
    const blocks = this.state.blocks;
    let i = blocks.findIndex((b) => b.kind === "tool" && toolCallId && b.toolCallId === toolCallId);
    if (i < 0) i = blocks.findIndex((b) => b.kind === "tool" && b.success === null && b.toolName === toolName);
    return i;
  }

  add(block) {
    this.state.blocks.push(block);
    const i = this.state.blocks.length - 1;
    this.body.append(this.renderBlock(block, i));
  }

  update(i, fields) {
    Object.assign(this.state.blocks[i], fields);
    const old = this.nodes[i];
    const fresh = this.renderBlock(this.state.blocks[i], i);
    if (old.open) fresh.open = true;
    old.replaceWith(fresh);
  }

  /** Re-render streamed text once per animation frame. */
  schedule(i) {
    this.dirty.add(i);
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    for (const i of this.dirty) this.fillText(this.nodes[i], this.state.blocks[i]);
    this.dirty.clear();
  }

  fillText(node, block) {
    if (block.kind === "thinking") {
      node.querySelector(".thinking-body").textContent = block.text;
      node.querySelector(".thinking-size").textContent = ` (${block.text.length} chars)`;
    } else {
      renderMarkdown(node, block.text);
    }
  }

  renderBlock(block, i) {
    let node;
    if (block.kind === "text") {
      node = h("div", { class: "md" });
      this.fillText(node, block);
    } else if (block.kind === "thinking") {
      node = h("details", { class: "thinking" },
        h("summary", {}, "Thinking", h("span", { class: "thinking-size" })),
        h("div", { class: "thinking-body" }));
      this.fillText(node, block);
    } else if (block.kind === "tool") {
      node = toolCard(block);
    } else {
      node = approvalCard(block, this.onDecision);
    }
    this.nodes[i] = node;
    return node;
  }

  renderSources() {
    const list = this.state.citations || [];
    this.sources.replaceChildren(...list.map(sourceChip));
    this.sources.hidden = !list.length;
  }

  renderStatus() {
    const s = this.state;
    this.el.classList.toggle("streaming", s.status === "streaming");
    this.el.dataset.status = s.status;
    let text = "";
    if (s.error) text = s.error;
    else if (s.status === "streaming") text = s.phase ? `${phaseLabel(s.phase, s.phaseTool)}…` : "…";
    else if (s.status === "stopped") text = "Stopped";
    else if (s.status === "failed") text = "Failed";
    else if (s.status === "awaiting_approval") text = "Waiting for approval";
    else if (s.finishReason === "length") text = "Cut at the length limit";
    else if (s.model) text = s.tokens ? `${s.model} · ${s.tokens} tokens` : s.model;
    const speed = s.status === "completed" && !s.error ? timingNote(s.timing) : "";
    if (speed) text = text ? `${text} · ${speed}` : speed;
    if (s.context && !s.error) text = text ? `${text} · ${s.context}` : s.context;
    this.statusLine.textContent = text;
    const quiet = s.status === "completed" && !s.error;
    this.statusLine.className = "turn-status" + (s.error || s.status === "failed" ? " error" : "") + (quiet ? " meta" : "");
    this.renderActions();
  }
}

/** A button that copies `text()` to the clipboard and says so on itself for a moment. */
export function copyButton(label, text) {
  const button = h("button", { class: "btn btn-small btn-ghost", type: "button", text: label });
  button.onclick = async () => {
    try {
      await navigator.clipboard.writeText(text());
      button.textContent = "Copied";
    } catch {
      button.textContent = "Copy failed";
    }
    setTimeout(() => { button.textContent = label; }, 1500);
  };
  return button;
}

function toolCard(block) {
  const state = block.success === null || block.success === undefined ? "running" : block.success ? "ok" : "failed";
  const label = { running: "running…", ok: "done", failed: "failed" }[state];
  return h("details", { class: `tool-card tool-${state}`, dataset: { tool: block.toolName || "" } },
    h("summary", {}, h("span", { class: "tool-icon" }, icon("tool", 15)), h("code", { text: block.toolName || "tool" }), h("span", { class: "tool-state", text: label })),
    h("div", { class: "tool-detail" },
      h("div", { class: "label", text: "Arguments" }),
      h("pre", { class: "tool-args", text: pretty(block.arguments) || "{}" }),
      state === "running" ? null : [h("div", { class: "label", text: "Result" }), h("pre", { class: "tool-result", text: pretty(block.result) })]));
}

/** One citation: `[n] title` opens to the passage's snippet and a link to its page (or knowledge base). */
function sourceChip(c) {
  const where = c.kind === "page" ? "Open page" : "Open knowledge base";
  const href = typeof c.url === "string" && c.url.startsWith("#/wiki/") ? c.url : null;
  return h("details", { class: "source-chip" + (c.cited ? " cited" : ""), dataset: { citation: String(c.id ?? "") } },
    h("summary", { title: c.kbName ? `${c.title} · ${c.kbName}` : c.title }, `[${c.id}] ${c.title || "source"}`),
    h("div", { class: "source-body" },
      h("p", { class: "source-snippet", text: c.snippet || "" }),
      href ? h("a", { href, text: where }) : null));
}

const DECISIONS = { approved: "Approved", denied: "Denied", expired: "No longer waiting (a newer message or the time limit ended it)" };

function approvalCard(block, onDecision) {
  const decided = block.decision;
  const buttons = decided
    ? h("div", { class: `approval-decision ${decided}`, text: DECISIONS[decided] || decided })
    : h("div", { class: "actions" },
      h("button", { class: "btn btn-primary", type: "button", text: "Approve", onclick: () => onDecision?.("approve") }),
      h("button", { class: "btn btn-danger", type: "button", text: "Deny", onclick: () => onDecision?.("deny") }));
  return h("div", { class: "approval-card", role: "group", "aria-label": "Tool approval" },
    h("div", { class: "approval-head" },
      h("strong", { text: "Approval needed: " }), h("code", { text: block.toolName || "tool" }),
      block.maxSeverity ? h("span", { class: `severity sev-${block.maxSeverity}`, text: block.maxSeverity }) : null),
    block.reason ? h("p", { class: "approval-reason", text: block.reason }) : null,
    block.arguments ? h("pre", { class: "tool-args", text: pretty(block.arguments) }) : null,
    buttons);
}
