// The public webchat widget: a small chat box talking to /api/v1/channels/webchat/* with the channel's
// public token. Used by /webchat (the page the embed snippet frames) and by the console's live preview.
// Plain DOM, text only (nothing here parses HTML), no dependencies.

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function sessionIdFor(token) {
  const key = `ap.webchat.${token}`;
  let id = localStorage.getItem(key);
  if (!id) {
    const bytes = crypto.getRandomValues(new Uint8Array(12));
    id = "s-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    localStorage.setItem(key, id);
  }
  return id;
}

async function* frames(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = /\r?\n\r?\n/.exec(buffer))) {
      const block = buffer.slice(0, cut.index);
      buffer = buffer.slice(cut.index + cut[0].length);
      let event = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!data.length) continue;
      let parsed = data.join("\n");
      try { parsed = JSON.parse(parsed); } catch { /* text */ }
      yield { event, data: parsed };
    }
  }
}

/** Mount the widget into `root`; `base` is the platform's origin ("" for the same origin). */
export async function mountWebchat(root, { token, base = "", sessionId } = {}) {
  root.replaceChildren();
  const box = el("div", "wc");
  const head = el("div", "wc-head", "Chat");
  const log = el("div", "wc-log");
  log.setAttribute("aria-live", "polite");
  log.setAttribute("role", "log");
  const form = el("form", "wc-form");
  const input = el("input", "wc-input");
  input.placeholder = "Type a message";
  input.setAttribute("aria-label", "Message");
  const send = el("button", "wc-send", "Send");
  send.type = "submit";
  form.append(input, send);
  box.append(head, log, form);
  root.append(box);
  const session = sessionId || sessionIdFor(token);
  const add = (who, text) => {
    const item = el("div", `wc-msg wc-${who}`, text);
    log.append(item);
    log.scrollTop = log.scrollHeight;
    return item;
  };
  try {
    const r = await fetch(`${base}/api/v1/channels/webchat/config?token=${encodeURIComponent(token)}`);
    const cfg = (await r.json()).data;
    if (!r.ok || !cfg) throw new Error("This chat is not available.");
    head.textContent = cfg.title || cfg.agentName || "Chat";
    if (cfg.welcomeMessage) add("bot", cfg.welcomeMessage);
  } catch (err) {
    add("error", err.message || "This chat is not available.");
    input.disabled = true;
    send.disabled = true;
    return;
  }
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    add("user", text);
    const answer = add("bot", "");
    answer.dataset.status = "streaming";
    send.disabled = true;
    try {
      const r = await fetch(`${base}/api/v1/channels/webchat/stream`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify({ token, sessionId: session, message: text }),
      });
      if (!r.ok) {
        let msg = `HTTP ${r.status}`;
        try { msg = (await r.json()).msg || msg; } catch { /* not JSON */ }
        throw new Error(msg);
      }
      for await (const frame of frames(r)) {
        if (frame.event === "content_delta") answer.textContent += frame.data.delta || "";
        else if (frame.event === "error") throw new Error(frame.data.message || "The answer failed.");
        else if (frame.event === "done") break;
        log.scrollTop = log.scrollHeight;
      }
      answer.dataset.status = "done";
    } catch (err) {
      answer.dataset.status = "error";
      answer.className = "wc-msg wc-error";
      answer.textContent = err.message || "The answer failed.";
    } finally {
      send.disabled = false;
      input.focus();
    }
  });
}
