// People and workspaces: the caller's workspaces (switch, create, rename, delete), the current workspace's
// members and roles, and for global admins every user (create, disable, global role, password reset, tokens).
import { del, get, post, put, seg, session as apiSession } from "../api.js";
import { html, useState } from "../ui.js";
import {
  Dialog, Field, PageFrame, Panel, Table, confirmDialog, fieldErrors, toast, toastError, useLoad, useSession, when,
} from "../components/index.js";

const ROLES = ["owner", "admin", "member", "viewer"];

export default function People() {
  const session = useSession();
  return html`<${PageFrame} title="People and workspaces"
      subtitle=${session.isGlobalAdmin ? "Workspaces, their members, and every user of this server" : "Your workspaces and their members"}>
    <${Workspaces} />
    <${Members} />
    ${session.isGlobalAdmin && html`<${Users} />`}
  <//>`;
}

function Workspaces() {
  const session = useSession();
  const [form, setForm] = useState({ name: "", errors: {} });
  const [renaming, setRenaming] = useState(null);
  const create = async (e) => {
    e.preventDefault();
    try {
      const ws = await post("/workspaces", { name: form.name.trim() });
      toast(`Created ${ws.name}`, "ok");
      setForm({ name: "", errors: {} });
      await session.reloadWorkspaces();
    } catch (err) { setForm({ ...form, errors: fieldErrors(err, ["name"]) }); }
  };
  const remove = async (ws) => {
    if (!await confirmDialog({ title: `Delete ${ws.name}?`, submit: "Delete workspace",
      message: "Its agents, conversations and settings are deleted for every member. This cannot be undone." })) return;
    try {
      await del(`/workspaces/${seg(ws.id)}`);
      toast(`Deleted ${ws.name}`, "ok");
      if (ws.id === session.workspace) apiSession.workspace = "1";
      await session.reloadWorkspaces();
    } catch (err) { toastError(err); }
  };
  return html`<${Panel} title="Workspaces" id="workspaces">
    <${Table} label="Workspaces" rows=${session.workspaces}
      columns=${[
        { key: "name", label: "Name", render: (w) => html`${w.name}${w.id === session.workspace ? html` <span class="pill ok">current</span>` : ""}` },
        { key: "effectiveRole", label: "Your role", render: (w) => w.memberRole || `${w.effectiveRole} (global admin)` },
        { key: "createTime", label: "Created", render: (w) => when(w.createTime) },
        { key: "actions", label: "", render: (w) => html`<div class="row-actions">
          ${w.id !== session.workspace && html`<button type="button" class="btn btn-small" aria-label=${`Switch to ${w.name}`}
            onClick=${() => { apiSession.workspace = w.id; }}>Switch</button>`}
          ${["admin", "owner"].includes(w.effectiveRole) && html`<button type="button" class="btn btn-small"
            aria-label=${`Rename ${w.name}`} onClick=${() => setRenaming(w)}>Rename</button>`}
          ${w.effectiveRole === "owner" && w.id !== "1" && html`<button type="button" class="btn btn-small btn-danger"
            aria-label=${`Delete ${w.name}`} onClick=${() => remove(w)}>Delete</button>`}
        </div>` },
      ]} />
    <form class="inline-form" onSubmit=${create} aria-label="Create a workspace">
      <${Field} label="New workspace" error=${form.errors.name || form.errors._}>
        <input value=${form.name} required maxlength="100" placeholder="Name"
          onInput=${(e) => setForm({ name: e.currentTarget.value, errors: {} })} />
      <//>
      <button type="submit" class="btn">Create workspace</button>
    </form>
    ${renaming && html`<${RenameDialog} ws=${renaming} onClose=${async (changed) => {
      setRenaming(null);
      if (changed) await session.reloadWorkspaces();
    }} />`}
  <//>`;
}

