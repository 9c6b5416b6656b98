// The console's icons as Preact elements (same paths as icons.js); decorative: label the button instead.
import { html } from "../ui.js";
import { PATHS } from "../icons.js";

export function Icon({ name, size = 18 }) {
  return html`<svg class="icon" viewBox="0 0 24 24" width=${size} height=${size} fill="none" stroke="currentColor"
    stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true"><path d=${PATHS[name] || ""} /></svg>`;
}
