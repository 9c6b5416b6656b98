// Small DOM helpers for the one view still written as classes, the chat view (views/chat.js, chat/*): only what it
// imports is here. Text always goes in as text nodes; nothing here parses HTML. Every other page uses components/
// (Preact + htm); when the chat view moves there too, this file goes.
import { confirmDialog } from "./components/dialog.js";

/** Create an element: h("button", {class: "x", onclick: fn, text: "Go"}, child, ...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  let initial;
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = String(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "value") initial = value;
    else if (key === "checked" || key === "selected" || key === "disabled") el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  if (initial !== undefined) el.value = initial; // after the children: a <select>'s options
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace an element's children. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Toasts and dialogs have one implementation, in components/: these names stay for the pages not yet moved.
export { toast, toastError as showError } from "./components/toast.js";
export { formDialog as modal } from "./components/dialog.js";

/** Ask for confirmation. */
export function confirmAction(title, message, submit = "Delete") {
  return confirmDialog({ title, message, submit });
}

/** Format an ISO time for lists. */
export function shortTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const now = new Date();
  return d.toDateString() === now.toDateString()
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleDateString([], { month: "short", day: "numeric" });
}

/** A random id usable on plain-HTTP LAN pages (crypto.randomUUID needs a secure context). */
export function randomId(prefix = "c") {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return prefix + "-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
