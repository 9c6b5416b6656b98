// Account and workspace: password, personal access tokens, members and roles, users, workspaces.
import { del, get, post, put, seg, session } from "../api.js";
import { confirmAction, h, modal, mount, shortTime, showError, toast } from "../dom.js";

const ROLES = ["owner", "admin", "member", "viewer"];

export class AccountView {
  constructor() {
    this.tokens = h("div");
    this.members = h("div");
    this.users = h("div");
    const user = session.user || {};
    this.el = h("div", { class: "page-inner" },
      h("div", { class: "page-head" }, h("h1", { text: "Account" })),
      h("section", { class: "panel" },
        h("h2", { text: user.nickname || user.username || "You" }),
        h("p", { class: "muted", text: `${user.username || ""} · ${user.role === "admin" ? "global admin" : "user"}` }),
        h("div", { class: "actions" },
          h("button", { type: "button", class: "btn", text: "Change password", onclick: () => this.changePassword() }),
          h("button", { type: "button", class: "btn", text: "New workspace", onclick: () => this.newWorkspace() }))),
      h("section", { class: "panel", "aria-labelledby": "pat-title" },
        h("div", { class: "card-head" },
          h("h2", { id: "pat-title", text: "Personal access tokens" }), h("span", { class: "grow" }),
          h("button", { type: "button", class: "btn btn-primary new-token", text: "+ New token", onclick: () => this.createToken() })),
        h("p", { class: "muted", text: "For scripts and headless use: send as Authorization: Bearer mc_…" }),
        this.tokens),
      h("section", { class: "panel", "aria-labelledby": "members-title" },
        h("h2", { id: "members-title", text: "Workspace members" }),
        this.members),
      session.isAdmin ? h("section", { class: "panel", "aria-labelledby": "users-title" },
        h("div", { class: "card-head" },
          h("h2", { id: "users-title", text: "Users" }), h("span", { class: "grow" }),
          h("button", { type: "button", class: "btn", text: "+ New user", onclick: () => this.createUser() })),
        this.users) : null);
  }

  async init() {
    await Promise.all([this.loadTokens(), this.loadMembers(), session.isAdmin ? this.loadUsers() : null]);
  }

  async loadTokens() {
    let rows = [];
    try { rows = await get("/auth/tokens"); } catch (err) { showError(err); }
    mount(this.tokens, rows.length ? h("table", { class: "data-table" },
      h("thead", {}, h("tr", {}, ["Name", "Prefix", "Created", "Expires", "Last used", ""].map((t) => h("th", { text: t })))),
      h("tbody", {}, rows.map((t) => h("tr", {},
        h("td", { text: t.name }), h("td", {}, h("code", { text: t.tokenPrefix || "" })),
        h("td", { text: shortTime(t.createTime) }), h("td", { text: t.expiresAt ? shortTime(t.expiresAt) : "never" }),
        h("td", { text: t.lastUsedAt ? shortTime(t.lastUsedAt) : "—" }),
        h("td", { class: "right" }, h("button", { type: "button", class: "btn btn-small btn-danger", text: "Revoke", "aria-label": `Revoke ${t.name}`, onclick: () => this.revoke(t) }))))))
      : h("p", { class: "muted", text: "No tokens." }));
  }

  async createToken() {
    const values = await modal({ title: "New personal access token", submit: "Create", fields: [
      { name: "name", label: "Name", required: true },
      { name: "days", label: "Expires", value: "90", options: [{ value: "30", label: "in 30 days" }, { value: "90", label: "in 90 days" }, { value: "365", label: "in a year" }, { value: "", label: "never" }] },
    ] });
    if (!values || !values.name.trim()) return;
    const body = { name: values.name.trim() };
    if (values.days) body.expiresAt = new Date(Date.now() + Number(values.days) * 86400000).toISOString().replace(/\.\d+Z$/, "Z");
    try {
      const created = await post("/auth/tokens", body);
      await this.loadTokens();
      const field = h("input", { class: "token-value mono", readonly: true, value: created.token, "aria-label": "New token" });
      await modal({ title: "Token created", submit: "Done", body: h("div", { class: "stack" },
        h("p", { text: "Copy it now: it will not be shown again." }), field,
        h("button", { type: "button", class: "btn", text: "Copy", onclick: () => { field.select(); navigator.clipboard?.writeText(created.token).then(() => toast("Copied")).catch(() => document.execCommand("copy")); } })) });
    } catch (err) { showError(err); }
  }

  async revoke(t) {
    if (!(await confirmAction("Revoke token", `Revoke “${t.name}”? Scripts using it stop working.`, "Revoke"))) return;
    try { await del(`/auth/tokens/${seg(t.id)}`); await this.loadTokens(); } catch (err) { showError(err); }
  }

