// The message box: text, image attachments, Send / Stop.
import { html, useRef, useState } from "../ui.js";
import { Icon, toast } from "../components/index.js";
import { AttachmentChips } from "./attachments.js";

// What is typed survives a message that could not go (no agent yet) and a visit to another page.
const DRAFT = "chat-draft";

function readDraft() {
  try { return localStorage.getItem(DRAFT) || ""; } catch { return ""; } // storage off: no draft
}

function saveDraft(text) {
  try {
    if (text) localStorage.setItem(DRAFT, text);
    else localStorage.removeItem(DRAFT);
  } catch { /* storage off: no draft */ }
}

/**
 * onSend(text, files) answers false when the message did not go: it comes back into the box, never thrown
 * away. `boxRef` receives the textarea (the page focuses it); `tools`: extra buttons (the microphone).
 */
export function Composer({ running, onSend, onStop, tools, boxRef }) {
  const [text, setText] = useState(readDraft);
  const [files, setFiles] = useState([]);
  const fileInput = useRef(null);
  const box = useRef(null);
  const grow = () => {
    const el = box.current;
    if (!el) return;
    el.style.height = "auto";
    el.style.height = Math.min(el.scrollHeight, 240) + "px";
  };
  const setBox = (el) => {
    box.current = el;
    if (boxRef) boxRef.current = el;
  };
  const change = (value) => {
    setText(value);
    saveDraft(value);
  };
  const submit = () => {
    if (running) return;
    const value = (box.current?.value ?? text).trim();
    if (!value && !files.length) return;
    const sent = files;
    setFiles([]);
    change("");
    requestAnimationFrame(grow);
    Promise.resolve(onSend(value, sent)).then((ok) => {
      if (ok !== false) return;
      setText((now) => { const back = now || value; saveDraft(back); return back; });
      setFiles((now) => [...sent, ...now]);
    });
  };
  const key = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    } else if (e.key === "Escape" && !e.shiftKey && running) {
      e.preventDefault();
      onStop();
    }
  };
  const pick = () => {
    const picked = Array.from(fileInput.current.files || []);
    const images = picked.filter((f) => f.type.startsWith("image/"));
    if (images.length < picked.length) toast("Only images can be attached", "error");
    setFiles((now) => [...now, ...images]);
    fileInput.current.value = "";
  };
  return html`<form class=${"composer" + (running ? " running" : "")} onSubmit=${(e) => { e.preventDefault(); submit(); }}>
    <div class="chips"><${AttachmentChips} files=${files} onRemove=${(i) => setFiles((now) => now.filter((_, k) => k !== i))} /></div>
    <div class="composer-row">
      <button type="button" class="icon-btn attach" title="Attach images" aria-label="Attach images" onClick=${() => fileInput.current.click()}><${Icon} name="attach" size=${20} /></button>
      ${tools}
      <input type="file" accept="image/*" multiple hidden class="file-input" ref=${fileInput} onChange=${pick} />
      <textarea class="composer-text" rows="1" placeholder="Message the agent" title="Enter sends, Shift+Enter adds a line, Esc stops"
        aria-label="Message" aria-keyshortcuts="Shift+Escape" ref=${setBox} value=${text}
        onInput=${(e) => { change(e.currentTarget.value); grow(); }} onKeyDown=${key}></textarea>
      <button type="submit" class="btn btn-primary send" hidden=${running}>Send</button>
      <button type="button" class="btn btn-danger stop" title="Stop (Esc)" aria-keyshortcuts="Escape" hidden=${!running} onClick=${() => onStop()}>Stop</button>
    </div>
  </form>`;
}
