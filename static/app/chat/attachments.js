// Image attachments: upload to /api/v1/chat/upload and show images that need the bearer token.
import { api, apiHeaders, takeRenewal } from "../api.js";
import { html, useEffect, useState } from "../ui.js";

/** Upload one file for a conversation; resolves to {storedName, url, name, size, contentType}. */
export function upload(file, conversationId) {
  const form = new FormData();
  form.append("file", file, file.name);
  form.append("conversationId", conversationId);
  return api("POST", "/chat/upload", form);
}

/** An <img> whose bytes are fetched with the token (uploads are readable by their owner only). */
export function AuthImage({ url, alt }) {
  const [src, setSrc] = useState(url.startsWith("data:image/") ? url : null);
  useEffect(() => {
    if (!url.startsWith("/api/v1/")) return undefined;
    let live = true;
    let made = null;
    fetch(url, { headers: apiHeaders() })
      .then((r) => { takeRenewal(r); return r.ok ? r.blob() : null; })
      .then((blob) => { if (blob && live) { made = URL.createObjectURL(blob); setSrc(made); } })
      .catch(() => {});
    return () => { live = false; if (made) URL.revokeObjectURL(made); };
  }, [url]);
  return html`<img alt=${alt || "image"} class="attachment-img" loading="lazy" src=${src || undefined} />`;
}

/** Chips for files picked but not sent yet. */
export function AttachmentChips({ files, onRemove }) {
  return files.map((file, i) => html`<span class="chip">
    <span class="chip-name">${file.name}</span>
    <button type="button" class="chip-x" aria-label=${`Remove ${file.name}`} onClick=${() => onRemove(i)}>×</button>
  </span>`);
}
