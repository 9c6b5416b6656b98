// The console's pages in sidebar order: one line per page. Add yours with one line.
//   path   the hash route (#/path/args…)      label  the sidebar text       group  the sidebar heading
//   need   who sees it: "login" (anyone), "viewer" | "member" | "admin" (role in the workspace), "global" (global admin)
//   load   the page module; its default export is a Preact component receiving {args} (the hash after the path).
//          `legacy: "ClassName"` marks a page still written as a dom.js class (el, init, update(args), destroy).
export const NAV = [
  { path: "dashboard", label: "Home", group: "Run", need: "viewer", load: () => import("./pages/dashboard.js") },
  { path: "chat", label: "Chat", group: "Run", need: "login", legacy: "ChatView", load: () => import("./views/chat.js") },
  { path: "agents", label: "Agents", group: "Build", need: "login", legacy: "AgentsView", load: () => import("./views/agents.js") },
  { path: "models", label: "Models", group: "Build", need: "login", legacy: "ModelsView", load: () => import("./views/models.js") },
  { path: "account", label: "Account", group: "Admin", need: "login", legacy: "AccountView", load: () => import("./views/account.js") },
];

/** The page a bare "#/" opens. */
export const HOME = "dashboard";
