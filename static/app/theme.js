// Light and dark: follows prefers-color-scheme until the user picks one with the toggle.
import { h } from "./dom.js";
import { icon } from "./icons.js";

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

/** A button that switches between light and dark. */
export function themeToggle() {
  const button = h("button", { type: "button", class: "icon-btn theme-toggle" });
  const label = () => {
    const dark = current() === "dark";
    button.replaceChildren(icon(dark ? "sun" : "moon", 18));
    button.title = dark ? "Light theme" : "Dark theme";
    button.setAttribute("aria-label", button.title);
  };
  button.addEventListener("click", () => {
    localStorage.setItem(KEY, current() === "dark" ? "light" : "dark");
    apply();
    label();
  });
  label();
  return button;
}
