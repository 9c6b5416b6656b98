// Small controls: a page heading, badges, an on/off switch, tabs as links, JSON shown as text.
import { html, useEffect, useState } from "../ui.js";

/** A page's heading with its subtitle and actions (PageFrame draws the same for pages that load one thing). */
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

/** Tabs as links (#/<page>/<tab>) so every tab has an address. */
export function Tabs({ base, tabs, current }) {
  return html`<nav class="tabs" aria-label="Sections">
    ${tabs.map(([key, label]) => html`<a href=${`#/${base}/${key}`} class="tab" aria-current=${key === current ? "page" : undefined}>${label}</a>`)}
  </nav>`;
}

/** Pretty JSON in a scrollable block. */
export function Json({ value }) {
  return html`<pre class="json">${JSON.stringify(value, null, 2)}</pre>`;
}
