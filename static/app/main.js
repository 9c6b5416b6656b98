// Entry point: decides between setup, login and the console shell (shell.js routes #/<page>/<args>).
import { bus, get, session } from "./api.js";
import { toastError as showError } from "./components/toast.js";
import { initOffline } from "./offline.js";
import { initTheme } from "./theme.js";
import { showLogin, showSetup } from "./views/auth.js";
import { Shell } from "./shell.js";
import { html, render } from "./ui.js";

const root = document.getElementById("app");
let shellShown = false;
let renders = 0;

async function start() {
  const seq = ++renders;
  if (session.token) {
    if (!shellShown) {
      root.replaceChildren();
      render(html`<${Shell} onLogout=${logout} />`, root);
      shellShown = true;
    }
    return;
  }
  hideShell();
  let status = null;
  try { status = await get("/setup/status"); } catch (err) { showError(err); }
  if (seq !== renders) return;
  if (status && !status.hasAdmin) showSetup(root, loggedIn);
  else showLogin(root, loggedIn);
}

function hideShell() {
  if (shellShown) render(null, root);
  shellShown = false;
}

function loggedIn() {
  root.replaceChildren();
  if (!location.hash || location.hash === "#/login") history.replaceState(null, "", "#/");
  start();
}

function logout() {
  session.logout();
  hideShell();
  history.replaceState(null, "", "#/login");
  start();
}

bus.addEventListener("auth-lost", () => { if (shellShown) logout(); });
initTheme();
initOffline();
start();
