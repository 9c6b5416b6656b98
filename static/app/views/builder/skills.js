// Skills: installed skills (enable, pin, archive, delete), files in a viewer/editor, requirements with
// write-only secrets, lessons; install from a ZIP, a URL or the hub; synthesis from a conversation.
import { api, del, get, post, put, seg } from "../../api.js";
import { html, useEffect, useState } from "../../ui.js";
import {
  Badge, Empty, Field, Head, Tabs, Toggle, confirmDialog, formDialog, page, rows, toast, toastError, useAction, useLoad, useSession, when,
} from "../../components/index.js";
import { CuratorTab, RoutinesTab } from "./skills_curator.js";

const TABS = [["installed", "Installed"], ["install", "Install"], ["curator", "Curator"], ["routines", "Routines"]];

function SkillsPage({ args }) {
  const tab = TABS.some(([k]) => k === args[0]) ? args[0] : "installed";
  return html`
    <${Head} title="Skills" />
    <${Tabs} base="skills" tabs=${TABS} current=${tab} />
    ${tab === "installed" ? html`<${Installed} selected=${args[1]} />` : null}
    ${tab === "install" ? html`<${Install} />` : null}
    ${tab === "curator" ? html`<${CuratorTab} />` : null}
    ${tab === "routines" ? html`<${RoutinesTab} />` : null}`;
}

function Installed({ selected }) {
  const [archived, setArchived] = useState(false);
  const [keyword, setKeyword] = useState("");
  const list = useLoad(() => get("/skills", { size: 100, archived: archived ? "true" : undefined, keyword }), [archived, keyword], { toastErrors: true });
  const [, run] = useAction();
  const act = (fn, msg) => run(fn, msg).then(() => list.reload());
  const skills = rows(list.data);
  return html`
    <div class="split">
      <section class="panel" aria-label="Skill list">
        <div class="row">
          <input class="grow" type="search" placeholder="Search skills" aria-label="Search skills" value=${keyword}
            onChange=${(e) => setKeyword(e.currentTarget.value)} />
          <label class="check"><input type="checkbox" checked=${archived} onChange=${(e) => setArchived(e.currentTarget.checked)} /> Archived</label>
        </div>
        ${list.loading && !skills.length ? html`<p class="muted">Loading…</p>` : null}
        ${!list.loading && !skills.length ? html`<${Empty}>No skills here.</>` : null}
        <ul class="list skill-list">
          ${skills.map((s) => html`<li key=${s.id} data-skill=${s.name} class=${s.id === selected ? "selected" : ""}>
            <div class="item-main">
              <a class="item-title" href=${`#/skills/installed/${s.id}`}>${s.displayName}</a>
              <small class="muted">${s.name} · ${s.skillType} · v${s.version || "?"}${s.pinned ? " · pinned" : ""}</small>
            </div>
            <div class="row">
              ${s.archived
                ? html`<button class="btn btn-small" onClick=${() => act(() => post(`/skills/${seg(s.id)}/restore`), "Restored")}>Restore</button>`
                : html`<${Toggle} label=${`Enable ${s.name}`} checked=${s.enabled}
                    onChange=${(v) => act(() => put(`/skills/${seg(s.id)}/toggle`, { enabled: v }), v ? "Enabled" : "Disabled")} />`}
            </div>
          </li>`)}
        </ul>
      </section>
      ${selected ? html`<${SkillDetail} key=${selected} id=${selected} onChange=${list.reload} />`
        : html`<section class="panel"><p class="muted">Pick a skill to see its files, requirements and lessons.</p></section>`}
    </div>`;
}