  async loadMembers() {
    const ws = session.workspace;
    let access = null;
    let rows = [];
    try {
      [access, rows] = await Promise.all([get(`/workspaces/${seg(ws)}/access`), get(`/workspaces/${seg(ws)}/members`)]);
    } catch (err) { mount(this.members, h("p", { class: "muted", text: err.message })); return; }
    const manage = Boolean(access?.canManage);
    const me = session.user?.id;
    mount(this.members,
      h("table", { class: "data-table members-table" },
        h("thead", {}, h("tr", {}, ["User", "Role", ""].map((t) => h("th", { text: t })))),
        h("tbody", {}, rows.map((m) => h("tr", { dataset: { user: m.username } },
          h("td", {}, m.nickname && m.nickname !== m.username ? `${m.nickname} (${m.username})` : m.username),
          h("td", {}, manage
            ? h("select", { "aria-label": `Role of ${m.username}`, onchange: (e) => this.setRole(m, e.target.value) },
              ROLES.map((r) => h("option", { value: r, text: r, selected: r === m.role })))
            : m.role),
          h("td", { class: "right" }, manage && m.userId !== me
            ? h("button", { type: "button", class: "btn btn-small btn-danger", text: "Remove", "aria-label": `Remove ${m.username}`, onclick: () => this.removeMember(m) })
            : null))))),
      manage ? h("div", { class: "actions" }, h("button", { type: "button", class: "btn", text: "+ Add member", onclick: () => this.addMember(rows) })) : null);
  }

  async setRole(m, role) {
    try { await put(`/workspaces/${seg(session.workspace)}/members/${seg(m.userId)}`, { role }); toast(`${m.username} is now ${role}`); } catch (err) { showError(err); }
    await this.loadMembers();
  }

  async removeMember(m) {
    if (!(await confirmAction("Remove member", `Remove ${m.username} from this workspace?`, "Remove"))) return;
    try { await del(`/workspaces/${seg(session.workspace)}/members/${seg(m.userId)}`); } catch (err) { showError(err); }
    await this.loadMembers();
  }

  async addMember(current) {
    let users = [];
    if (session.isAdmin) users = (await get("/auth/users").catch(() => [])).filter((u) => !current.some((m) => m.userId === u.id));
    const values = await modal({ title: "Add member", submit: "Add", fields: [
      users.length ? { name: "userId", label: "User", options: users.map((u) => ({ value: u.id, label: u.username })) } : { name: "userId", label: "User id", required: true },
      { name: "role", label: "Role", value: "member", options: ROLES },
    ] });
    if (!values) return;
    try { await post(`/workspaces/${seg(session.workspace)}/members`, { userId: values.userId, role: values.role }); } catch (err) { showError(err); }
    await this.loadMembers();
  }

  async loadUsers() {
    let rows = [];
    try { rows = await get("/auth/users"); } catch (err) { showError(err); }
    mount(this.users, h("table", { class: "data-table" },
      h("thead", {}, h("tr", {}, ["Username", "Name", "Role", "Enabled", "Created"].map((t) => h("th", { text: t })))),
      h("tbody", {}, rows.map((u) => h("tr", {},
        h("td", { text: u.username }), h("td", { text: u.nickname || "" }), h("td", { text: u.role }),
        h("td", { text: u.enabled ? "yes" : "no" }), h("td", { text: shortTime(u.createTime) }))))));
  }

  async createUser() {
    const values = await modal({ title: "New user", submit: "Create", fields: [
      { name: "username", label: "Username", required: true },
      { name: "nickname", label: "Display name" },
      { name: "password", label: "Password (8+ characters)", type: "password", required: true },
      { name: "role", label: "Role", value: "user", options: [{ value: "user", label: "user" }, { value: "admin", label: "global admin" }] },
    ] });
    if (!values) return;
    try {
      await post("/auth/users", { username: values.username.trim(), nickname: values.nickname.trim() || undefined, password: values.password, role: values.role });
      toast(`Created ${values.username}`);
      await Promise.all([this.loadUsers(), this.loadMembers()]);
    } catch (err) { showError(err); }
  }

  async changePassword() {
    const values = await modal({ title: "Change password", submit: "Change", fields: [
      { name: "oldPassword", label: "Current password", type: "password", required: true },
      { name: "newPassword", label: "New password (8+ characters)", type: "password", required: true },
    ] });
    if (!values) return;
    try {
      const q = new URLSearchParams(values).toString();
      await put(`/auth/users/${seg(session.user?.id || 0)}/password?${q}`);
      toast("Password changed. Log in again.");
      session.logout();
      setTimeout(() => location.reload(), 800);
    } catch (err) { showError(err); }
  }

  async newWorkspace() {
    const values = await modal({ title: "New workspace", submit: "Create", fields: [{ name: "name", label: "Name", required: true }, { name: "description", label: "Description" }] });
    if (!values || !values.name.trim()) return;
    try {
      const ws = await post("/workspaces", { name: values.name.trim(), description: values.description });
      window.dispatchEvent(new Event("workspaces-changed"));
      toast(`Created ${ws.name}`);
    } catch (err) { showError(err); }
  }
}
