// The message box: text, image attachments, Send / Stop.
import { h, mount, toast } from "../dom.js";
import { icon } from "../icons.js";
import { attachmentChips } from "./attachments.js";

// What is typed survives a message that could not go (no agent yet) and a visit to another page.
const DRAFT = "chat-draft";

export class Composer {
  constructor({ onSend, onStop, tools = [] }) {
    this.onSend = onSend;
    this.onStop = onStop;
    this.files = [];
    this.running = false;
    this.chips = h("div", { class: "chips" });
    this.fileInput = h("input", { type: "file", accept: "image/*", multiple: true, hidden: true, class: "file-input", onchange: () => this.pick() });
    this.text = h("textarea", {
      class: "composer-text", rows: 1, placeholder: "Message the agent", title: "Enter sends, Shift+Enter adds a line, Esc stops",
      "aria-label": "Message", "aria-keyshortcuts": "Shift+Escape", oninput: () => { this.grow(); this.saveDraft(); }, onkeydown: (e) => this.key(e),
    });
    try { this.text.value = localStorage.getItem(DRAFT) || ""; } catch { /* storage off: no draft */ }
    this.attach = h("button", { type: "button", class: "icon-btn attach", title: "Attach images", "aria-label": "Attach images", onclick: () => this.fileInput.click() }, icon("attach", 20));
    this.sendBtn = h("button", { type: "submit", class: "btn btn-primary send", text: "Send" });
    this.stopBtn = h("button", { type: "button", class: "btn btn-danger stop", text: "Stop", title: "Stop (Esc)", "aria-keyshortcuts": "Escape", hidden: true, onclick: () => this.onStop() });
    this.el = h("form", { class: "composer", onsubmit: (e) => { e.preventDefault(); this.submit(); } },
      this.chips,
      h("div", { class: "composer-row" }, this.attach, ...tools, this.fileInput, this.text, this.sendBtn, this.stopBtn));
  }

  key(e) {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.submit();
    } else if (e.key === "Escape" && !e.shiftKey && this.running) {
      e.preventDefault();
      this.onStop();
    }
  }

  grow() {
    this.text.style.height = "auto";
    this.text.style.height = Math.min(this.text.scrollHeight, 240) + "px";
  }

  pick() {
    const picked = Array.from(this.fileInput.files || []);
    const images = picked.filter((f) => f.type.startsWith("image/"));
    if (images.length < picked.length) toast("Only images can be attached", "error");
    this.files.push(...images);
    this.fileInput.value = "";
    this.renderChips();
  }

  renderChips() {
    mount(this.chips, attachmentChips(this.files, (i) => { this.files.splice(i, 1); this.renderChips(); }));
  }

  submit() {
    if (this.running) return;
    const text = this.text.value.trim();
    if (!text && !this.files.length) return;
    const files = this.files;
    this.files = [];
    this.text.value = "";
    this.grow();
    this.renderChips();
    this.saveDraft();
    // onSend answers false when the message did not go: it comes back into the box, never thrown away.
    Promise.resolve(this.onSend(text, files)).then((sent) => {
      if (sent === false) this.restore(text, files);
    });
  }

  restore(text, files) {
    if (!this.text.value) this.text.value = text;
    this.files = [...files, ...this.files];
    this.renderChips();
    this.grow();
    this.saveDraft();
  }

  saveDraft() {
    try {
      if (this.text.value) localStorage.setItem(DRAFT, this.text.value);
      else localStorage.removeItem(DRAFT);
    } catch { /* storage off: no draft */ }
  }

  setRunning(running) {
    this.running = running;
    this.sendBtn.hidden = running;
    this.stopBtn.hidden = !running;
    this.el.classList.toggle("running", running);
  }

  focus() {
    this.text.focus();
  }
}
