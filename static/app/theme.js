// Light and dark: follows prefers-color-scheme until the user picks one with the toggle.
import { Icon } from "./components/icon.js";
import { html, useState } from "./ui.js";

const KEY = "ap.theme";
const media = window.matchMedia("(prefers-color-scheme: dark)");

function current() {
  return localStorage.getItem(KEY) || (media.matches ? "dark" : "light");
}

function apply() {
  const chosen = localStorage.getItem(KEY);
  if (chosen) document.documentElement.dataset.theme = chosen;
  else delete document.documentElement.dataset.theme;
}

export function initTheme() {
  apply();
  media.addEventListener("change", apply);
}

/** The header's button that switches between light and dark. */
export function ThemeToggle() {
  const [dark, setDark] = useState(current() === "dark");
  const label = dark ? "Light theme" : "Dark theme";
  const flip = () => {
    localStorage.setItem(KEY, dark ? "light" : "dark");
    apply();
    setDark(!dark);
  };
  return html`<span class="theme-slot"><button type="button" class="icon-btn theme-toggle" title=${label} aria-label=${label} onClick=${flip}>
    <${Icon} name=${dark ? "sun" : "moon"} size=${18} /></button></span>`;
}
