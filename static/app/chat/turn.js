// One assistant turn: `Turn`, a list of blocks (thinking, text, tool calls, approvals) built from chat stream
// events or stored messages, serializable for reconnects; `TurnView` draws it (Preact), at most once a frame
// while it streams.
import { html, useLayoutEffect, useRef, useState } from "../ui.js";
import { Icon } from "../components/index.js";
import { renderMarkdown } from "../markdown.js";

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
  /** onChange(): the turn changed (called at most once per animation frame while text streams). */
  constructor({ onChange } = {}) {
    this.onChange = onChange || (() => {});
    this.state = { userMessageId: null, blocks: [], status: "streaming", phase: "", error: "" };
    this.frame = 0;
    this.version = 0;
  }

  /** The answer's Markdown as written (its text blocks). */
  markdown() {
    return this.state.blocks.filter((b) => b.kind === "text").map((b) => b.text).join("\n\n");
  }

  /** Rebuild from a snapshot (see snapshot()). */
  restore(state) {
    this.state = structuredClone(state);
    this.changed();
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
    const s = this.state;
    switch (event) {
      case "meta":
        s.userMessageId = d.userMessageId ?? s.userMessageId;
        return;
      case "thinking_delta":
        this.appendText("thinking", d.delta);
        return;
      case "content_delta":
        this.appendText("text", d.delta);
        return;
      case "tool_call_started":
        s.blocks.push({ kind: "tool", toolCallId: d.toolCallId, toolName: d.toolName, arguments: d.arguments, result: null, success: null });
        break;
      case "tool_call_completed": {
        const i = this.findTool(d.toolCallId, d.toolName);
        if (i < 0) s.blocks.push({ kind: "tool", toolCallId: d.toolCallId, toolName: d.toolName, arguments: "", result: d.result, success: d.success });
        else Object.assign(s.blocks[i], { result: d.result, success: d.success });
        break;
      }
      case "tool_approval_requested":
        s.blocks.push({ kind: "approval", pendingId: d.pendingId, toolName: d.toolName, arguments: d.arguments, reason: d.reason, maxSeverity: d.maxSeverity, decision: null });
        break;
      case "tool_approval_resolved": {
        const i = s.blocks.findIndex((b) => b.kind === "approval" && String(b.pendingId) === String(d.pendingId));
        if (i < 0) return; // the card is in an earlier turn, settled there
        s.blocks[i].decision = d.decision;
        break;
      }
      case "citations": // the knowledge passages the answer was given: source chips under it
        s.citations = Array.isArray(d.citations) ? d.citations : [];
        break;
      case "context": // the request left something out to fit the model's window: say so under the answer
        s.context = contextNote(d);
        break;
      case "phase":
        s.phase = d.phase || "";
        s.phaseTool = d.toolName || "";
        break;
      case "error":
        s.error = d.message || "Error";
        s.status = "failed";
        break;
      case "message_complete":
        s.messageId = d.assistantMessageId || s.messageId;
        return;
      case "done":
        s.messageId = d.assistantMessageId || s.messageId || null;
        if (d.rating !== undefined) s.rating = d.rating;
        s.status = d.status || "completed";
        s.model = d.runtimeModel || s.model || "";
        s.tokens = (d.promptTokens || 0) + (d.completionTokens || 0) || s.tokens || 0;
        s.timing = d.timing || s.timing || null;
        s.finishReason = d.finishReason || null; // "length": cut at the token limit, Continue offered
        s.phase = "";
        break;
      default:
        return;
    }
    this.changed();
  }

  /** Whether a card here still waits for a decision. */
  get waitingForApproval() {
    return this.state.blocks.some((b) => b.kind === "approval" && !b.decision);
  }

  /** The paused turn goes on in place (its approval was decided): the continuation streams into it. */
  resume() {
    Object.assign(this.state, { status: "streaming", error: "", phase: "" });
    this.changed();
  }

  /** Mark pending approvals as answered (a decision was sent). */
  settleApprovals(decision) {
    this.state.blocks.forEach((b) => { if (b.kind === "approval" && !b.decision) b.decision = decision; });
    if (this.state.status === "awaiting_approval") this.state.status = "completed"; // no stale "Waiting for approval"
    this.changed();
  }

  setRating(rating) {
    this.state.rating = rating;
    this.changed();
  }

  appendText(kind, delta) {
    if (!delta) return;
    const blocks = this.state.blocks;
    const last = blocks[blocks.length - 1];
    if (last && last.kind === kind) last.text += delta;
    else blocks.push({ kind, text: delta });
    this.schedule();
  }

  findTool(toolCallId, toolName) {
    const blocks = this.state.blocks;
    let i = blocks.findIndex((b) => b.kind === "tool" && toolCallId && b.toolCallId === toolCallId);
    if (i < 0) i = blocks.findIndex((b) => b.kind === "tool" && b.success === null && b.toolName === toolName);
    return i;
  }

  /** Streamed text is drawn once per animation frame; anything else at once. */
  schedule() {
    this.version++;
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  changed() {
    this.version++;
    this.flush();
  }

  flush() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.onChange();
  }
}

