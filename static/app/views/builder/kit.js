// Shared pieces of the "build" pages (skills, tools, memory, goals, automation, channels, data):
// a Preact page adapter for main.js's view interface, a data-loading hook and small components.
import { html, render, useState, useEffect, useCallback, useRef } from "../../ui.js";
import { showError, toast, confirmAction, modal } from "../../dom.js";
import { Field as SharedField, Empty, useSession } from "../../components/index.js";

export { Empty, useSession };
export { html, useState, useEffect, useCallback, useRef, showError, toast, confirmAction, modal };

if (!document.querySelector("link[data-build-css]")) {
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/static/app/views/builder/build.css";
  link.dataset.buildCss = "1";
  document.head.appendChild(link);
}

/** A page component for nav.js: the page frame around `Component`, which gets the hash's args. */
export function page(Component) {
  return function BuildPage({ args }) {
    return html`<div class="page-inner wide build-page"><${Component} args=${args || []} /></div>`;
  };
}

/** Load data with `fn`; reloads when `deps` change. Errors are shown once as a toast. */
export function useLoad(fn, deps = []) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const seq = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await fn();
      if (mine === seq.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === seq.current) setState({ data: undefined, error, loading: false });
      showError(error);
    }
  }, deps);
  useEffect(() => { reload(); }, [reload]);
  return { ...state, reload };
}

/** Run an action with a busy flag; toasts `done` on success, shows errors. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (fn, done) => {
    setBusy(true);
    try {
      const result = await fn();
      if (done) toast(typeof done === "function" ? done(result) : done, "ok");
      return result;
    } catch (err) {
      showError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return [busy, run];
}

/** Tabs as links (#/<page>/<tab>) so every tab has an address. */
export function Tabs({ base, tabs, current }) {
  return html`<nav class="tabs" aria-label="Sections">
    ${tabs.map(([key, label]) => html`<a href=${`#/${base}/${key}`} class="tab" aria-current=${key === current ? "page" : undefined}>${label}</a>`)}
  </nav>`;
}

export function Head({ title, subtitle, children }) {
  return html`<div class="page-head">
    <div><h1>${title}</h1>${subtitle ? html`<p class="muted page-sub">${subtitle}</p>` : null}</div>
    ${children ? html`<div class="page-actions">${children}</div>` : null}</div>`;
}

export function Badge({ kind = "", children }) {
  return html`<span class=${`badge ${kind}`}>${children}</span>`;
}

/** Enabled state as a labelled switch (shows the new state at once; the next load confirms it). */
export function Toggle({ checked, onChange, label, disabled }) {
  const [on, setOn] = useState(!!checked);
  useEffect(() => setOn(!!checked), [checked]);
  return html`<label class="switch"><input type="checkbox" role="switch" checked=${on} disabled=${disabled}
    aria-label=${label} onChange=${(e) => { setOn(e.currentTarget.checked); onChange(e.currentTarget.checked); }} /><span class="switch-ui" aria-hidden="true"></span></label>`;
}

/** The shared labelled control; `wide` spans a form grid's full width. */
export function Field({ wide, ...props }) {
  return html`<${SharedField} ...${props} class=${wide ? "wide-field" : ""} />`;
}

/** Pretty JSON in a scrollable block. */
export function Json({ value }) {
  return html`<pre class="json">${JSON.stringify(value, null, 2)}</pre>`;
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

/** Read a <form>'s named controls into an object (checkboxes as booleans). */
export function formValues(form) {
  const out = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    out[el.name] = el.type === "checkbox" ? el.checked : el.value;
  }
  return out;
}

/** Tool names bound to an agent: rows `[{toolName}]` (current) or `{toolNames}` (earlier shape). */
export function boundNames(data, key = "toolName") {
  if (Array.isArray(data)) return data.map((r) => (typeof r === "string" ? r : r[key])).filter(Boolean);
  return data?.[`${key}s`] || [];
}

/** Records of a paged answer or the list itself. */
export function rows(data) {
  if (Array.isArray(data)) return data;
  if (data && Array.isArray(data.records)) return data.records;
  if (data && Array.isArray(data.items)) return data.items;
  return [];
}