function RenameDialog({ ws, onClose }) {
  const [name, setName] = useState(ws.name);
  const [description, setDescription] = useState(ws.description || "");
  const [errors, setErrors] = useState({});
  const save = async (e) => {
    e.preventDefault();
    try {
      await put(`/workspaces/${seg(ws.id)}`, { name: name.trim(), description });
      toast("Workspace saved", "ok");
      onClose(true);
    } catch (err) { setErrors(fieldErrors(err, ["name", "description"])); }
  };
  return html`<${Dialog} title=${`Rename ${ws.name}`} onClose=${() => onClose(false)}>
    <form class="stack" onSubmit=${save}>
      ${errors._ && html`<p class="form-error" role="alert">${errors._}</p>`}
      <${Field} label="Name" error=${errors.name}><input value=${name} onInput=${(e) => setName(e.currentTarget.value)} /><//>
      <${Field} label="Description" error=${errors.description}>
        <textarea rows="3" value=${description} onInput=${(e) => setDescription(e.currentTarget.value)}></textarea>
      <//>
      <div class="actions">
        <button type="button" class="btn" onClick=${() => onClose(false)}>Cancel</button>
        <button type="submit" class="btn btn-primary">Save</button>
      </div>
    </form>
  <//>`;
}

function Members() {
  const session = useSession();
  const ws = session.workspace;
  const manage = session.can("admin");
  const state = useLoad(async () => {
    const [members, users] = await Promise.all([
      get(`/workspaces/${seg(ws)}/members`),
      session.isGlobalAdmin ? get("/auth/users") : Promise.resolve(null),
    ]);
    return { members, users };
  }, [ws, session.isGlobalAdmin]);
  const [adding, setAdding] = useState({ userId: "", role: "member", errors: {} });
  const name = session.workspaces.find((w) => w.id === ws)?.name || "this workspace";
  const me = String(session.user?.id);
  const setRole = async (m, role) => {
    try {
      await put(`/workspaces/${seg(ws)}/members/${seg(m.userId)}`, { role });
      toast(`${m.username} is now ${role}`, "ok");
    } catch (err) { toastError(err); }
    state.reload(true);
  };
  const remove = async (m) => {
    if (!await confirmDialog({ title: `Remove ${m.username}?`, submit: "Remove", message: `${m.username} loses access to ${name}.` })) return;
    try { await del(`/workspaces/${seg(ws)}/members/${seg(m.userId)}`); toast(`Removed ${m.username}`, "ok"); } catch (err) { toastError(err); }
    state.reload(true);
  };
  const add = async (e) => {
    e.preventDefault();
    try {
      await post(`/workspaces/${seg(ws)}/members`, { userId: adding.userId, role: adding.role });
      toast("Member added", "ok");
      setAdding({ userId: "", role: "member", errors: {} });
    } catch (err) { setAdding({ ...adding, errors: fieldErrors(err, ["userId", "role"]) }); }
    state.reload(true);
  };
  const d = state.data;
  const candidates = d?.users ? d.users.filter((u) => u.enabled && !d.members.some((m) => m.userId === u.id)) : null;
  const grantable = ROLES.filter((r) => r !== "owner" || session.role === "owner");
  return html`<${Panel} title=${`Members of ${name}`} id="members">
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    ${d && html`<${Table} label="Members" rows=${d.members} rowKey=${(m) => m.userId}
      columns=${[
        { key: "username", label: "User", render: (m) => (m.nickname && m.nickname !== m.username ? `${m.nickname} (${m.username})` : m.username) },
        { key: "role", label: "Role", render: (m) => (manage && m.userId !== me
          ? html`<select aria-label=${`Workspace role of ${m.username}`} value=${m.role} onChange=${(e) => setRole(m, e.currentTarget.value)}>
              ${ROLES.filter((r) => grantable.includes(r) || r === m.role).map((r) => html`<option value=${r}>${r}</option>`)}
            </select>`
          : m.role) },
        { key: "createTime", label: "Since", render: (m) => when(m.createTime) },
        { key: "actions", label: "", render: (m) => (manage && m.userId !== me
          ? html`<button type="button" class="btn btn-small btn-danger" aria-label=${`Remove ${m.username}`} onClick=${() => remove(m)}>Remove</button>` : "") },
      ]} />`}
    ${manage && d && html`<form class="inline-form" onSubmit=${add} aria-label="Add a member">
      <${Field} label="User" error=${adding.errors.userId || adding.errors._}>
        ${candidates
          ? html`<select required value=${adding.userId} onChange=${(e) => setAdding({ ...adding, userId: e.currentTarget.value, errors: {} })}>
              <option value="">Choose a user…</option>
              ${candidates.map((u) => html`<option value=${u.id}>${u.username}</option>`)}
            </select>`
          : html`<input inputmode="numeric" required placeholder="User id" value=${adding.userId}
              onInput=${(e) => setAdding({ ...adding, userId: e.currentTarget.value, errors: {} })} />`}
      <//>
      <${Field} label="Role" error=${adding.errors.role}>
        <select value=${adding.role} onChange=${(e) => setAdding({ ...adding, role: e.currentTarget.value })}>
          ${grantable.map((r) => html`<option value=${r}>${r}</option>`)}
        </select>
      <//>
      <button type="submit" class="btn">Add member</button>
    </form>`}
  <//>`;
}

