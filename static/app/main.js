// Entry point: decides between setup, login and the console, and routes #/<page>/<args>.
import { bus, get, session } from "./api.js";
import { h, mount, showError } from "./dom.js";
import { initTheme, themeToggle } from "./theme.js";
import { showLogin, showSetup } from "./views/auth.js";
import { ChatView } from "./views/chat.js";
import { AgentsView } from "./views/agents.js";
import { ModelsView } from "./views/models.js";
import { AccountView } from "./views/account.js";
import { SkillsView } from "./views/build/skills.js";
import { ToolsView } from "./views/build/tools.js";
import { MemoryView } from "./views/build/memory.js";
import { GoalsView } from "./views/build/goals.js";

const PAGES = {
  chat: { label: "Chat", View: ChatView },
  agents: { label: "Agents", View: AgentsView },
  models: { label: "Models", View: ModelsView },
  skills: { label: "Skills", View: SkillsView },
  tools: { label: "Tools", View: ToolsView },
  memory: { label: "Memory", View: MemoryView },
  goals: { label: "Goals", View: GoalsView },
  account: { label: "Account", View: AccountView },
};

const root = document.getElementById("app");
let shell = null; // {el, main, nav, workspaces}
let active = null; // {name, view}

function parseHash() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const name = PAGES[parts[0]] ? parts[0] : "chat";
  return { name, args: parts.slice(1) };
}

let renders = 0;

async function render() {
  const seq = ++renders;
  if (!session.token) {
    teardown();
    let status = null;
    try { status = await get("/setup/status"); } catch (err) { showError(err); }
    if (seq !== renders) return;
    if (status && !status.hasAdmin) showSetup(root, loggedIn);
    else showLogin(root, loggedIn);
    return;
  }
  if (!shell) await buildShell();
  if (seq !== renders) return;
  const { name, args } = parseHash();
  for (const a of shell.nav.querySelectorAll("a")) {
    if (a.dataset.page === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (active?.name !== name) {
    active?.view.destroy?.();
    const view = new PAGES[name].View();
    const ready = Promise.resolve(view.init?.()).catch(showError);
    active = { name, view, ready };
    mount(shell.main, view.el);
    document.title = `${PAGES[name].label} · Agent Platform`;
  }
  const current = active;
  await current.ready;
  if (seq !== renders || active !== current) return;
  try { await current.view.update?.(args); } catch (err) { showError(err); }
}

function teardown() {
  active?.view.destroy?.();
  active = null;
  shell = null;
}

function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function loggedIn() {
  teardown();
  go(!location.hash || location.hash === "#/login" ? "#/chat" : location.hash);
}

function logout() {
  session.logout();
  teardown();
  go("#/login");
}

async function buildShell() {
  const workspaces = h("select", { class: "workspace-picker", "aria-label": "Workspace", onchange: () => { session.workspace = workspaces.value; } });
  const nav = h("nav", { class: "top-nav", "aria-label": "Main" },
    Object.entries(PAGES).map(([name, p]) => h("a", { href: `#/${name}`, dataset: { page: name }, text: p.label })));
  const user = session.user;
  const main = h("main", { class: "page", id: "main" });
  const el = h("div", { class: "shell" },
    h("a", { class: "skip-link", href: "#main", text: "Skip to content", onclick: (e) => { e.preventDefault(); main.focus(); } }),
    h("header", { class: "topbar" },
      h("a", { class: "brand", href: "#/chat" }, h("span", { class: "brand-mark", "aria-hidden": "true", text: "◆" }), h("span", { class: "brand-name", text: "Agent Platform" })),
      nav,
      h("div", { class: "top-right" },
        workspaces,
        themeToggle(),
        h("span", { class: "who", title: user?.role === "admin" ? "Global admin" : "", text: user?.nickname || user?.username || "" }),
        h("button", { type: "button", class: "btn btn-ghost logout", text: "Log out", onclick: logout }))),
    main);
  main.tabIndex = -1;
  shell = { el, main, nav, workspaces };
  mount(root, el);
  await loadWorkspaces();
}

async function loadWorkspaces() {
  const select = shell.workspaces;
  let list = [];
  try { list = await get("/workspaces"); } catch { return; }
  if (!Array.isArray(list) || !list.length) return;
  if (!list.some((w) => w.id === session.workspace)) localStorage.setItem("ap.workspace", list[0].id);
  mount(select, list.map((w) => h("option", { value: w.id, text: w.name })));
  select.value = session.workspace;
  select.hidden = list.length < 2;
}

bus.addEventListener("auth-lost", () => { if (shell) logout(); });
bus.addEventListener("workspace", () => {
  if (!shell) return;
  active?.view.destroy?.();
  active = null;
  render();
});
window.addEventListener("hashchange", render);
window.addEventListener("workspaces-changed", () => { if (shell) loadWorkspaces(); });
initTheme();
render();