/** The status line under an answer: the live phase, how it ended, or its model, tokens and speed. */
function statusText(s) {
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
  return text;
}

/**
 * One turn on screen. actions: onDecision(decision) (Approve/Deny), onRate(turn, rating), onRegenerate(turn),
 * onContinue(turn); `latest`: the conversation's last answer (the one Continue goes on with).
 */
export function TurnView({ turn, latest, actions = {} }) {
  const s = turn.state;
  const body = useRef(null);
  const quiet = s.status === "completed" && !s.error;
  const statusClass = "turn-status" + (s.error || s.status === "failed" ? " error" : "") + (quiet ? " meta" : "");
  const citations = s.citations || [];
  return html`<div class=${"msg assistant" + (s.status === "streaming" ? " streaming" : "")} data-status=${s.status}>
    <div class="turn-body" ref=${body}>
      ${s.blocks.map((b, i) => html`<${Block} key=${i} block=${b} onDecision=${actions.onDecision} />`)}
    </div>
    <div class="turn-sources" aria-label="Sources" hidden=${!citations.length}>${citations.map((c) => html`<${SourceChip} c=${c} />`)}</div>
    <div class=${statusClass} aria-live="polite">${statusText(s)}</div>
    <${TurnActions} turn=${turn} latest=${latest} actions=${actions} body=${body} />
  </div>`;
}

/** Copy, copy as Markdown, Continue, Regenerate, thumbs up/down: on a finished answer. */
function TurnActions({ turn, latest, actions, body }) {
  const s = turn.state;
  const show = s.status !== "streaming" && s.blocks.some((b) => b.kind === "text");
  if (!show) return html`<div class="msg-actions" role="toolbar" aria-label="Message actions" hidden></div>`;
  const plain = () => Array.from(body.current?.querySelectorAll(".md") || [], (n) => n.innerText.trim()).join("\n\n");
  const rate = (value) => {
    const next = s.rating === value ? null : value;
    actions.onRate?.(s.messageId, next).then(() => turn.setRating(next), () => {});
  };
  const canRate = Boolean(s.messageId && actions.onRate);
  const canContinue = latest && actions.onContinue && (s.status === "stopped" || (s.status === "completed" && s.finishReason === "length"));
  const canRegenerate = actions.onRegenerate && !s.retired && (latest || s.userMessageId);
  return html`<div class="msg-actions" role="toolbar" aria-label="Message actions">
    <${CopyButton} label="Copy" text=${plain} />
    <${CopyButton} label="Copy Markdown" text=${() => turn.markdown()} />
    ${canContinue && html`<button class="btn btn-small btn-ghost" type="button" title="Go on with this answer where it stopped" onClick=${() => actions.onContinue(turn)}>Continue</button>`}
    ${canRegenerate && html`<button class="btn btn-small btn-ghost" type="button" title="Answer again; this answer (and what came after it) stays as an earlier version" onClick=${() => actions.onRegenerate(turn)}>Regenerate</button>`}
    ${canRate && html`<button class="btn btn-small btn-ghost" type="button" aria-label="Good answer" aria-pressed=${String(s.rating === "up")} onClick=${() => rate("up")}><${Icon} name="up" size=${15} /></button>`}
    ${canRate && html`<button class="btn btn-small btn-ghost" type="button" aria-label="Bad answer" aria-pressed=${String(s.rating === "down")} onClick=${() => rate("down")}><${Icon} name="down" size=${15} /></button>`}
  </div>`;
}

