// Modal dialogs (native <dialog>: focus trap, Esc): a component, an awaitable confirmation and an awaitable
// small form. The one implementation.
import { html, render, useEffect, useRef } from "../ui.js";
import { Field } from "./field.js";

/** <Dialog title="…" onClose=${fn}>…</Dialog>: shown while rendered; Esc or the backdrop's cancel calls onClose. */
export function Dialog({ title, onClose, children, class: cls = "" }) {
  const ref = useRef(null);
  useEffect(() => {
    const el = ref.current;
    if (el && !el.open) el.showModal();
    return () => { if (el?.open) el.close(); };
  }, []);
  return html`<dialog ref=${ref} class=${`modal ${cls}`} aria-label=${title}
      onCancel=${(e) => { e.preventDefault(); onClose?.(); }}>
    <h2>${title}</h2>
    ${children}
  </dialog>`;
}

// A dialog rendered by awaitDialog is a Preact root of its own, so useId restarts there and its fields' ids
// would repeat the page's: its controls get ids from this counter instead.
let dialogSeq = 0;

/** Render `view(done)` in a dialog of its own; resolves with what `done` is called with. */
function awaitDialog(view) {
  return new Promise((resolve) => {
    const host = document.createElement("div");
    document.body.append(host);
    const done = (value) => { render(null, host); host.remove(); resolve(value); };
    render(view(done), host);
  });
}

/**
 * Ask before a destructive action: `if (await confirmDialog({title, message, submit: "Delete"})) …`.
 * Resolves true on confirm, false on Cancel or Esc.
 */
export function confirmDialog({ title, message, submit = "Delete", danger = true }) {
  return formDialog({ title, message, submit, danger }).then((values) => values !== null);
}

/**
 * A small form in a dialog: fields [{name, label, value, type ("textarea", "password", …), options, required,
 * placeholder}], an optional `message` (text) or `body` (an element) above them.
 * Resolves to {name: value}, or null on Cancel or Esc.
 */
export function formDialog({ title, fields = [], submit = "OK", danger = false, message, body }) {
  const prefix = `dlg${++dialogSeq}`;
  return awaitDialog((done) => html`<${Dialog} title=${title} onClose=${() => done(null)}>
    <form method="dialog" class="stack" onSubmit=${(e) => {
      e.preventDefault();
      const values = {};
      for (const f of fields) values[f.name] = e.currentTarget.elements[f.name].value;
      done(values);
    }}>
      ${message && html`<p>${message}</p>`}
      ${body}
      ${fields.map((f, i) => html`<${Field} key=${f.name} label=${f.label}>${control(f, i === 0, `${prefix}-${f.name}`)}<//>`)}
      <div class="actions">
        <button type="button" class="btn" onClick=${() => done(null)}>Cancel</button>
        <button type="submit" class=${danger ? "btn btn-danger" : "btn btn-primary"} autofocus=${!fields.length}>${submit}</button>
      </div>
    </form>
  <//>`);
}

function control(f, first, id) {
  if (f.options) {
    return html`<select id=${id} name=${f.name} autofocus=${first}>
      ${f.options.map((o) => html`<option value=${o.value ?? o} selected=${(o.value ?? o) === f.value}>${o.label ?? o}</option>`)}</select>`;
  }
  if (f.type === "textarea") return html`<textarea id=${id} name=${f.name} rows="4" placeholder=${f.placeholder} autofocus=${first} value=${f.value ?? ""}></textarea>`;
  return html`<input id=${id} name=${f.name} type=${f.type || "text"} value=${f.value ?? ""} placeholder=${f.placeholder}
    required=${f.required} autocomplete="off" autofocus=${first} />`;
}