function SkillDetail({ id, onChange }) {
  const { can } = useSession();
  const skill = useLoad(() => get(`/skills/${seg(id)}`), [id], { toastErrors: true });
  const [busy, run] = useAction();
  const [file, setFile] = useState("SKILL.md");
  const s = skill.data;
  if (!s) return html`<section class="panel"><p class="muted">${skill.loading ? "Loading…" : "Skill not found."}</p></section>`;
  const reload = () => { skill.reload(); onChange(); };
  const pin = () => run(() => post(`/skills/${seg(id)}/pin`, { pinned: !s.pinned }), s.pinned ? "Unpinned" : "Pinned").then(reload);
  const archive = async () => {
    try {
      await post(`/skills/${seg(id)}/archive`, {});
    } catch (err) {
      if (err.status !== 409) { toastError(err); return; }
      if (!(await confirmDialog({ title: "Archive skill", message: `${err.message} Archive anyway?`, submit: "Archive" }))) return;
      await run(() => post(`/skills/${seg(id)}/archive`, { force: true }));
    }
    toast("Archived", "ok");
    reload();
  };
  const remove = async () => {
    if (!(await confirmDialog({ title: "Delete skill", message: `Delete “${s.name}” with its files and secrets?` }))) return;
    if (await run(() => del(`/skills/${seg(id)}`), "Deleted") !== undefined) { location.hash = "#/skills/installed"; onChange(); }
  };
  return html`
    <section class="panel skill-detail" aria-label=${`Skill ${s.name}`}>
      <div class="card-head"><h2>${s.displayName}</h2>
        ${s.archived ? html`<${Badge} kind="warn">archived</>` : null}
        ${s.pinned ? html`<${Badge}>pinned</>` : null}
        <${Badge} kind=${s.enabled ? "ok" : ""}>${s.enabled ? "enabled" : "disabled"}</>
      </div>
      <p class="muted">${s.description}</p>
      <div class="row" hidden=${!can("member")}>
        <button class="btn btn-small" disabled=${busy} onClick=${pin}>${s.pinned ? "Unpin" : "Pin"}</button>
        ${s.archived
          ? html`<button class="btn btn-small" onClick=${() => run(() => post(`/skills/${seg(id)}/restore`), "Restored").then(reload)}>Restore</button>`
          : html`<button class="btn btn-small" onClick=${archive}>Archive</button>`}
        ${can("admin") ? html`<button class="btn btn-small btn-danger" onClick=${remove}>Delete</button>` : null}
      </div>
      <h3>Files</h3>
      <ul class="list file-list" aria-label="Skill files">
        ${["SKILL.md", ...s.files.map((f) => f.path)].map((p) => html`<li key=${p} class=${p === file ? "selected" : ""}>
          <button class="link file-link" onClick=${() => setFile(p)}>${p}</button>
          <small class="muted">${p === "SKILL.md" ? `${s.content.length} chars` : `${s.files.find((f) => f.path === p).size} B`}</small></li>`)}
      </ul>
      <${FileEditor} key=${`${id}:${file}`} skill=${s} path=${file} onSaved=${reload} />
      <${Requirements} id=${id} />
      <${Lessons} id=${id} />
    </section>`;
}

function FileEditor({ skill, path, onSaved }) {
  const isMain = path === "SKILL.md";
  const loaded = useLoad(() => (isMain ? Promise.resolve({ content: skill.content }) : get(`/skills/${seg(skill.id)}/files/${path.split("/").map(seg).join("/")}`)), [skill.id, path], { toastErrors: true });
  const [text, setText] = useState(null);
  const [busy, run] = useAction();
  const value = text ?? loaded.data?.content ?? "";
  const save = () => run(() => (isMain
    ? put(`/skills/${seg(skill.id)}`, { content: value })
    : put(`/skills/${seg(skill.id)}/files/${path.split("/").map(seg).join("/")}`, { content: value })), "Saved")
    .then((r) => { if (r !== undefined) { setText(null); onSaved(); } });
  return html`<div class="file-editor">
    <${Field} label=${`Edit ${path}`} wide><textarea class="editor-area" spellcheck="false" value=${value}
      onInput=${(e) => setText(e.currentTarget.value)}></textarea></>
    <div class="row"><button class="btn btn-primary btn-small" disabled=${busy || text === null} onClick=${save}>Save ${path}</button>
      ${text !== null ? html`<button class="btn btn-small" onClick=${() => setText(null)}>Discard</button>` : null}</div>
  </div>`;
}