function Users() {
  const session = useSession();
  const state = useLoad(() => get("/auth/users"), []);
  const [creating, setCreating] = useState(false);
  const [resetting, setResetting] = useState(null);
  const [tokensOf, setTokensOf] = useState(null);
  const me = String(session.user?.id);
  const toggle = async (u) => {
    if (u.enabled && !await confirmDialog({ title: `Disable ${u.username}?`, submit: "Disable",
      message: `${u.username} is logged out everywhere: their sessions and access tokens stop working until enabled again.` })) return;
    try {
      await post(`/auth/users/${seg(u.id)}/${u.enabled ? "disable" : "enable"}`);
      toast(`${u.username} ${u.enabled ? "disabled" : "enabled"}`, "ok");
    } catch (err) { toastError(err); }
    state.reload(true);
  };
  const setRole = async (u, role) => {
    try {
      await put(`/auth/users/${seg(u.id)}/role`, { role });
      toast(`${u.username} is now ${role === "admin" ? "a global admin" : "a user"}`, "ok");
    } catch (err) { toastError(err); }
    state.reload(true);
  };
  return html`<${Panel} title="Users" id="users"
      actions=${html`<button type="button" class="btn" onClick=${() => setCreating(true)}>+ New user</button>`}>
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    ${state.data && html`<${Table} label="Users" rows=${state.data}
      columns=${[
        { key: "username", label: "User", render: (u) => (u.nickname && u.nickname !== u.username ? `${u.nickname} (${u.username})` : u.username) },
        { key: "role", label: "Global role", render: (u) => (u.id === me ? "admin (you)" : html`<select aria-label=${`Global role of ${u.username}`}
            value=${u.role} onChange=${(e) => setRole(u, e.currentTarget.value)}>
            <option value="user">user</option><option value="admin">admin</option></select>`) },
        { key: "enabled", label: "Status", render: (u) => html`<span class=${`pill ${u.enabled ? "ok" : "bad"}`}>${u.enabled ? "enabled" : "disabled"}</span>` },
        { key: "actions", label: "", render: (u) => html`<div class="row-actions">
          ${u.id !== me && html`<button type="button" class=${u.enabled ? "btn btn-small btn-danger" : "btn btn-small"}
            aria-label=${`${u.enabled ? "Disable" : "Enable"} ${u.username}`} onClick=${() => toggle(u)}>${u.enabled ? "Disable" : "Enable"}</button>`}
          <button type="button" class="btn btn-small" aria-label=${`Reset the password of ${u.username}`} onClick=${() => setResetting(u)}>Reset password</button>
          <button type="button" class="btn btn-small" aria-label=${`Tokens of ${u.username}`} onClick=${() => setTokensOf(u)}>Tokens</button>
        </div>` },
      ]} />`}
    ${creating && html`<${NewUserDialog} onClose=${(made) => { setCreating(false); if (made) state.reload(true); }} />`}
    ${resetting && html`<${ResetDialog} user=${resetting} onClose=${() => setResetting(null)} />`}
    ${tokensOf && html`<${TokensDialog} user=${tokensOf} onClose=${() => setTokensOf(null)} />`}
  <//>`;
}

