// A labelled form control with a hint and an inline error (aria-invalid, aria-describedby).
import { cloneElement, html, useId } from "../ui.js";

/**
 * <Field label="Name" error=${errors.name} hint="…"><input value=… /></Field>
 * The single child control gets the id, aria-invalid and aria-describedby; `wide` spans a form grid's width.
 */
export function Field({ label, error, hint, children, class: cls = "", wide = false }) {
  const id = useId();
  const control = Array.isArray(children) ? children[0] : children;
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(" ") || undefined;
  const input = control && cloneElement(control, {
    id: control.props.id || id, "aria-invalid": error ? "true" : undefined, "aria-describedby": described,
  });
  return html`<div class=${`field ${error ? "has-error" : ""} ${wide ? "wide-field" : ""} ${cls}`}>
    <label for=${control?.props.id || id}>${label}</label>
    ${input}
    ${hint && html`<small id=${`${id}-hint`} class="muted">${hint}</small>`}
    ${error && html`<small id=${`${id}-error`} class="field-error" role="alert">${error}</small>`}
  </div>`;
}

/** A checkbox with its label on the right. */
export function Check({ label, checked, onChange, disabled, hint }) {
  const id = useId();
  // The hint is its own line, described-by the box: read as part of the label it said "Enabled off: …".
  return html`<div class="check">
    <input id=${id} type="checkbox" checked=${!!checked} disabled=${disabled} aria-describedby=${hint ? `${id}-hint` : undefined}
      onChange=${(e) => onChange(e.currentTarget.checked)} />
    <span><label for=${id}>${label}</label>${hint && html`<small class="muted check-hint" id=${`${id}-hint`}>${hint}</small>`}</span>
  </div>`;
}

/**
 * Split an API error ("field: message", the server's validation shape) into {field: message};
 * an error that names no known field lands under "_" (show it above the form).
 */
export function fieldErrors(err, fields = []) {
  const text = err?.message || String(err || "");
  const m = /^([A-Za-z_][\w.\[\]]*): (.+)$/s.exec(text);
  if (m) {
    const name = m[1].split(/[.[]/)[0];
    if (!fields.length || fields.includes(name)) return { [name]: m[2] };
  }
  return { _: text };
}