function Requirements({ id }) {
  const member = useSession().can("member");
  const req = useLoad(() => get(`/skills/${seg(id)}/requirements`), [id], { toastErrors: true });
  const secrets = useLoad(() => (member ? get(`/skills/${seg(id)}/secrets`) : Promise.resolve([])), [id, member], { toastErrors: true });
  const [, run] = useAction();
  const reload = () => { req.reload(); secrets.reload(); };
  const addSecret = async (key = "") => {
    const v = await formDialog({ title: "Add a secret", submit: "Save secret", fields: [
      { name: "key", label: "Key", value: key, required: true },
      { name: "value", label: "Value (write-only; never shown again)", type: "password", required: true },
    ] });
    if (v) await run(() => post(`/skills/${seg(id)}/secrets`, { key: v.key.trim(), value: v.value }), "Secret saved").then(reload);
  };
  const items = req.data?.requirements || [];
  return html`<div class="requirements">
    <h3>Requirements ${req.data ? html`<${Badge} kind=${req.data.satisfied ? "ok" : "bad"}>${req.data.satisfied ? "all met" : "missing"}</>` : null}</h3>
    ${items.length ? html`<ul class="list">${items.map((r) => html`<li key=${r.kind + r.name} data-req=${r.name}>
      <span><code>${r.name}</code> <small class="muted">${r.kind}</small></span>
      <span class="row"><${Badge} kind=${r.status === "ok" ? "ok" : "bad"}>${r.status}</>
        ${member && r.status !== "ok" && r.kind !== "bin" ? html`<button class="btn btn-small" onClick=${() => addSecret(r.name)}>Add secret</button>` : null}</span>
    </li>`)}</ul>` : html`<${Empty}>No requirements declared.</>`}
    ${member ? html`<h3>Secrets</h3>
    <ul class="list secret-list">${(secrets.data || []).map((sec) => html`<li key=${sec.key}>
      <span><code>${sec.key}</code> <span class="secret-value muted">${sec.preview}</span></span>
      <button class="btn btn-small btn-danger" aria-label=${`Delete secret ${sec.key}`}
        onClick=${() => run(() => del(`/skills/${seg(id)}/secrets/${seg(sec.key)}`), "Secret deleted").then(reload)}>Delete</button></li>`)}</ul>
    <button class="btn btn-small" onClick=${() => addSecret()}>+ Secret</button>` : null}
  </div>`;
}

function Lessons({ id }) {
  const lessons = useLoad(() => get(`/skills/${seg(id)}/lessons`), [id], { toastErrors: true });
  const [, run] = useAction();
  const l = lessons.data;
  return html`<div class="lessons"><h3>Lessons</h3>
    ${l?.exists ? html`<pre class="code">${l.content}</pre>
      <button class="btn btn-small" onClick=${() => run(() => post(`/skills/${seg(id)}/lessons/clear`), "Lessons cleared").then(lessons.reload)}>Clear lessons</button>`
      : html`<${Empty}>No lessons recorded yet.</>`}</div>`;
}

