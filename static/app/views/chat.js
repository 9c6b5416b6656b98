// The chat page: conversation list, agent and model pickers, messages, streaming answers.
import { get, put, seg, ApiError } from "../api.js";
import { h, mount, randomId, showError, toast } from "../dom.js";
import { icon } from "../icons.js";
import { upload } from "../chat/attachments.js";
import { Composer } from "../chat/composer.js";
import { assistantBox, renderHistory, userBubble } from "../chat/history.js";
import { ConversationList, iconText } from "../chat/list.js";
import { clearProgress, loadProgress, runStream, stopStream } from "../chat/stream.js";
import { TalkControl } from "../chat/talk.js";
import { Turn } from "../chat/turn.js";

const LAST_AGENT = "ap.lastAgent";
const PAGE = 100;

export class ChatView {
  constructor() {
    this.agents = [];
    this.models = [];
    this.id = null;
    this.isNew = true;
    this.running = null;
    this.turns = []; // live turns on screen (approval cards to settle)
    this.pendingModel = "";
    this.list = new ConversationList({ onDeleted: (id) => { if (id === this.id) location.hash = "#/chat"; } });
    this.title = h("h1", { class: "chat-title", text: "New chat" });
    this.agentSelect = h("select", { class: "agent-picker", "aria-label": "Agent", onchange: () => localStorage.setItem(LAST_AGENT, this.agentSelect.value) });
    this.modelSelect = h("select", { class: "model-picker", "aria-label": "Model", onchange: () => this.changeModel() });
    this.messages = h("div", { class: "messages", role: "log", "aria-label": "Messages" });
    this.talk = new TalkControl({
      context: () => ({ agentId: this.agentSelect.value, conversationId: this.id }),
      onTranscript: (text) => this.talkTurn(text),
      onFrame: (frame) => this.talkFrame(frame),
      onDone: () => this.talkDone(),
    });
    this.composer = new Composer({ onSend: (text, files) => this.send(text, files), onStop: () => this.stop(), tools: [this.talk.button] });
    this.renamed = (e) => { if (e.detail.id === this.id) this.title.textContent = e.detail.title; };
    document.addEventListener("conversation-renamed", this.renamed);
    this.shortcuts = (e) => this.shortcut(e);
    document.addEventListener("keydown", this.shortcuts);
    this.el = h("div", { class: "chat-layout", onkeydown: (e) => { if (e.key === "Escape") this.el.classList.remove("show-list"); } },
      this.list.el,
      h("section", { class: "chat-pane" },
        h("header", { class: "chat-head" },
          h("button", { type: "button", class: "icon-btn sidebar-toggle", "aria-label": "Conversations", "aria-controls": "conv-sidebar", onclick: () => this.el.classList.toggle("show-list") }, icon("menu", 20)),
          this.title,
          h("div", { class: "pickers" }, this.agentSelect, this.modelSelect)),
        this.messages,
        h("div", { class: "talk-bar" }, this.talk.status, this.talk.stopButton),
        this.composer.el));
  }

  async init() {
    const [agents, models] = await Promise.all([
      get("/agents", { enabled: true }).catch(() => []),
      get("/models/enabled").catch(() => []),
      this.list.refresh(),
    ]);
    this.agents = Array.isArray(agents) ? agents : [];
    this.models = (Array.isArray(models) ? models : []).filter((m) => !m.modelType || m.modelType === "chat");
    mount(this.agentSelect, this.agents.length
      ? this.agents.map((a) => h("option", { value: a.id, text: `${iconText(a.icon)} ${a.name}` }))
      : h("option", { value: "", text: "No agents" }));
    mount(this.modelSelect,
      h("option", { value: "", text: "Default model" }),
      this.models.map((m, i) => h("option", { value: String(i), text: `${m.displayName || m.modelName} · ${m.providerId}${m.label ? ` (${m.label})` : ""}` })));
  }

  destroy() {
    this.running?.controller.abort();
    this.talk.close();
    document.removeEventListener("conversation-renamed", this.renamed);
    document.removeEventListener("keydown", this.shortcuts);
  }