function NewUserDialog({ onClose }) {
  const [v, setV] = useState({ username: "", nickname: "", password: "", role: "user" });
  const [errors, setErrors] = useState({});
  const set = (k) => (e) => { setV({ ...v, [k]: e.currentTarget.value }); setErrors({}); };
  const save = async (e) => {
    e.preventDefault();
    try {
      const u = await post("/auth/users", { username: v.username.trim(), nickname: v.nickname.trim() || undefined, password: v.password, role: v.role });
      toast(`Created ${u.username}; they join workspace 1 as member`, "ok");
      onClose(true);
    } catch (err) { setErrors(fieldErrors(err, ["username", "nickname", "password", "role"])); }
  };
  return html`<${Dialog} title="New user" onClose=${() => onClose(false)}>
    <form class="stack" onSubmit=${save} novalidate>
      ${errors._ && html`<p class="form-error" role="alert">${errors._}</p>`}
      <${Field} label="Username" hint="3-64 letters, digits, _ . @ -" error=${errors.username}><input value=${v.username} onInput=${set("username")} autocomplete="off" /><//>
      <${Field} label="Display name" error=${errors.nickname}><input value=${v.nickname} onInput=${set("nickname")} /><//>
      <${Field} label="Password" hint="8 characters or more" error=${errors.password}><input type="password" value=${v.password} onInput=${set("password")} autocomplete="new-password" /><//>
      <${Field} label="Global role" error=${errors.role}>
        <select value=${v.role} onChange=${set("role")}><option value="user">user</option><option value="admin">admin (global)</option></select>
      <//>
      <div class="actions">
        <button type="button" class="btn" onClick=${() => onClose(false)}>Cancel</button>
        <button type="submit" class="btn btn-primary">Create user</button>
      </div>
    </form>
  <//>`;
}

function ResetDialog({ user, onClose }) {
  const [password, setPassword] = useState("");
  const [errors, setErrors] = useState({});
  const save = async (e) => {
    e.preventDefault();
    try {
      await post(`/auth/users/${seg(user.id)}/reset-password`, { newPassword: password });
      toast(`New password set for ${user.username}; their sessions and tokens ended`, "ok");
      onClose();
    } catch (err) { setErrors(fieldErrors(err, ["newPassword"])); }
  };
  return html`<${Dialog} title=${`Reset the password of ${user.username}`} onClose=${onClose}>
    <form class="stack" onSubmit=${save} novalidate>
      ${errors._ && html`<p class="form-error" role="alert">${errors._}</p>`}
      <${Field} label="New password" hint="8 characters or more; their sessions and access tokens end" error=${errors.newPassword}>
        <input type="password" value=${password} autocomplete="new-password" onInput=${(e) => { setPassword(e.currentTarget.value); setErrors({}); }} />
      <//>
      <div class="actions">
        <button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn btn-primary">Set password</button>
      </div>
    </form>
  <//>`;
}

function TokensDialog({ user, onClose }) {
  const state = useLoad(() => get(`/auth/users/${seg(user.id)}/tokens`), [user.id]);
  const revoke = async (t) => {
    if (!await confirmDialog({ title: `Revoke ${t.name}?`, submit: "Revoke", message: `Scripts using ${user.username}'s token stop working.` })) return;
    try { await del(`/auth/users/${seg(user.id)}/tokens/${seg(t.id)}`); toast(`Revoked ${t.name}`, "ok"); } catch (err) { toastError(err); }
    state.reload(true);
  };
  return html`<${Dialog} title=${`Tokens of ${user.username}`} onClose=${onClose} class="wide-dialog">
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    ${state.data && html`<${Table} label=${`Tokens of ${user.username}`} rows=${state.data} empty="No personal access tokens."
      columns=${[
        { key: "name", label: "Name" },
        { key: "tokenPrefix", label: "Prefix", render: (t) => html`<code>${t.tokenPrefix}</code>` },
        { key: "lastUsedAt", label: "Last used", render: (t) => when(t.lastUsedAt) },
        { key: "expiresAt", label: "Expires", render: (t) => (t.expiresAt ? when(t.expiresAt) : "never") },
        { key: "actions", label: "", render: (t) => html`<button type="button" class="btn btn-small btn-danger"
            aria-label=${`Revoke ${t.name}`} onClick=${() => revoke(t)}>Revoke</button>` },
      ]} />`}
    <div class="actions"><button type="button" class="btn" onClick=${onClose}>Close</button></div>
  <//>`;
}
