// The console's frame: header (workspace, approval and notification badges, theme, user), the sidebar
// built from nav.js, and the routed page. Pages get the session through SessionContext.
import { bus, get, session } from "./api.js";
import { ThemeToggle } from "./theme.js";
import { HOME, NAV } from "./nav.js";
import { html, useCallback, useEffect, useMemo, useRef, useState } from "./ui.js";
import { Icon } from "./components/icon.js";
import { ErrorBox, Loading, usePoll } from "./components/page.js";
import { SessionContext, allowed } from "./components/session.js";

const POLL_MS = 20_000;

function parseHash() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  return { path: parts[0] || HOME, args: parts.slice(1) };
}

/** Tell the shell that feature flags changed (Settings): flag-gated pages appear or disappear. */
export function flagsChanged() {
  window.dispatchEvent(new Event("flags-changed"));
}

/** Tell the header to refresh its badges now (after an approval, a revoke, …). */
export function notificationsChanged() {
  window.dispatchEvent(new Event("notifications-changed"));
}

export function Shell({ onLogout }) {
  const [route, setRoute] = useState(parseHash);
  const [workspace, setWorkspace] = useState(session.workspace);
  const [workspaces, setWorkspaces] = useState(null);
  const [navOpen, setNavOpen] = useState(false);
  const [flags, setFlags] = useState(null); // {key: enabled}
  const user = session.user;
  const isGlobalAdmin = user?.role === "admin";

  const loadWorkspaces = useCallback(async () => {
    let list = [];
    try { list = await get("/workspaces"); } catch { list = []; }
    if (Array.isArray(list) && list.length && !list.some((w) => w.id === session.workspace)) {
      localStorage.setItem("ap.workspace", list[0].id);
      setWorkspace(list[0].id);
    }
    setWorkspaces(Array.isArray(list) ? list : []);
  }, []);

  const loadFlags = useCallback(async () => {
    try {
      const list = await get("/feature-flags");
      setFlags(Object.fromEntries((list || []).map((f) => [f.key, !!f.enabled])));
    } catch { setFlags({}); }
  }, []);

  useEffect(() => {
    loadWorkspaces();
    loadFlags();
    window.addEventListener("flags-changed", loadFlags);
    const onHash = () => { setRoute(parseHash()); setNavOpen(false); };
    const onWorkspace = (e) => setWorkspace(e.detail);
    window.addEventListener("hashchange", onHash);
    window.addEventListener("workspaces-changed", loadWorkspaces);
    bus.addEventListener("workspace", onWorkspace);
    return () => {
      window.removeEventListener("hashchange", onHash);
      window.removeEventListener("workspaces-changed", loadWorkspaces);
      window.removeEventListener("flags-changed", loadFlags);
      bus.removeEventListener("workspace", onWorkspace);
    };
  }, [loadWorkspaces, loadFlags]);

  const role = workspaces?.find((w) => w.id === workspace)?.effectiveRole || null;
  const flagOn = useCallback((key) => !key || !flags || flags[key] !== false, [flags]);
  const ctx = useMemo(() => ({
    user, isGlobalAdmin, role, workspace, workspaces: workspaces || [], reloadWorkspaces: loadWorkspaces,
    can: (need) => allowed(need, role, isGlobalAdmin), flags: flags || {}, flag: flagOn,
  }), [user, isGlobalAdmin, role, workspace, workspaces, loadWorkspaces, flags, flagOn]);

  const visible = NAV.filter((p) => allowed(p.need, role, isGlobalAdmin) && flagOn(p.flag));
  const entry = NAV.find((p) => p.path === route.path) || NAV.find((p) => p.path === HOME);
  const title = entry?.label || "";
  useEffect(() => { document.title = `${title} · Agent Platform`; }, [title]);
  const mainRef = useRef(null);

  let content;
  if (workspaces === null || flags === null) content = html`<${Loading} />`;
  else if (!flagOn(entry.flag)) {
    content = html`<div class="page-inner"><h1>${entry.label}</h1>
      <p class="muted">This feature is switched off (feature flag <code>${entry.flag}</code>). A global admin can switch it on in Settings.</p></div>`;
  }
  else if (!allowed(entry.need, role, isGlobalAdmin)) {
    content = html`<div class="page-inner"><h1>${entry.label}</h1>
      <p class="muted">This page is for ${needWords(entry.need)}. Ask an administrator if you need it.</p></div>`;
  } else content = html`<${PageHost} key=${`${workspace}:${entry.path}`} entry=${entry} args=${route.args} />`;

  return html`<${SessionContext.Provider} value=${ctx}>
    <div class=${navOpen ? "shell nav-open" : "shell"}>
      <a class="skip-link" href="#main" onClick=${(e) => { e.preventDefault(); mainRef.current?.focus(); }}>Skip to content</a>
      <${Header} workspaces=${workspaces || []} workspace=${workspace} user=${user} role=${role} onLogout=${onLogout}
        navOpen=${navOpen} onMenu=${() => setNavOpen(!navOpen)} />
      <${Sidebar} pages=${visible} current=${entry?.path} onNavigate=${() => setNavOpen(false)} />
      <div class="nav-scrim" onClick=${() => setNavOpen(false)} aria-hidden="true"></div>
      <main class="page" id="main" tabindex="-1" ref=${mainRef}>${content}</main>
    </div>
  <//>`;
}

