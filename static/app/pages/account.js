// Account: who you are, your password, and your personal access tokens (shown once when created).
// Workspaces, members and users are on the People page.
import { del, get, post, put, seg, session as apiSession } from "../api.js";
import { html, useState } from "../ui.js";
import { Dialog, Field, PageFrame, Panel, Table, confirmDialog, fieldErrors, toast, toastError, useLoad, useSession, when } from "../components/index.js";

const EXPIRY = [["30", "in 30 days"], ["90", "in 90 days"], ["365", "in a year"], ["", "never"]];

export default function Account() {
  const session = useSession();
  const user = session.user || {};
  const tokens = useLoad(() => get("/auth/tokens"), []);
  const [dialog, setDialog] = useState(null); // "password" | "token" | {created}
  const revoke = async (t) => {
    if (!await confirmDialog({ title: "Revoke token", message: `Revoke “${t.name}”? Scripts using it stop working.`, submit: "Revoke" })) return;
    try { await del(`/auth/tokens/${seg(t.id)}`); } catch (err) { toastError(err); }
    tokens.reload(true);
  };
  return html`<${PageFrame} title="Account">
    <${Panel} title=${user.nickname || user.username || "You"}>
      <p class="muted">${user.username} · ${session.isGlobalAdmin ? "global admin" : "user"}${session.role ? ` · ${session.role} of this workspace` : ""}</p>
      <div class="actions start">
        <button type="button" class="btn" onClick=${() => setDialog("password")}>Change password</button>
        <a class="btn" href="#/people">Workspaces and members</a>
      </div>
    <//>
    <${Panel} title="Personal access tokens" id="pat" actions=${html`<button type="button" class="btn btn-primary new-token"
        onClick=${() => setDialog("token")}>+ New token</button>`}>
      <p class="muted">For scripts and headless use: send as <code>Authorization: Bearer mc_…</code></p>
      ${tokens.error && html`<p class="form-error" role="alert">${tokens.error.message}</p>`}
      ${tokens.data && html`<${Table} label="Tokens" rows=${tokens.data} empty="No tokens."
        columns=${[
          { key: "name", label: "Name" },
          { key: "tokenPrefix", label: "Prefix", render: (t) => html`<code>${t.tokenPrefix}</code>` },
          { key: "createTime", label: "Created", render: (t) => when(t.createTime) },
          { key: "expiresAt", label: "Expires", render: (t) => (t.expiresAt ? when(t.expiresAt) : "never") },
          { key: "lastUsedAt", label: "Last used", render: (t) => (t.lastUsedAt ? when(t.lastUsedAt) : "—") },
          { key: "actions", label: "", render: (t) => html`<button type="button" class="btn btn-small btn-danger"
              aria-label=${`Revoke ${t.name}`} onClick=${() => revoke(t)}>Revoke</button>` },
        ]} />`}
    <//>
    ${dialog === "password" && html`<${PasswordDialog} userId=${user.id} onClose=${() => setDialog(null)} />`}
    ${dialog === "token" && html`<${NewTokenDialog} onClose=${(created) => { setDialog(created ? { created } : null); tokens.reload(true); }} />`}
    ${dialog?.created && html`<${TokenShownDialog} token=${dialog.created.token} onClose=${() => setDialog(null)} />`}
  <//>`;
}

function PasswordDialog({ userId, onClose }) {
  const [v, setV] = useState({ oldPassword: "", newPassword: "" });
  const [errors, setErrors] = useState({});
  const save = async (e) => {
    e.preventDefault();
    try {
      await put(`/auth/users/${seg(userId || 0)}/password?${new URLSearchParams(v)}`);
      toast("Password changed. Log in again.", "ok");
      apiSession.logout();
      setTimeout(() => location.reload(), 800);
    } catch (err) { setErrors(fieldErrors(err, ["oldPassword", "newPassword"])); }
  };
  const set = (k) => (e) => { setV({ ...v, [k]: e.currentTarget.value }); setErrors({}); };
  return html`<${Dialog} title="Change password" onClose=${onClose}>
    <form class="stack" onSubmit=${save} novalidate>
      ${errors._ && html`<p class="form-error" role="alert">${errors._}</p>`}
      <${Field} label="Current password" error=${errors.oldPassword}><input type="password" autocomplete="current-password" value=${v.oldPassword} onInput=${set("oldPassword")} /><//>
      <${Field} label="New password (8+ characters)" error=${errors.newPassword}><input type="password" autocomplete="new-password" value=${v.newPassword} onInput=${set("newPassword")} /><//>
      <div class="actions">
        <button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn btn-primary">Change</button>
      </div>
    </form>
  <//>`;
}

function NewTokenDialog({ onClose }) {
  const [name, setName] = useState("");
  const [days, setDays] = useState("90");
  const [errors, setErrors] = useState({});
  const save = async (e) => {
    e.preventDefault();
    const body = { name: name.trim() };
    if (days) body.expiresAt = new Date(Date.now() + Number(days) * 86400000).toISOString().replace(/\.\d+Z$/, "Z");
    try { onClose(await post("/auth/tokens", body)); } catch (err) { setErrors(fieldErrors(err, ["name", "expiresAt"])); }
  };
  return html`<${Dialog} title="New personal access token" onClose=${() => onClose(null)}>
    <form class="stack" onSubmit=${save}>
      ${errors._ && html`<p class="form-error" role="alert">${errors._}</p>`}
      <${Field} label="Name" error=${errors.name}><input required maxlength="100" value=${name} onInput=${(e) => { setName(e.currentTarget.value); setErrors({}); }} /><//>
      <${Field} label="Expires" error=${errors.expiresAt}>
        <select value=${days} onChange=${(e) => setDays(e.currentTarget.value)}>${EXPIRY.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select>
      <//>
      <div class="actions">
        <button type="button" class="btn" onClick=${() => onClose(null)}>Cancel</button>
        <button type="submit" class="btn btn-primary">Create</button>
      </div>
    </form>
  <//>`;
}

function TokenShownDialog({ token, onClose }) {
  const copy = (e) => {
    const input = e.currentTarget.closest("dialog").querySelector("input");
    input.select();
    navigator.clipboard?.writeText(token).then(() => toast("Copied")).catch(() => document.execCommand("copy"));
  };
  return html`<${Dialog} title="Token created" onClose=${onClose}>
    <div class="stack">
      <p>Copy it now: it will not be shown again.</p>
      <input class="token-value mono" readonly value=${token} aria-label="New token" />
      <div class="actions">
        <button type="button" class="btn" onClick=${copy}>Copy</button>
        <button type="button" class="btn btn-primary" onClick=${onClose}>Done</button>
      </div>
    </div>
  <//>`;
}
