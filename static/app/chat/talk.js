// Talk mode in the chat view: a microphone button that streams 16 kHz PCM16 to the talk WebSocket,
// shows the live transcript, renders the answer and plays its spoken sentences.
// Hold the button to talk (push-to-talk), or click once to start and again to send; Stop cancels.
// `TalkControl` holds the socket, microphone and player; `MicButton` and `TalkBar` draw it.
import { get, session } from "../api.js";
import { html } from "../ui.js";
import { Icon } from "../components/index.js";

const HOLD_MS = 350;
const WORKLET = new URL("./mic-worklet.js", import.meta.url);
const CLOSE_REASONS = { 4401: "Sign in again to talk", 4403: "Talk mode is off (feature flag talk_mode)" };

export class TalkControl {
  /** context(): {agentId, conversationId}; onTranscript(text) and onFrame(frame) render the exchange; onChange()
   * redraws the button and the talk bar. */
  constructor({ context, onTranscript, onFrame, onDone, onChange }) {
    this.onChange = onChange || (() => {});
    this.context = context;
    this.onTranscript = onTranscript;
    this.onFrame = onFrame;
    this.onDone = onDone;
    this.ws = null;
    this.capture = null; // {ctx, stream, node}
    this.listening = false;
    this.pressedAt = 0;
    this.endOnRelease = false;
    this.player = null;
    this.playAt = 0;
    this.sources = new Set();
    this.pressed = false; // the microphone is on
    this.stopShown = false;
    this.statusText = "";
    this.failed = false;
    // The microphone shows only while talk mode is on (feature flag talk_mode): off, the server refuses it.
    this.micShown = false;
    this.onFlags = () => this.checkEnabled();
    window.addEventListener("flags-changed", this.onFlags);
    this.checkEnabled();
  }

  async checkEnabled() {
    try {
      const flags = await get("/feature-flags");
      this.micShown = (flags || []).some((f) => f.key === "talk_mode" && f.enabled);
    } catch {
      this.micShown = false; // unknown: offer nothing that would fail
    }
    this.onChange();
  }

  setStatus(text, failed = false) {
    this.statusText = text || "";
    this.failed = failed;
    this.onChange();
  }

  showStop(shown) {
    this.stopShown = shown;
    this.onChange();
  }

  /** Talking ended with an error: said where the talk status shows (it stays until the next try), nothing
   * left listening, and no Stop button for a conversation that is over. */
  fail(message) {
    this.listening = false;
    this.resetButton();
    this.stopCapture();
    this.stopShown = this.sources.size > 0;
    this.setStatus(message, true);
  }

  async press() {
    // Held down: push-to-talk (letting go sends). A short click starts; the next click sends.
    this.endOnRelease = this.listening;
    this.pressedAt = performance.now();
    if (!this.listening) await this.listen();
  }

  release() {
    if (!this.listening) return;
    if (this.endOnRelease || performance.now() - this.pressedAt >= HOLD_MS) this.endUtterance();
  }

  toggle() {
    if (this.listening) this.endUtterance();
    else this.listen();
  }

  async socket() {
    if (this.ws && this.ws.readyState <= WebSocket.OPEN) return this.ws;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = new URLSearchParams({ token: session.token, workspaceId: session.workspace });
    const ws = new WebSocket(`${scheme}://${location.host}/api/v1/talk/ws?${query}`);
    ws.binaryType = "arraybuffer";
    ws.onmessage = (e) => this.received(e.data);
    ws.onclose = (e) => {
      if (this.ws !== ws) return;
      this.ws = null;
      if (CLOSE_REASONS[e.code]) {
        this.fail(CLOSE_REASONS[e.code]);
        if (e.code === 4403) this.micShown = false;
        this.onChange();
      } else if (this.listening || this.statusText) {
        this.fail("The talk connection closed: press the microphone to try again");
      }
    };
    this.ws = ws;
    await new Promise((resolve, reject) => {
      ws.addEventListener("open", resolve, { once: true });
      ws.addEventListener("close", () => reject(new Error("closed")), { once: true });
    });
    return ws;
  }

  async listen() {
    const { agentId, conversationId } = this.context();
    if (!agentId) {
      this.fail("Create or pick an agent first");
      return;
    }
    this.listening = true;
    this.pressed = true;
    this.showStop(true);
    this.silence();
    try {
      const ws = await this.socket();
      ws.send(JSON.stringify({ type: "start", agentId, conversationId, sampleRate: 16000 }));
      await this.startCapture(ws);
      if (this.listening && this.ws === ws) this.setStatus("Listening…");
      else this.stopCapture(); // the socket closed meanwhile (fail() said why): the microphone goes off again
    } catch (err) {
      if (err.message !== "closed") this.fail(`Microphone: ${err.message}`);
      else if (this.listening) this.fail("The talk connection closed: press the microphone to try again");
    }
  }

