// The console's pages in sidebar order: one line per page. Add yours with one line.
//   path   the hash route (#/path/args…)      label  the sidebar text       group  the sidebar heading
//   need   who sees it: "login" (anyone), "viewer" | "member" | "admin" (role in the workspace), "global" (global admin)
//   load   the page module; its default export is a Preact component receiving {args} (the hash after
//          the path, split on "/", still URI-encoded).
//   flag   optional: the feature flag that gates the page (hidden while the flag is off)
export const NAV = [
  { path: "dashboard", label: "Home", group: "Run", need: "viewer", load: () => import("./pages/dashboard.js") },
  { path: "chat", label: "Chat", group: "Run", need: "login", load: () => import("./views/chat.js") },
  { path: "approvals", label: "Approvals", group: "Run", need: "viewer", load: () => import("./pages/approvals.js") },
  { path: "agents", label: "Agents", group: "Build", need: "login", load: () => import("./views/agents.js") },
  { path: "wiki", label: "Wiki", group: "Build", need: "viewer", load: () => import("./pages/wiki.js") },
  { path: "models", label: "Models", group: "Build", need: "login", load: () => import("./views/models.js") },
  { path: "providers", label: "Provider settings", group: "Build", need: "member", load: () => import("./pages/providers.js") },
  { path: "skills", label: "Skills", group: "Build", need: "viewer", load: () => import("./views/builder/skills.js") },
  { path: "tools", label: "Tools", group: "Build", need: "viewer", load: () => import("./views/builder/tools.js") },
  { path: "memory", label: "Memory", group: "Build", need: "viewer", load: () => import("./views/builder/memory.js") },
  { path: "goals", label: "Goals", group: "Build", need: "viewer", load: () => import("./views/builder/goals.js") },
  { path: "automation", label: "Automation", group: "Build", need: "viewer", load: () => import("./views/builder/automation.js") },
  { path: "channels", label: "Channels", group: "Build", need: "viewer", load: () => import("./views/builder/channels.js") },
  { path: "data", label: "Data", group: "Build", need: "viewer", load: () => import("./views/builder/data.js") },
  { path: "usage", label: "Usage", group: "Observe", need: "viewer", load: () => import("./pages/usage.js") },
  { path: "audit", label: "Audit log", group: "Observe", need: "admin", load: () => import("./pages/audit.js") },
  { path: "security", label: "Security", group: "Observe", need: "admin", load: () => import("./pages/security.js") },
  { path: "people", label: "People", group: "Admin", need: "login", load: () => import("./pages/people.js") },
  { path: "settings", label: "Settings", group: "Admin", need: "global", load: () => import("./pages/settings.js") },
  { path: "account", label: "Account", group: "Admin", need: "login", load: () => import("./pages/account.js") },
];

/** The page a bare "#/" opens. */
export const HOME = "dashboard";
