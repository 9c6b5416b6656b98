// The chat page's state and what it does: the conversation shown, its items (chat/history.js), the running
// stream, approvals, regenerate/edit/continue, talk. views/chat.js draws it; every change calls onChange().
import { get, put, seg, ApiError } from "../api.js";
import { toast, toastError } from "../components/index.js";
import { upload } from "./attachments.js";
import { buildHistory, visibleItems } from "./history.js";
import { Conversations } from "./list.js";
import { clearProgress, loadProgress, runStream, stopStream } from "./stream.js";
import { TalkControl } from "./talk.js";
import { Turn } from "./turn.js";

const LAST_AGENT = "ap.lastAgent";
const PAGE = 100;

/** A random id usable on plain-HTTP LAN pages (crypto.randomUUID needs a secure context). */
function randomId(prefix = "c") {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return prefix + "-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class ChatController {
  constructor(onChange) {
    this.onChange = onChange;
    this.agents = [];
    this.models = [];
    this.ready = false;
    this.id = null;
    this.isNew = true;
    this.running = null;
    this.turns = []; // live turns (approval cards to settle)
    this.items = [];
    this.title = "New chat";
    this.agentId = "";
    this.agentLocked = false;
    this.modelValue = "";
    this.pendingModel = "";
    this.loadError = "";
    this.editing = null;
    this.showList = false;
    this.scrollWanted = null; // "force" | "near": scroll once drawn
    this.box = { current: null }; // the message box (focus)
    this.routed = new Promise((resolve) => { this.markRouted = resolve; }); // agents loaded and the route applied
    this.list = new Conversations({ onChange, onDeleted: (id) => { if (id === this.id) location.hash = "#/chat"; } });
    this.talk = new TalkControl({
      context: () => ({ agentId: this.agentId, conversationId: this.id }),
      onTranscript: (text) => this.talkTurn(text),
      onFrame: (frame) => this.talkFrame(frame),
      onDone: () => this.talkDone(),
      onChange,
    });
    this.renamed = (e) => { if (e.detail.id === this.id) { this.title = e.detail.title; onChange(); } };
    document.addEventListener("conversation-renamed", this.renamed);
    this.shortcuts = (e) => this.shortcut(e);
    document.addEventListener("keydown", this.shortcuts);
    this.actions = {
      onDecision: (d) => this.decide(d), onRate: (id, r) => this.rate(id, r),
      onRegenerate: (turn) => this.regenerate(turn), onContinue: (turn) => this.continueAnswer(turn),
    };
  }

  async init() {
    const [agents, models] = await Promise.all([
      get("/agents", { enabled: true }).catch(() => []),
      get("/models/enabled").catch(() => []),
      this.list.refresh(),
    ]);
    this.agents = Array.isArray(agents) ? agents : [];
    this.models = (Array.isArray(models) ? models : []).filter((m) => !m.modelType || m.modelType === "chat");
    this.agentId = this.agents[0]?.id || "";
    this.ready = true;
    this.onChange();
  }

  destroy() {
    this.running?.controller.abort();
    this.talk.close();
    document.removeEventListener("conversation-renamed", this.renamed);
    document.removeEventListener("keydown", this.shortcuts);
  }

  makeTurn() {
    return new Turn({ onChange: () => this.changed(false) });
  }

  /** Redraw; `scroll`: true keeps the newest message in view, false only when the reader is near the end. */
  changed(scroll) {
    if (scroll === true) this.scrollWanted = "force";
    else if (scroll === false && !this.scrollWanted) this.scrollWanted = "near";
    this.onChange();
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
      this.box.current?.focus();
    } else if (e.key === "Escape" && this.running) {
      e.preventDefault();
      this.stop();
    }
  }

  pickAgent(value) {
    this.agentId = value;
    localStorage.setItem(LAST_AGENT, value);
    this.onChange();
  }

  /** Show a conversation (id) or a new chat (no id). */
  async update([rawId]) {
    const id = rawId ? decodeURIComponent(rawId) : null;
    if (id && id === this.id) return;
    this.running?.controller.abort();
    this.running = null;
    if (this.id !== null) this.showList = false; // leaving a chat closes the drawer; the first route keeps it as opened
    this.id = id || randomId("c");
    this.isNew = !id;
    this.markRouted();
    this.list.setActive(id);
    this.turns = [];
    this.items = [];
    this.editing = null;
    this.loadError = "";
    if (this.isNew) {
      this.title = "New chat";
      this.agentLocked = false;
      const last = localStorage.getItem(LAST_AGENT);
      if (last && this.agents.some((a) => a.id === last)) this.agentId = last;
      this.modelValue = this.pendingModel;
      this.onChange();
      this.box.current?.focus();
      return;
    }
    const conv = this.list.find(id);
    this.title = conv?.title || "Conversation";
    this.agentLocked = true;
    if (conv?.agentId) this.agentId = conv.agentId;
    this.conv = conv;
    this.modelValue = this.modelIndex(conv?.modelProvider, conv?.modelName);
    this.onChange();
    await this.load();
  }

  /** The agent picker's options: the enabled agents, plus the conversation's own when it is not among them. */
  agentOptions() {
    const conv = this.conv;
    const extra = !this.isNew && conv?.agentId && !this.agents.some((a) => a.id === conv.agentId)
      ? [{ id: conv.agentId, icon: conv.agentIcon, name: conv.agentName || "Agent" }] : [];
    return [...this.agents, ...extra];
  }

  modelIndex(provider, name) {
    if (!name) return "";
    const i = this.models.findIndex((m) => m.modelName === name && (!provider || m.providerId === provider));
    return i < 0 ? "" : String(i);
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
      if (id === this.id) { this.loadError = err.message; this.onChange(); }
      return;
    }
    if (id !== this.id) return;
    if (status?.streamStatus === "running") {
      await this.reconnect(messages);
      return;
    }
    clearProgress(id);
    const { items, turns } = buildHistory(messages, () => this.makeTurn());
    this.items = hasMore ? [{ kind: "earlier", beforeId: messages[0]?.id }, ...items] : items;
    this.turns = turns;
    await this.showPendingApprovals();
    this.changed(true);
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
    const { items, turns } = buildHistory(messages.slice(0, cut + 1), () => this.makeTurn());
    this.items = items;
    this.turns = turns;
    const body = { agentId: this.agentId, conversationId: this.id, reconnect: true };
    if (lastEventId) body.lastEventId = lastEventId;
    const done = await this.stream(body, state);
    if (done.status !== "detached" && this.id === body.conversationId) {
      // Re-read the stored history so earlier parts of a resumed turn show too.
      this.id = null;
      await this.update([encodeURIComponent(body.conversationId)]);
    }
  }

  /** Put the page of messages before the "Load earlier" item in its place (the reader's place kept). */
  async earlier(item) {
    item.busy = true;
    this.onChange();
    try {
      const page = await get(`/conversations/${seg(this.id)}/messages`, { limit: PAGE, beforeId: item.beforeId });
      const older = page?.messages || [];
      const { items, turns } = buildHistory(older, () => this.makeTurn());
      const more = page?.hasMore && older.length ? [{ kind: "earlier", beforeId: older[0].id }] : [];
      this.items = this.items.flatMap((i) => (i === item ? [...more, ...items] : [i]));
      this.turns.push(...turns);
      this.scrollWanted = "keep";
      this.onChange();
    } catch (err) {
      item.busy = false;
      this.onChange();
      toastError(err);
    }
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
    const turn = this.makeTurn();
    this.items = [...this.items, { kind: "turn", turn }];
    this.turns.push(turn);
    for (const p of pending) turn.apply({ event: "tool_approval_requested", data: { ...p, pendingId: p.pendingId ?? p.id } });
    turn.apply({ event: "done", data: { status: "awaiting_approval" } });
  }

  async send(text, files) {
    if (this.running) return false;
    await this.routed; // a message typed before the agents arrived waits for them
    const agentId = this.agentId;
    if (!agentId) {
      toast("Create or pick an agent first: your message stays in the box", "error");
      return false;
    }
    const body = { agentId, conversationId: this.id };
    if (files.length) {
      let uploads;
      try {
        uploads = await Promise.all(files.map((f) => upload(f, this.id)));
      } catch (err) {
        toastError(err);
        return false;
      }
      body.contentParts = [
        ...(text ? [{ type: "text", text }] : []),
        ...uploads.map((u) => ({ type: "image", url: u.url, contentType: u.contentType, name: u.name })),
      ];
    } else {
      body.message = text;
    }
    if (this.isNew && this.modelValue !== "") {
      const m = this.models[Number(this.modelValue)];
      body.modelProvider = m.providerId;
      body.modelName = m.modelName;
    }
    // a new message ends what was waiting (the server denies it as superseded): the cards say so
    for (const turn of this.turns) if (turn.waitingForApproval) turn.settleApprovals("expired");
    const question = { kind: "user", id: null, text: body.message, parts: body.contentParts };
    this.items = [...this.items, question];
    this.changed(true);
    await this.stream(body, null, null, question);
    return true;
  }

  /** The last question shown (not an earlier version's), or null. */
  lastQuestion() {
    return visibleItems(this.items).filter((i) => i.kind === "user").pop() || null;
  }

  /** The answer Continue goes on with: the last one shown. */
  latestTurn() {
    return visibleItems(this.items).filter((i) => i.kind === "turn").pop()?.turn || null;
  }

  /** Edit on every question of the current version (an earlier version's are retired: the server refuses
   * them), none while an answer runs. */
  canEdit(item) {
    return !this.running && !item.retired && (Boolean(item.id) || item === this.lastQuestion());
  }

  edit(item) {
    this.editing = item;
    this.onChange();
  }

  cancelEdit() {
    this.editing = null;
    this.onChange();
  }

  /** Go on with a stopped or cut answer in its own turn (the server stores a marked continuation prompt, no bubble). */
  async continueAnswer(turn) {
    if (this.running || !this.agentId) return;
    await this.stream({ agentId: this.agentId, conversationId: this.id, continueAnswer: true }, null, turn);
  }

  /** Ask the turn's question again (the same text): an earlier question takes what came after it along. */
  regenerate(turn) {
    const id = turn?.state.userMessageId;
    const question = (id && visibleItems(this.items).find((i) => i.kind === "user" && String(i.id) === String(id))) || this.lastQuestion();
    const text = question?.text || (question?.parts || []).filter((p) => p?.type === "text").map((p) => p.text).join("\n");
    if (text) this.resend(text, question.id || null);
  }

  async resend(text, questionId = null) {
    if (this.running || !this.agentId) return;
    this.editing = null;
    const cid = this.id;
    const body = { agentId: this.agentId, conversationId: cid, message: text, regenerate: true };
    if (questionId) body.regenerateFrom = String(questionId);
    const done = await this.stream(body, null);
    if (done.status !== "detached" && this.id === cid) {
      this.id = null; // re-read the stored history: the versions and their pager
      await this.update([encodeURIComponent(cid)]);
    }
  }

  /** Thumbs up/down (or none) on an answer, stored with its message. */
  rate(messageId, rating) {
    return put(`/conversations/${seg(this.id)}/messages/${seg(messageId)}/rating`, { rating }).catch((err) => { toastError(err); throw err; });
  }

  /** Decide the waiting call: the turn that asked goes on in place (its card shows the decision, no
   * "/approve" bubble; the server keeps the command message, marked, which the history leaves out). */
  async decide(decision) {
    if (this.running) return;
    const owner = [...this.turns].reverse().find((t) => t.waitingForApproval) || null;
    for (const turn of this.turns) turn.settleApprovals(decision === "approve" ? "approved" : "denied");
    if (!this.agentId) return;
    await this.stream({ agentId: this.agentId, conversationId: this.id, message: "/" + decision }, null, owner);
  }

  /** Stream `body` into a new turn (restored from `state` when re-attaching), or into `into`, a paused turn;
   * `question`: the item of the question it asks (it learns its stored id from the first event: Edit needs it). */
  async stream(body, state, into = null, question = null) {
    let turn = into;
    if (turn) turn.resume();
    else {
      turn = this.makeTurn();
      this.items = [...this.items, { kind: "turn", turn }];
      this.turns.push(turn);
    }
    if (state) turn.restore(state);
    const controller = new AbortController();
    const run = { controller, turn, id: body.conversationId };
    this.running = run;
    this.agentLocked = true;
    this.changed(true);
    const done = await runStream({
      body, turn, signal: controller.signal,
      onFrame: (frame) => {
        if (frame.event === "meta" && question && frame.data?.userMessageId) question.id = String(frame.data.userMessageId);
        if (frame.event === "meta" && this.isNew && this.id === body.conversationId) this.adopt();
      },
    });
    if (this.running === run) this.running = null;
    this.onChange();
    if (done.status !== "detached") {
      if (done.status === "failed" && done.message && /busy/i.test(done.message)) toast(done.message, "error");
      this.list.refresh().then(() => this.list.setActive(this.isNew ? null : this.id));
    }
    return done;
  }

  /** Talk mode: the transcript is the user's message; the answer streams into a new turn. */
  talkTurn(text) {
    this.talking = this.makeTurn();
    this.items = [...this.items, { kind: "user", id: null, text }, { kind: "turn", turn: this.talking }];
    this.turns.push(this.talking);
    this.agentLocked = true;
    this.changed(true);
  }

  talkFrame(frame) {
    const turn = this.talking;
    if (!turn) return;
    if (frame.type === "delta") turn.apply({ event: "content_delta", data: { delta: frame.text } });
    if (frame.type === "approval") turn.apply({ event: "tool_approval_requested", data: { pendingId: frame.callId, toolName: frame.toolName } });
    if (frame.type === "done") turn.apply({ event: "done", data: { status: frame.status || "completed" } });
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
      if (conv?.title) { this.title = conv.title; this.onChange(); }
    });
  }

  async stop() {
    if (!this.running) return;
    try {
      const r = await stopStream(this.running.id);
      if (r && r.stopped === false) toast("Nothing is running");
    } catch (err) {
      toastError(err);
    }
  }

  async changeModel(value) {
    this.modelValue = value;
    this.onChange();
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
      toastError(err);
    }
  }
}
