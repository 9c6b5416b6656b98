// Small DOM helpers. Text always goes in as text nodes; nothing here parses HTML.

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

/** A transient message at the bottom of the screen. */
export function toast(message, kind = "info") {
  let box = document.getElementById("toasts");
  if (!box) {
    box = h("div", { id: "toasts", role: "status", "aria-live": "polite" });
    document.body.append(box);
  }
  const item = h("div", { class: `toast toast-${kind}`, text: message });
  box.append(item);
  setTimeout(() => item.remove(), kind === "error" ? 6000 : 3000);
}

/** Show an error from a failed call. */
export function showError(err) {
  toast(err?.message || String(err), "error");
}

/**
 * A modal form. fields: [{name, label, value, type, options, required, placeholder}].
 * Resolves to the values, or null when cancelled (Esc or Cancel).
 */
export function modal({ title, fields = [], submit = "OK", danger = false, body = null }) {
  return new Promise((resolve) => {
    const inputs = {};
    const rows = fields.map((f) => {
      const id = `modal-${f.name}-${++fieldSeq}`;
      let input;
      if (f.options) {
        input = h("select", { id, name: f.name },
          f.options.map((o) => h("option", { value: o.value ?? o, selected: (o.value ?? o) === f.value, text: o.label ?? o })));
      } else if (f.type === "textarea") {
        input = h("textarea", { id, name: f.name, rows: 4, value: f.value ?? "", placeholder: f.placeholder });
      } else {
        input = h("input", { id, name: f.name, type: f.type || "text", value: f.value ?? "", placeholder: f.placeholder, required: f.required, autocomplete: "off" });
      }
      inputs[f.name] = input;
      return field(f.label, input);
    });
    const dialog = h("dialog", { class: "modal", "aria-label": title });
    const close = (value) => { dialog.close(); dialog.remove(); resolve(value); };
    const form = h("form", {
      method: "dialog",
      onsubmit: (e) => {
        e.preventDefault();
        const values = {};
        for (const [k, el] of Object.entries(inputs)) values[k] = el.value;
        close(values);
      },
    },
    h("h2", { text: title }),
    body,
    rows,
    h("div", { class: "actions" },
      h("button", { type: "button", class: "btn", text: "Cancel", onclick: () => close(null) }),
      h("button", { type: "submit", class: danger ? "btn btn-danger" : "btn btn-primary", text: submit })));
    dialog.append(form);
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); close(null); });
    document.body.append(dialog);
    dialog.showModal();
    const first = Object.values(inputs)[0];
    (first || form.querySelector("button[type=submit]")).focus();
  });
}

/** Ask for confirmation. */
export async function confirmAction(title, message, submit = "Delete") {
  return (await modal({ title, body: h("p", { text: message }), submit, danger: true })) !== null;
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

let fieldSeq = 0;

/** A labelled form control: <div class=field><label for=…>text</label>control</div>. */
export function field(label, control) {
  if (!control.id) control.id = `f${++fieldSeq}`;
  return h("div", { class: "field" }, h("label", { for: control.id, text: label }), control);
}
