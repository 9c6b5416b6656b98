// A modal dialog (native <dialog>: focus trap, Esc) and an awaitable confirmation for destructive actions.
import { html, render, useEffect, useRef } from "../ui.js";

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

/**
 * Ask before a destructive action: `if (await confirmDialog({title, message, submit: "Delete"})) …`.
 * Resolves true on confirm, false on Cancel or Esc.
 */
export function confirmDialog({ title, message, submit = "Delete", danger = true }) {
  return new Promise((resolve) => {
    const host = document.createElement("div");
    document.body.append(host);
    const done = (value) => { render(null, host); host.remove(); resolve(value); };
    render(html`<${Dialog} title=${title} onClose=${() => done(false)}>
      <form method="dialog" class="stack" onSubmit=${(e) => { e.preventDefault(); done(true); }}>
        ${message && html`<p>${message}</p>`}
        <div class="actions">
          <button type="button" class="btn" onClick=${() => done(false)}>Cancel</button>
          <button type="submit" class=${danger ? "btn btn-danger" : "btn btn-primary"} autofocus>${submit}</button>
        </div>
      </form>
    <//>`, host);
  });
}
