// Entry point: decides between setup, login and the console shell (shell.js routes #/<page>/<args>).
import { bus, get, session } from "./api.js";
import { toastError as showError } from "./components/toast.js";
import { initOffline } from "./offline.js";
import { initTheme } from "./theme.js";
import { Login, Setup } from "./views/auth.js";
import { Shell } from "./shell.js";
import { html, render } from "./ui.js";

const root = document.getElementById("app");
root.replaceChildren(); // the static "Loading…" placeholder: from here on only Preact renders into #app
let shellShown = false;
let renders = 0;

async function start() {
  const seq = ++renders;
  if (session.token) {
    if (!shellShown) {
      render(html`<${Shell} onLogout=${logout} />`, root);
      shellShown = true;
    }
    return;
  }
  hideShell();
  let status = null;
  try { status = await get("/setup/status"); } catch (err) { showError(err); }
  if (seq !== renders) return;
  // One Preact tree owns #app: the forms, then the shell, are rendered into it in turn.
  if (status && !status.hasAdmin) render(html`<${Setup} onDone=${loggedIn} />`, root);
  else render(html`<${Login} onDone=${loggedIn} />`, root);
}

function hideShell() {
  if (shellShown) render(null, root);
  shellShown = false;
}

function loggedIn() {
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
