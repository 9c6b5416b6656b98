// Image attachments: upload to /api/v1/chat/upload and show images that need the bearer token.
import { api, apiHeaders, takeRenewal } from "../api.js";
import { h } from "../dom.js";

/** Upload one file for a conversation; resolves to {storedName, url, name, size, contentType}. */
export function upload(file, conversationId) {
  const form = new FormData();
  form.append("file", file, file.name);
  form.append("conversationId", conversationId);
  return api("POST", "/chat/upload", form);
}

/** An <img> whose bytes are fetched with the token (uploads are readable by their owner only). */
export function authImage(url, alt) {
  const img = h("img", { alt: alt || "image", class: "attachment-img", loading: "lazy" });
  if (url.startsWith("data:image/")) {
    img.src = url;
  } else if (url.startsWith("/api/v1/")) {
    fetch(url, { headers: apiHeaders() })
      .then((r) => { takeRenewal(r); return r.ok ? r.blob() : null; })
      .then((blob) => { if (blob) img.src = URL.createObjectURL(blob); })
      .catch(() => {});
  }
  return img;
}

/** Chips for files picked but not sent yet. */
export function attachmentChips(files, onRemove) {
  return files.map((file, i) => h("span", { class: "chip" },
    h("span", { class: "chip-name", text: file.name }),
    h("button", { type: "button", class: "chip-x", "aria-label": `Remove ${file.name}`, text: "×", onclick: () => onRemove(i) })));
}