  /** Keyboard shortcuts: Ctrl/Cmd+Shift+O a new chat, Esc stops a running answer, Shift+Esc focuses the box. */
  shortcut(e) {
    if (e.defaultPrevented || e.isComposing || document.querySelector("dialog[open]")) return;
    const mod = e.ctrlKey || e.metaKey;
    if (mod && e.shiftKey && (e.key === "o" || e.key === "O")) {
      e.preventDefault();
      location.hash = "#/chat";
    } else if (e.key === "Escape" && e.shiftKey) {
      e.preventDefault();
      this.composer.focus();
    } else if (e.key === "Escape" && this.running) {
      e.preventDefault();
      this.stop();
    }
  }

  /** Show a conversation (id) or a new chat (no id). */
  async update([rawId]) {
    const id = rawId ? decodeURIComponent(rawId) : null;
    if (id && id === this.id) return;
    this.running?.controller.abort();
    this.running = null;
    this.composer.setRunning(false);
    this.el.classList.remove("show-list");
    this.id = id || randomId("c");
    this.isNew = !id;
    this.list.setActive(id);
    this.turns = [];
    this.messages.replaceChildren();
    if (this.isNew) {
      this.title.textContent = "New chat";
      this.agentSelect.disabled = false;
      const last = localStorage.getItem(LAST_AGENT);
      if (last && this.agents.some((a) => a.id === last)) this.agentSelect.value = last;
      this.modelSelect.value = this.pendingModel;
      this.empty();
      this.composer.focus();
      return;
    }
    const conv = this.list.find(id);
    this.title.textContent = conv?.title || "Conversation";
    this.agentSelect.disabled = true;
    if (conv?.agentId) this.ensureAgentOption(conv);
    this.modelSelect.value = this.modelIndex(conv?.modelProvider, conv?.modelName);
    await this.load();
  }

  ensureAgentOption(conv) {
    if (!this.agents.some((a) => a.id === conv.agentId)) {
      this.agentSelect.append(h("option", { value: conv.agentId, text: `${iconText(conv.agentIcon)} ${conv.agentName || "Agent"}` }));
    }
    this.agentSelect.value = conv.agentId;
  }

  modelIndex(provider, name) {
    if (!name) return "";
    const i = this.models.findIndex((m) => m.modelName === name && (!provider || m.providerId === provider));
    return i < 0 ? "" : String(i);
  }

  empty() {
    mount(this.messages, h("div", { class: "empty-chat" },
      h("p", { class: "empty-title", text: this.agents.length ? "Start a conversation" : "No agents yet" }),
      this.agents.length ? h("p", { text: "Pick an agent above and send a message." }) : h("p", {}, "Create one on the ", h("a", { href: "#/agents", text: "Agents" }), " page.")));
  }

  /** Load the history; re-attach when a turn is running, else show pending approvals. */
  async load() {
    const id = this.id;
    let messages = [];
    let hasMore = false;
    let status = null;
    try {
      const [page, st] = await Promise.all([
        get(`/conversations/${seg(id)}/messages`, { limit: PAGE }),
        get(`/conversations/${seg(id)}/status`).catch(() => null),
      ]);
      messages = Array.isArray(page) ? page : page?.messages || [];
      hasMore = Boolean(page?.hasMore);
      status = st;
    } catch (err) {
      if (id === this.id) mount(this.messages, h("p", { class: "error", text: err.message }));
      return;
    }
    if (id !== this.id) return;
    this.messages.replaceChildren();
    this.turns = [];
    if (status?.streamStatus === "running") {
      await this.reconnect(messages);
      return;
    }
    clearProgress(id);
    if (hasMore) this.messages.append(this.earlierButton(messages[0]?.id));
    this.turns.push(...renderHistory(this.messages, messages, this.turnOptions()));
    await this.showPendingApprovals();
    this.markLatest();
    this.scroll(true);
  }