/** A button that copies `text()` to the clipboard and says so on itself for a moment. */
export function CopyButton({ label, text }) {
  const [said, setSaid] = useState("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text());
      setSaid("Copied");
    } catch {
      setSaid("Copy failed");
    }
    setTimeout(() => setSaid(""), 1500);
  };
  return html`<button class="btn btn-small btn-ghost" type="button" onClick=${copy}>${said || label}</button>`;
}

/** Sanitised Markdown (markdown.js is the one place that assigns innerHTML), redrawn when the text changes. */
export function Markdown({ text }) {
  const ref = useRef(null);
  useLayoutEffect(() => { renderMarkdown(ref.current, text); }, [text]);
  return html`<div class="md" ref=${ref}></div>`;
}

function Block({ block, onDecision }) {
  if (block.kind === "text") return html`<${Markdown} text=${block.text} />`;
  if (block.kind === "thinking") {
    return html`<details class="thinking"><summary>Thinking<span class="thinking-size"> (${block.text.length} chars)</span></summary>
      <div class="thinking-body">${block.text}</div></details>`;
  }
  if (block.kind === "tool") return html`<${ToolCard} block=${block} />`;
  return html`<${ApprovalCard} block=${block} onDecision=${onDecision} />`;
}

function ToolCard({ block }) {
  const state = block.success === null || block.success === undefined ? "running" : block.success ? "ok" : "failed";
  const label = { running: "running…", ok: "done", failed: "failed" }[state];
  return html`<details class=${`tool-card tool-${state}`} data-tool=${block.toolName || ""}>
    <summary><span class="tool-icon"><${Icon} name="tool" size=${15} /></span><code>${block.toolName || "tool"}</code><span class="tool-state">${label}</span></summary>
    <div class="tool-detail">
      <div class="label">Arguments</div>
      <pre class="tool-args">${pretty(block.arguments) || "{}"}</pre>
      ${state !== "running" && html`<div class="label">Result</div><pre class="tool-result">${pretty(block.result)}</pre>`}
    </div>
  </details>`;
}

/** One citation: `[n] title` opens to the passage's snippet and a link to its page (or knowledge base). */
function SourceChip({ c }) {
  const where = c.kind === "page" ? "Open page" : "Open knowledge base";
  const href = typeof c.url === "string" && c.url.startsWith("#/wiki/") ? c.url : null;
  return html`<details class=${"source-chip" + (c.cited ? " cited" : "")} data-citation=${String(c.id ?? "")}>
    <summary title=${c.kbName ? `${c.title} · ${c.kbName}` : c.title}>[${c.id}] ${c.title || "source"}</summary>
    <div class="source-body">
      <p class="source-snippet">${c.snippet || ""}</p>
      ${href && html`<a href=${href}>${where}</a>`}
    </div>
  </details>`;
}

const DECISIONS = { approved: "Approved", denied: "Denied", expired: "No longer waiting (a newer message or the time limit ended it)" };

function ApprovalCard({ block, onDecision }) {
  const decided = block.decision;
  return html`<div class="approval-card" role="group" aria-label="Tool approval">
    <div class="approval-head">
      <strong>Approval needed: </strong><code>${block.toolName || "tool"}</code>
      ${block.maxSeverity && html`<span class=${`severity sev-${block.maxSeverity}`}>${block.maxSeverity}</span>`}
    </div>
    ${block.reason && html`<p class="approval-reason">${block.reason}</p>`}
    ${block.arguments && html`<pre class="tool-args">${pretty(block.arguments)}</pre>`}
    ${decided
      ? html`<div class=${`approval-decision ${decided}`}>${DECISIONS[decided] || decided}</div>`
      : html`<div class="actions">
          <button class="btn btn-primary" type="button" onClick=${() => onDecision?.("approve")}>Approve</button>
          <button class="btn btn-danger" type="button" onClick=${() => onDecision?.("deny")}>Deny</button>
        </div>`}
  </div>`;
}