function needWords(need) {
  if (need === "global") return "global administrators";
  return `workspace ${need}s and above`;
}

function Sidebar({ pages, current, onNavigate }) {
  const groups = [];
  for (const p of pages) {
    let g = groups.find((x) => x.name === p.group);
    if (!g) groups.push(g = { name: p.group, pages: [] });
    g.pages.push(p);
  }
  return html`<nav class="side-nav" id="side-nav" aria-label="Main">
    ${groups.map((g) => html`<div class="nav-group" key=${g.name}>
      ${g.name && html`<div class="nav-group-title">${g.name}</div>`}
      ${g.pages.map((p) => html`<a key=${p.path} href=${`#/${p.path}`} data-page=${p.path} onClick=${onNavigate}
        aria-current=${p.path === current ? "page" : undefined}>${p.label}</a>`)}
    </div>`)}
  </nav>`;
}

function Header({ workspaces, workspace, user, role, onLogout, navOpen, onMenu }) {
  return html`<header class="topbar">
    <button type="button" class="icon-btn menu-toggle" aria-label="Menu" aria-controls="side-nav"
      aria-expanded=${navOpen ? "true" : "false"} onClick=${onMenu}><${Icon} name="menu" size=${20} /></button>
    <a class="brand" href=${`#/${HOME}`}><span class="brand-mark" aria-hidden="true">◆</span><span class="brand-name">Agent Platform</span></a>
    <div class="top-right">
      <select class="workspace-picker" aria-label="Workspace" hidden=${workspaces.length < 2} value=${workspace}
        onChange=${(e) => { session.workspace = e.currentTarget.value; }}>
        ${workspaces.map((w) => html`<option key=${w.id} value=${w.id}>${w.name}</option>`)}
      </select>
      <${Badges} workspace=${workspace} role=${role} />
      <${ThemeToggle} />
      <span class="who" title=${user?.role === "admin" ? "Global admin" : role || ""}>${user?.nickname || user?.username || ""}</span>
      <button type="button" class="btn btn-ghost logout" onClick=${onLogout}>Log out</button>
    </div>
  </header>`;
}

/** The approvals badge and the notifications bell, from GET /notifications/summary. */
function Badges({ workspace, role }) {
  const [summary, setSummary] = useState(null);
  const [open, setOpen] = useState(false);
  const load = useCallback(async () => {
    try { setSummary(await get("/notifications/summary")); } catch { setSummary(null); }
  }, [workspace]);
  useEffect(() => {
    if (!role) return undefined;
    load();
    window.addEventListener("notifications-changed", load);
    return () => window.removeEventListener("notifications-changed", load);
  }, [load, role]);
  usePoll(() => { if (role) load(); }, POLL_MS, [load, role]);
  if (!summary) return null;
  const pending = summary.workspacePendingApprovals ?? summary.pendingApprovals ?? 0;
  const problems = (summary.failedToolCalls24h || 0) + (summary.failedMessages24h || 0);
  const hasApprovals = NAV.some((p) => p.path === "approvals");
  return html`
    ${hasApprovals && html`<a class="icon-btn badge-btn" href="#/approvals" title="Approvals"
        aria-label=${`Approvals: ${pending} pending`}><${Icon} name="inbox" />
      ${pending > 0 && html`<span class="count" data-count="approvals">${pending}</span>`}</a>`}
    <div class="bell">
      <button type="button" class="icon-btn badge-btn" aria-expanded=${open ? "true" : "false"}
        aria-label=${`Notifications: ${summary.total || 0}`} title="Notifications" onClick=${() => setOpen(!open)}>
        <${Icon} name="bell" />${summary.total > 0 && html`<span class="count" data-count="notifications">${summary.total}</span>`}
      </button>
      ${open && html`<div class="bell-menu" role="dialog" aria-label="Notifications"
          onKeyDown=${(e) => { if (e.key === "Escape") setOpen(false); }}>
        <ul class="plain">
          <li><span class="num">${pending}</span> pending approvals</li>
          <li><span class="num">${summary.failedToolCalls24h || 0}</span> failed tool calls (24 h)</li>
          <li><span class="num">${summary.deniedToolCalls24h || 0}</span> denied tool calls (24 h)</li>
          <li><span class="num">${summary.failedMessages24h || 0}</span> failed answers (24 h)</li>
          <li><span class="num">${summary.activeGrants || 0}</span> active approval grants</li>
        </ul>
        ${problems > 0 && html`<p class="muted">Failures show on the dashboard and in the audit log.</p>`}
      </div>`}
    </div>`;
}


/** Loads a page's module and shows it: its default export, a Preact component. */
function PageHost({ entry, args }) {
  const [mod, setMod] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    entry.load().then((m) => { if (live) setMod(m); }, (err) => { if (live) setError(err); });
    return () => { live = false; };
  }, [entry]);
  if (error) return html`<div class="page-inner"><${ErrorBox} error=${error} /></div>`;
  if (!mod) return html`<${Loading} />`;
  const Page = mod.default;
  return html`<${Page} args=${args} />`;
}