  /** Re-attach to the running turn: show what is saved, replay the rest from lastEventId. */
  async reconnect(messages) {
    const saved = loadProgress(this.id);
    let cut = -1;
    let state = null;
    let lastEventId;
    const mark = saved?.turn?.userMessageId;
    if (mark !== undefined && mark !== null) cut = messages.findIndex((m) => String(m.id) === String(mark));
    if (cut >= 0) {
      state = saved.turn;
      lastEventId = saved.lastEventId;
    } else {
      cut = messages.map((m) => m.role).lastIndexOf("user");
    }
    this.turns.push(...renderHistory(this.messages, messages.slice(0, cut + 1), this.turnOptions()));
    const body = { agentId: this.agentSelect.value, conversationId: this.id, reconnect: true };
    if (lastEventId) body.lastEventId = lastEventId;
    const done = await this.stream(body, state);
    if (done.status !== "detached" && this.id === body.conversationId) {
      // Re-read the stored history so earlier parts of a resumed turn show too.
      this.id = null;
      await this.update([encodeURIComponent(body.conversationId)]);
    }
  }

  /** A button that prepends the page of messages before `beforeId`. */
  earlierButton(beforeId) {
    const button = h("button", { type: "button", class: "btn btn-small load-earlier", text: "Load earlier messages" });
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const page = await get(`/conversations/${seg(this.id)}/messages`, { limit: PAGE, beforeId });
        const older = page?.messages || [];
        const box = document.createDocumentFragment();
        if (page?.hasMore && older.length) box.append(this.earlierButton(older[0].id));
        this.turns.push(...renderHistory(box, older, this.turnOptions()));
        const height = this.messages.scrollHeight;
        button.replaceWith(box);
        this.messages.scrollTop += this.messages.scrollHeight - height;
      } catch (err) {
        button.disabled = false;
        showError(err);
      }
    });
    return button;
  }

  async showPendingApprovals() {
    let pending = [];
    try { pending = await get(`/chat/${seg(this.id)}/pending-approvals`); } catch { return; }
    if (!Array.isArray(pending)) return;
    const waiting = new Set(pending.map((p) => String(p.pendingId ?? p.id)));
    const shown = new Set();
    for (const turn of this.turns) {
      turn.snapshot().blocks.forEach((b) => {
        if (b.kind !== "approval") return;
        shown.add(String(b.pendingId));
        // a stored card the server no longer waits on (superseded by a newer message, or expired)
        if (!b.decision && !waiting.has(String(b.pendingId))) turn.apply({ event: "tool_approval_resolved", data: { pendingId: b.pendingId, decision: "expired" } });
      });
      if (turn.state.status === "awaiting_approval" && !turn.waitingForApproval) turn.apply({ event: "done", data: { status: "completed" } });
    }
    pending = pending.filter((p) => !shown.has(String(p.pendingId ?? p.id))); // the history shows it already
    if (!pending.length) return;
    const box = assistantBox();
    this.messages.append(box);
    const turn = new Turn(box, this.turnOptions());
    this.turns.push(turn);
    for (const p of pending) {
      turn.apply({ event: "tool_approval_requested", data: { ...p, pendingId: p.pendingId ?? p.id } });
    }
    turn.apply({ event: "done", data: { status: "awaiting_approval" } });
  }

  async send(text, files) {
    if (this.running) return false;
    const agentId = this.agentSelect.value;
    if (!agentId) {
      toast("Create or pick an agent first: your message stays in the box", "error");
      return false;
    }
    if (this.isNew) this.messages.replaceChildren();
    const body = { agentId, conversationId: this.id };
    if (files.length) {
      let uploads;
      try {
        uploads = await Promise.all(files.map((f) => upload(f, this.id)));
      } catch (err) {
        showError(err);
        return false;
      }
      body.contentParts = [
        ...(text ? [{ type: "text", text }] : []),
        ...uploads.map((u) => ({ type: "image", url: u.url, contentType: u.contentType, name: u.name })),
      ];
    } else {
      body.message = text;
    }
    if (this.isNew && this.modelSelect.value !== "") {
      const m = this.models[Number(this.modelSelect.value)];
      body.modelProvider = m.providerId;
      body.modelName = m.modelName;
    }
    // a new message ends what was waiting (the server denies it as superseded): the cards say so
    for (const turn of this.turns) if (turn.waitingForApproval) turn.settleApprovals("expired");
    const bubble = userBubble({ text: body.message, parts: body.contentParts });
    this.messages.append(bubble);
    this.scroll(true);
    await this.stream(body, null, null, bubble);
  }

  turnOptions() {
    return {
      onDecision: (d) => this.decide(d), onRate: (id, r) => this.rate(id, r),
      onRegenerate: (turn) => this.regenerate(turn), onContinue: (turn) => this.continueAnswer(turn),
    };
  }

  /** The last question shown (not an earlier version's): its bubble, or null. */
  lastQuestion() {
    const bubbles = [...this.messages.querySelectorAll(".msg.user")].filter((b) => !b.closest("[hidden]"));
    return bubbles[bubbles.length - 1] || null;
  }

  /** The last answer is the one Continue goes on with; Edit on every question of the current version (an
   * earlier version's are retired: the server refuses them), none while an answer runs. */
  markLatest() {
    const visible = this.turns.filter((t) => !t.el.closest("[hidden]") && t.el.isConnected);
    this.turns.forEach((t) => t.setLatest(t === visible[visible.length - 1]));
    this.messages.querySelectorAll(".edit-question").forEach((b) => b.remove());
    if (this.running) return;
    const last = this.lastQuestion();
    for (const bubble of this.messages.querySelectorAll(".msg.user:not([data-retired])")) {
      if (!bubble.dataset.id && bubble !== last) continue;
      bubble.querySelector(".msg-actions")?.append(h("button", { class: "btn btn-small btn-ghost edit-question", type: "button", text: "Edit", onclick: () => this.editQuestion(bubble) }));
    }
  }

  /** Edit a question in place, then send it again: it and what came after it stay as an earlier version. */
  editQuestion(bubble) {
    const text = bubble.querySelector(".msg-text")?.textContent || "";
    const box = h("textarea", { class: "edit-box", "aria-label": "Edit message", rows: 3 });
    box.value = text;
    const form = h("form", { class: "edit-form" },
      box,
      h("div", { class: "actions" },
        h("button", { type: "button", class: "btn btn-small", text: "Cancel", onclick: () => { form.remove(); bubble.hidden = false; } }),
        h("button", { type: "submit", class: "btn btn-small btn-primary", text: "Send" })));
    form.onsubmit = (e) => {
      e.preventDefault();
      if (!box.value.trim()) return;
      this.resend(box.value, bubble.dataset.id || null);
    };
    bubble.hidden = true;
    bubble.after(form);
    box.focus();
  }

  /** Go on with a stopped answer in its own turn (the server stores a marked continuation prompt, no bubble). */
  async continueAnswer(turn) {
    if (this.running || !this.agentSelect.value) return;
    await this.stream({ agentId: this.agentSelect.value, conversationId: this.id, continueAnswer: true }, null, turn);
  }

  /** Ask the turn's question again (the same text): an earlier question takes what came after it along. */
  regenerate(turn) {
    const id = turn?.state.userMessageId;
    const bubble = (id && [...this.messages.querySelectorAll(".msg.user")].find((b) => b.dataset.id === String(id))) || this.lastQuestion();
    const text = bubble?.querySelector(".msg-text")?.textContent;
    if (text) this.resend(text, bubble.dataset.id || null);
  }

  async resend(text, questionId = null) {
    if (this.running || !this.agentSelect.value) return;
    const cid = this.id;
    const body = { agentId: this.agentSelect.value, conversationId: cid, message: text, regenerate: true };
    if (questionId) body.regenerateFrom = String(questionId);
    const done = await this.stream(body, null);
    if (done.status !== "detached" && this.id === cid) {
      this.id = null; // re-read the stored history: the versions and their pager
      await this.update([encodeURIComponent(cid)]);
    }
  }

  /** Thumbs up/down (or none) on an answer, stored with its message. */
  rate(messageId, rating) {
    return put(`/conversations/${seg(this.id)}/messages/${seg(messageId)}/rating`, { rating }).catch((err) => { showError(err); throw err; });
  }

  /** Decide the waiting call: the turn that asked goes on in place (its card shows the decision, no
   * "/approve" bubble; the server keeps the command message, marked, which the history leaves out). */
  async decide(decision) {
    if (this.running) return;
    const owner = [...this.turns].reverse().find((t) => t.waitingForApproval) || null;
    for (const turn of this.turns) turn.settleApprovals(decision === "approve" ? "approved" : "denied");
    const agentId = this.agentSelect.value;
    if (!agentId) return;
    await this.stream({ agentId, conversationId: this.id, message: "/" + decision }, null, owner);
  }

  /** Stream `body` into a new turn (restored from `state` when re-attaching), or into `into`, a paused turn. */
  async stream(body, state, into = null, bubble = null) {
    let turn = into;
    if (turn) turn.resume();
    else {
      const box = assistantBox();
      this.messages.append(box);
      turn = new Turn(box, this.turnOptions());
      this.turns.push(turn);
    }
    if (state) turn.restore(state);
    const controller = new AbortController();
    const run = { controller, turn, id: body.conversationId };
    this.running = run;
    this.composer.setRunning(true);
    this.agentSelect.disabled = true;
    const done = await runStream({
      body, turn, signal: controller.signal,
      onFrame: (frame) => {
        if (frame.event === "meta" && bubble && frame.data?.userMessageId) bubble.dataset.id = String(frame.data.userMessageId); // Edit needs it
        if (frame.event === "meta" && this.isNew && this.id === body.conversationId) this.adopt();
        this.scroll(false);
      },
    });
    if (this.running === run) {
      this.running = null;
      this.composer.setRunning(false);
    }
    this.markLatest();
    if (done.status !== "detached") {
      if (done.status === "failed" && done.message && /busy/i.test(done.message)) toast(done.message, "error");
      this.list.refresh().then(() => this.list.setActive(this.isNew ? null : this.id));
    }
    return done;
  }

  /** Talk mode: the transcript is the user's message; the answer streams into a new turn. */
  talkTurn(text) {
    if (this.isNew && !this.messages.querySelector(".msg")) this.messages.replaceChildren();
    this.messages.append(userBubble({ text }));
    const box = assistantBox();
    this.messages.append(box);
    this.talking = new Turn(box, this.turnOptions());
    this.turns.push(this.talking);
    this.agentSelect.disabled = true;
    this.scroll(true);
  }

  talkFrame(frame) {
    const turn = this.talking;
    if (!turn) return;
    if (frame.type === "delta") turn.apply({ event: "content_delta", data: { delta: frame.text } });
    if (frame.type === "approval") turn.apply({ event: "tool_approval_requested", data: { pendingId: frame.callId, toolName: frame.toolName } });
    if (frame.type === "done") turn.apply({ event: "done", data: { status: frame.status || "completed" } });
    this.scroll(false);
  }

  talkDone() {
    this.talking = null;
    if (this.isNew) this.adopt();
    else this.list.refresh().then(() => this.list.setActive(this.id));
  }

  /** A new chat got its first event: it is now a stored conversation. */
  adopt() {
    this.isNew = false;
    history.replaceState(null, "", `#/chat/${encodeURIComponent(this.id)}`);
    // replaceState fires no hashchange: tell the shell, so its route args follow the URL and a later
    // "+ New chat" (#/chat) is a change it passes on to update() instead of a no-op.
    window.dispatchEvent(new HashChangeEvent("hashchange"));
    this.list.refresh().then(() => {
      this.list.setActive(this.id);
      const conv = this.list.find(this.id);
      if (conv?.title) this.title.textContent = conv.title;
    });
  }

  async stop() {
    if (!this.running) return;
    try {
      const r = await stopStream(this.running.id);
      if (r && r.stopped === false) toast("Nothing is running");
    } catch (err) {
      showError(err);
    }
  }

  async changeModel() {
    const value = this.modelSelect.value;
    if (this.isNew) {
      this.pendingModel = value;
      return;
    }
    const m = value === "" ? null : this.models[Number(value)];
    try {
      await put(`/conversations/${seg(this.id)}/model`, { modelProvider: m ? m.providerId : null, modelName: m ? m.modelName : null });
      toast(m ? `Model: ${m.displayName || m.modelName}` : "Model: default");
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      showError(err);
    }
  }

  scroll(force) {
    const el = this.messages;
    const near = el.scrollHeight - el.scrollTop - el.clientHeight < 120;
    if (force || near) el.scrollTop = el.scrollHeight;
  }
}