function Install() {
  const [busy, run] = useAction();
  const [task, setTask] = useState(null);
  const [hits, setHits] = useState(null);
  const conversations = useLoad(() => get("/conversations", { size: 50 }).catch(() => []), [], { toastErrors: true });
  useEffect(() => {
    if (!task || ["completed", "failed", "cancelled"].includes(task.status)) return undefined;
    const t = setTimeout(async () => {
      try { setTask(await get(`/skills/install/status/${seg(task.taskId || task.id)}`)); } catch (err) { toastError(err); setTask(null); }
    }, 700);
    return () => clearTimeout(t);
  }, [task]);
  const upload = (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const file = form.elements.zip.files[0];
    if (!file) { toastError(new Error("Choose a ZIP file")); return; }
    const data = new FormData();
    data.append("file", file, file.name);
    run(() => api("POST", "/skills/install/upload", data, { query: { overwrite: form.elements.overwrite.checked || undefined } }),
      (s) => `Installed ${s.name}`).then((s) => { if (s) location.hash = `#/skills/installed/${s.id}`; });
  };
  const start = (body) => run(() => post("/skills/install/start", body)).then((t) => t && setTask(t));
  const search = (e) => {
    e.preventDefault();
    run(() => get("/skills/install/hub/search", { q: e.currentTarget.elements.q.value })).then((r) => r !== undefined && setHits(rows(r)));
  };
  const synth = (e) => {
    e.preventDefault();
    const el = e.currentTarget.elements;
    run(() => post("/skills/synthesize-from-conversation", { conversationId: el.conversationId.value, name: el.name.value || undefined }),
      (s) => `Drafted ${s.name} (disabled until you enable it)`).then((s) => { if (s) location.hash = `#/skills/installed/${s.id}`; });
  };
  const convs = rows(conversations.data);
  return html`<div class="cols">
    <form class="panel" onSubmit=${upload} aria-label="Install from a ZIP">
      <h3>From a ZIP file</h3>
      <${Field} label="Skill ZIP (SKILL.md at the root or one folder down)"><input type="file" name="zip" accept=".zip,application/zip" /></>
      <label class="check"><input type="checkbox" name="overwrite" /> Replace an installed skill of the same name</label>
      <button class="btn btn-primary" disabled=${busy}>Upload and install</button>
    </form>
    <form class="panel" aria-label="Install from a URL" onSubmit=${(e) => { e.preventDefault(); start({ url: e.currentTarget.elements.url.value }); }}>
      <h3>From a URL</h3>
      <${Field} label="ZIP URL"><input name="url" type="url" required placeholder="https://example.com/skill.zip" /></>
      <button class="btn btn-primary" disabled=${busy}>Install</button>
      ${task ? html`<p class="status-line" role="status">Install ${task.status}${task.message ? `: ${task.message}` : ""}
        ${task.status && !["completed", "failed", "cancelled"].includes(task.status)
          ? html` <button type="button" class="btn btn-small" onClick=${() => run(() => post(`/skills/install/cancel/${seg(task.taskId || task.id)}`)).then((t) => t && setTask(t))}>Cancel</button>` : null}</p>` : null}
    </form>
    <form class="panel" onSubmit=${search} aria-label="Skills hub">
      <h3>From the hub</h3>
      <div class="row"><input class="grow" name="q" aria-label="Search the hub" placeholder="Search the hub" /><button class="btn" disabled=${busy}>Search</button></div>
      ${hits ? (hits.length ? html`<ul class="list">${hits.map((h) => html`<li key=${h.slug || h.name}>
        <span class="item-main"><span class="item-title">${h.name || h.slug}</span><small class="muted">${h.description || ""}</small></span>
        <button type="button" class="btn btn-small" onClick=${() => start({ slug: h.slug || h.name })}>Install</button></li>`)}</ul>` : html`<${Empty}>Nothing found.</>`) : null}
    </form>
    <form class="panel" onSubmit=${synth} aria-label="Synthesize from a conversation">
      <h3>From a conversation</h3>
      <p class="muted">The default model drafts a SKILL.md from what was done in one of your conversations.</p>
      <${Field} label="Conversation"><select name="conversationId" required>
        ${convs.map((c) => html`<option value=${c.conversationId || c.id}>${c.title || c.conversationId || c.id}</option>`)}</select></>
      <${Field} label="Skill name (optional)"><input name="name" placeholder="my-skill" /></>
      <button class="btn btn-primary" disabled=${busy || !convs.length}>Synthesize</button>
    </form>
  </div>`;
}

export default page(SkillsPage);