  async startCapture(ws) {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } });
    const ctx = new AudioContext({ sampleRate: 16000 });
    await ctx.audioWorklet.addModule(WORKLET);
    const node = new AudioWorkletNode(ctx, "pcm16-capture");
    node.port.onmessage = (e) => { if (ws.readyState === WebSocket.OPEN && this.listening) ws.send(e.data); };
    ctx.createMediaStreamSource(stream).connect(node);
    this.capture = { ctx, stream, node };
  }

  stopCapture() {
    const capture = this.capture;
    this.capture = null;
    if (!capture) return;
    capture.stream.getTracks().forEach((t) => t.stop());
    capture.ctx.close();
  }

  resetButton() {
    this.pressed = false;
    this.onChange();
  }

  endUtterance() {
    if (!this.listening) return;
    this.capture?.node.port.postMessage("flush");
    this.listening = false;
    this.resetButton();
    // Let the flushed chunk reach the socket before `end`.
    setTimeout(() => {
      this.stopCapture();
      if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: "end" }));
      this.setStatus("Thinking…");
    }, 50);
  }

  stop() {
    this.listening = false;
    this.resetButton();
    this.stopCapture();
    this.silence();
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: "stop" }));
    this.stopShown = false;
    this.setStatus("");
  }

  received(data) {
    if (data instanceof ArrayBuffer) {
      this.play(data);
      return;
    }
    let frame;
    try { frame = JSON.parse(data); } catch { return; }
    if (frame.type === "transcript" && !frame.final) {
      if (this.listening) this.setStatus(`Listening… ${frame.text}`);
    } else if (frame.type === "transcript") {
      this.setStatus(`You said: ${frame.text || "(nothing heard)"}`);
      if (frame.text) this.onTranscript(frame.text);
    } else if (frame.type === "error") {
      this.fail(frame.message);
    } else {
      this.onFrame(frame);
      if (frame.type === "done") {
        this.stopShown = this.listening || this.sources.size > 0;
        this.setStatus("");
        this.onDone(frame);
      }
    }
  }

  async play(buffer) {
    this.player ||= new AudioContext();
    const audio = await this.player.decodeAudioData(buffer);
    const source = this.player.createBufferSource();
    source.buffer = audio;
    source.connect(this.player.destination);
    this.playAt = Math.max(this.playAt, this.player.currentTime);
    source.start(this.playAt);
    this.playAt += audio.duration;
    this.sources.add(source);
    this.showStop(true);
    source.onended = () => {
      this.sources.delete(source);
      if (!this.sources.size && !this.listening) this.showStop(false);
    };
  }

  silence() {
    for (const s of this.sources) { try { s.stop(); } catch { /* already ended */ } }
    this.sources.clear();
    this.playAt = 0;
  }

  close() {
    window.removeEventListener("flags-changed", this.onFlags);
    this.stop();
    this.ws?.close();
    this.player?.close();
  }
}

/** The microphone in the message box: hold to talk, or click to start and again to send. */
export function MicButton({ talk }) {
  return html`<button type="button" class=${"icon-btn mic" + (talk.pressed ? " on" : "")} hidden=${!talk.micShown}
      title="Talk: hold to speak, or click to start and click again to send" aria-label="Talk" aria-pressed=${String(talk.pressed)}
      onPointerDown=${(e) => { e.preventDefault(); talk.press(); }} onPointerUp=${() => talk.release()}
      onKeyDown=${(e) => { if (e.key === " " || e.key === "Enter") { e.preventDefault(); talk.toggle(); } }}>
    <${Icon} name="mic" size=${20} />
  </button>`;
}

/** What talking is doing (or why it failed; it stays until the next try) and its Stop button. */
export function TalkBar({ talk }) {
  return html`<div class="talk-bar">
    <div class=${"talk-status" + (talk.failed ? " talk-error" : "")} aria-live="polite" role=${talk.failed ? "alert" : "status"}
      hidden=${!talk.statusText}>${talk.statusText}</div>
    <button type="button" class="btn btn-small talk-stop" hidden=${!talk.stopShown} onClick=${() => talk.stop()}>Stop talking</button>
  </div>`;
}
