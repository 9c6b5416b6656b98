// Run POST /api/v1/chat/stream with fetch and feed the frames to a Turn, keeping the last event
// id and the turn so far in sessionStorage so a reload can re-attach without duplicating text.
import { apiHeaders, takeRenewal, post, seg } from "../api.js";
import { readSse } from "../sse.js";

const KEY = (conversationId) => `ap.chat.${conversationId}`;
const SAVE_EVERY_MS = 200;

/** The saved progress of a conversation's running turn: {lastEventId, turn} or null. */
export function loadProgress(conversationId) {
  try { return JSON.parse(sessionStorage.getItem(KEY(conversationId)) || "null"); } catch { return null; }
}

export function clearProgress(conversationId) {
  sessionStorage.removeItem(KEY(conversationId));
}

class ProgressSaver {
  constructor(conversationId, turn) {
    this.conversationId = conversationId;
    this.turn = turn;
    this.lastEventId = null;
    this.savedAt = 0;
    this.timer = 0;
    this.frozen = false;
    this.flush = this.flush.bind(this);
    this.freeze = this.freeze.bind(this);
    this.thaw = this.thaw.bind(this);
    window.addEventListener("pagehide", this.freeze);
    window.addEventListener("pageshow", this.thaw);
  }

  /** The page is going away: save the turn as it stands, then nothing more. Its fetch fails while it
   * unloads, and that error belongs to this page, not to the turn the next page re-attaches to. */
  freeze() {
    this.flush();
    this.frozen = true;
  }

  /** Back from the back-forward cache: this page saves again. */
  thaw(event) {
    if (event.persisted) this.frozen = false;
  }

  note(id) {
    if (id === null || id === undefined || id === "") return;
    this.lastEventId = String(id);
    const wait = SAVE_EVERY_MS - (Date.now() - this.savedAt);
    if (wait <= 0) this.flush();
    else if (!this.timer) this.timer = setTimeout(this.flush, wait);
  }

  flush() {
    clearTimeout(this.timer);
    this.timer = 0;
    if (this.lastEventId === null || this.frozen) return;
    this.savedAt = Date.now();
    const value = { lastEventId: this.lastEventId, turn: this.turn.snapshot() };
    try { sessionStorage.setItem(KEY(this.conversationId), JSON.stringify(value)); } catch { /* quota: reconnect replays */ }
  }

  close() {
    this.flush();
    window.removeEventListener("pagehide", this.freeze);
    window.removeEventListener("pageshow", this.thaw);
  }
}

/**
 * Stream one request into `turn`. body: a ChatStreamRequest. Resolves to the `done` data
 * (or {status:"failed"}); `signal` aborts the read (the server keeps running).
 */
export async function runStream({ body, turn, signal, onFrame }) {
  const conversationId = body.conversationId;
  const saver = new ProgressSaver(conversationId, turn);
  let done = null;
  try {
    const response = await fetch("/api/v1/chat/stream", {
      method: "POST",
      headers: apiHeaders({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(body),
      signal,
    });
    takeRenewal(response);
    if (!response.ok || !response.body) {
      turn.apply({ event: "error", data: { message: `HTTP ${response.status}` } });
      return { status: "failed" };
    }
    for await (const frame of readSse(response)) {
      if (frame.event === "heartbeat") continue;
      turn.apply(frame);
      saver.note(frame.id);
      onFrame?.(frame);
      if (frame.event === "done") done = frame.data || { status: "completed" };
      if (frame.event === "error" && !done) done = { status: "failed", message: frame.data?.message };
    }
  } catch (err) {
    // Aborted by us (switching conversation) or by the page going away: the turn goes on
    // server-side, and the saved progress lets the next page re-attach.
    if (err?.name === "AbortError" || signal?.aborted) return { status: "detached" };
    if (saver.frozen) return { status: "detached" }; // the page is unloading: the next one re-attaches
    if (!done) {
      turn.apply({ event: "error", data: { message: "Connection lost; reopen the conversation to re-attach" } });
      return { status: "detached" };
    }
  } finally {
    turn.flush();
    saver.close();
  }
  if (!done) {
    turn.apply({ event: "error", data: { message: "The connection closed before the answer finished" } });
    return { status: "detached" };
  }
  clearProgress(conversationId);
  return done;
}

/** Ask the server to stop the conversation's running turn. */
export function stopStream(conversationId) {
  return post(`/chat/${seg(conversationId)}/stop`);
}
