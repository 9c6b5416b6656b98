// Data: datasources (add, test with the error text, which agents may query), a conversation's uploads and
// generated files, agent workspace files (tree, view, edit, upload), agent templates (create an agent).
import { apiHeaders, del, get, post, put, seg } from "../../api.js";
import { html, useState } from "../../ui.js";
import {
  Badge, Empty, Field, Head, Tabs, Toggle, confirmDialog, page, rows, toast, useAction, useLoad, useSession, when,
} from "../../components/index.js";
import { AgentBinding } from "./tools.js";
import { TextFile } from "./memory.js";

const TABS = [["datasources", "Datasources"], ["files", "Conversation files"], ["workspace", "Agent files"], ["templates", "Templates"]];

function DataPage({ args }) {
  const tab = TABS.some(([k]) => k === args[0]) ? args[0] : "datasources";
  return html`
    <${Head} title="Data" />
    <${Tabs} base="data" tabs=${TABS} current=${tab} />
    ${tab === "datasources" ? html`<${Datasources} />` : null}
    ${tab === "files" ? html`<${ConversationFiles} selected=${args[1] ? decodeURIComponent(args[1]) : ""} />` : null}
    ${tab === "workspace" ? html`<${WorkspaceFiles} agentId=${args[1]} />` : null}
    ${tab === "templates" ? html`<${Templates} />` : null}`;
}

const size = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`);

function Datasources() {
  const admin = useSession().can("admin");
  const list = useLoad(() => get("/datasources"), [], { toastErrors: true });
  const [type, setType] = useState("sqlite");
  const [results, setResults] = useState({});
  const [busy, run] = useAction();
  const create = (e) => {
    e.preventDefault();
    const el = e.currentTarget.elements;
    const headers = {};
    if (type === "http") for (const line of el.headers.value.split("\n")) { const i = line.indexOf(":"); if (i > 0) headers[line.slice(0, i).trim()] = line.slice(i + 1).trim(); }
    const config = type === "sqlite" ? { path: el.path.value } : { baseUrl: el.baseUrl.value, headers };
    run(() => post("/datasources", { name: el.name.value, type, description: el.description.value, config }), "Datasource added")
      .then((d) => { if (d) { e.target.reset(); list.reload(); } });
  };
  const test = (d) => run(() => post(`/datasources/${seg(d.id)}/test`)).then((r) => { if (r) { setResults({ ...results, [d.id]: r }); list.reload(); } });
  return html`<div class="split">
    <div class="stack">
      ${admin ? html`<form class="panel" aria-label="New datasource" onSubmit=${create}>
        <h3>New datasource</h3>
        <${Field} label="Name"><input name="name" required pattern="[A-Za-z0-9_.\\-]+" /></>
        <${Field} label="Type"><select name="type" value=${type} onChange=${(e) => setType(e.currentTarget.value)}>
          <option value="sqlite">SQLite file</option><option value="http">HTTP API</option></select></>
        ${type === "sqlite" ? html`<${Field} label="File" hint="Relative to <data dir>/datasources, or inside a configured datasource root"><input name="path" required placeholder="shop.db" /></>`
          : html`<${Field} label="Base URL"><input name="baseUrl" type="url" required /></>
            <${Field} label="Headers (Name: value per line; write-only)"><textarea name="headers" rows="2"></textarea></>`}
        <${Field} label="Description"><input name="description" /></>
        <button class="btn btn-primary" disabled=${busy}>Add</button>
      </form>` : null}
      <section class="panel">
        <${AgentBinding} toolNames=${["query_datasource"]} label="Agents that may query datasources" />
      </section>
    </div>
    <section class="panel" aria-label="Datasources">
      ${(list.data || []).length ? html`<ul class="list datasource-list">${list.data.map((d) => html`<li key=${d.id} data-datasource=${d.name}>
        <span class="item-main"><span class="item-title">${d.name} <small class="muted">${d.type}</small></span>
          <small class="muted"><code>${d.config.path || d.config.baseUrl}</code>${d.lastTestTime ? ` · tested ${when(d.lastTestTime)}` : ""}</small>
          ${results[d.id] ? html`<small class=${results[d.id].success ? "test-result ok" : "test-result error"} role="status">${results[d.id].success ? "OK" : "Failed"}: ${results[d.id].message} (${results[d.id].latencyMs} ms)</small>` : null}</span>
        <span class="row"><button class="btn btn-small" disabled=${busy} onClick=${() => test(d)}>Test</button>
          ${admin ? html`<${Toggle} label=${`Enable ${d.name}`} checked=${d.enabled} onChange=${(v) => run(() => put(`/datasources/${seg(d.id)}/toggle`, { enabled: v })).then(list.reload)} />
            <button class="btn btn-small btn-danger" aria-label=${`Delete ${d.name}`} onClick=${async () => { if (await confirmDialog({ title: "Delete datasource", message: `Delete ${d.name}?` })) run(() => del(`/datasources/${seg(d.id)}`), "Deleted").then(list.reload); }}>Delete</button>` : null}</span></li>`)}</ul>`
        : html`<${Empty}>${list.loading ? "Loading…" : "No datasources yet."}</>`}
    </section>
  </div>`;
}

async function download(url, name) {
  const r = await fetch(url, { headers: apiHeaders() });
  if (!r.ok) { toast(`Download failed (HTTP ${r.status})`, "error"); return; }
  const blob = await r.blob();
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function ConversationFiles({ selected }) {
  const convs = useLoad(() => get("/conversations"), [], { toastErrors: true });
  const list = rows(convs.data);
  const cid = selected || list[0]?.conversationId;
  const files = useLoad(() => (cid ? get(`/conversations/${seg(cid)}/files`) : Promise.resolve(null)), [cid], { toastErrors: true });
  const f = files.data;
  return html`<section class="panel conversation-files" aria-label="Conversation files">
    ${list.length ? html`<label class="row">Conversation <select aria-label="Conversation" value=${cid}
      onChange=${(e) => { location.hash = `#/data/files/${encodeURIComponent(e.currentTarget.value)}`; }}>
      ${list.map((c) => html`<option value=${c.conversationId}>${c.title || c.conversationId}</option>`)}</select></label>` : html`<${Empty}>${convs.loading ? "Loading…" : "No conversations yet."}</>`}
    ${f ? html`<h3>Uploads</h3>
      ${f.uploads.length ? html`<ul class="list upload-list">${f.uploads.map((u) => html`<li key=${u.storedName}>
        <span class="item-main"><span class="item-title">${u.name}</span><small class="muted">${u.contentType} · ${size(u.size)} · ${when(u.createTime)}</small></span>
        <button class="btn btn-small" onClick=${() => download(u.url, u.name)}>Download</button></li>`)}</ul>` : html`<${Empty}>No uploads.</>`}
      <h3>Generated files</h3>
      ${f.generated.length ? html`<ul class="list generated-list">${f.generated.map((g) => html`<li key=${g.id}>
        <span class="item-main"><span class="item-title">${g.name}</span><small class="muted">${g.contentType} · ${size(g.size)} · ${when(g.createTime)}</small></span>
        <span class="row"><${Badge} kind=${g.state === "available" ? "ok" : ""}>${g.state}</>
          ${g.url ? html`<button class="btn btn-small" onClick=${() => download(g.url, g.name).then(files.reload)}>Download (once)</button>` : null}</span></li>`)}</ul>` : html`<${Empty}>No generated files.</>`}` : null}
  </section>`;
}

/** Nested folders from flat paths. */
function tree(files) {
  const root = { dirs: {}, files: [] };
  for (const f of files) {
    const parts = f.path.split("/");
    let node = root;
    for (const p of parts.slice(0, -1)) node = node.dirs[p] ||= { dirs: {}, files: [] };
    node.files.push({ ...f, base: parts[parts.length - 1] });
  }
  return root;
}

function Tree({ node, selected, onPick }) {
  return html`<ul class="file-tree">
    ${Object.entries(node.dirs).sort().map(([name, sub]) => html`<li key=${name}><details open><summary>${name}/</summary><${Tree} node=${sub} selected=${selected} onPick=${onPick} /></details></li>`)}
    ${node.files.map((f) => html`<li key=${f.path} class=${f.path === selected ? "selected" : ""}><button class="link" onClick=${() => onPick(f.path)}>${f.base}</button> <small class="muted">${size(f.size)}</small></li>`)}
  </ul>`;
}

function WorkspaceFiles({ agentId }) {
  const agents = useLoad(() => get("/agents"), [], { toastErrors: true });
  const list = agents.data || [];
  const id = agentId && list.some((a) => a.id === agentId) ? agentId : list[0]?.id;
  return html`${list.length ? html`<label class="row">Agent <select aria-label="Agent" value=${id}
      onChange=${(e) => { location.hash = `#/data/workspace/${e.currentTarget.value}`; }}>
      ${list.map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select></label>` : html`<${Empty}>${agents.loading ? "Loading…" : "No agents yet."}</>`}
    ${id ? html`<${AgentFiles} key=${id} agentId=${id} />` : null}`;
}

export function AgentFiles({ agentId }) {
  const files = useLoad(() => get(`/agents/${seg(agentId)}/workspace/files`), [agentId], { toastErrors: true });
  const [selected, setSelected] = useState(null);
  const [busy, run] = useAction();
  const filePath = (p) => `/agents/${seg(agentId)}/workspace/files/${p.split("/").map(seg).join("/")}`;
  const upload = async (e) => {
    e.preventDefault();
    const el = e.currentTarget.elements;
    const file = el.file.files[0];
    if (!file) return;
    const folder = el.folder.value.trim().replace(/^\/+|\/+$/g, "");
    const path = folder ? `${folder}/${file.name}` : file.name;
    const ok = await run(async () => {
      const r = await fetch(`/api/v1${filePath(path)}`, { method: "PUT", headers: apiHeaders({ "Content-Type": file.type || "application/octet-stream" }), body: file });
      const body = await r.json().catch(() => null);
      if (!r.ok || body?.code !== 200) throw new Error(body?.msg || `HTTP ${r.status}`);
      return body.data;
    }, `Uploaded ${path}`);
    if (ok) { e.target.reset(); files.reload(); setSelected(path); }
  };
  const create = async () => {
    const name = prompt("New file path (e.g. notes/todo.md)");
    if (!name) return;
    if (await run(() => put(filePath(name.trim()), { content: "" }), `Created ${name}`) !== undefined) { files.reload(); setSelected(name.trim()); }
  };
  const remove = async (p) => {
    if (!(await confirmDialog({ title: "Delete file", message: `Delete ${p}?` }))) return;
    if (await run(() => del(filePath(p)), "Deleted") !== undefined) { setSelected(null); files.reload(); }
  };
  const list = files.data || [];
  return html`<div class="split">
    <section class="panel agent-files" aria-label="Agent files">
      <form class="row" onSubmit=${upload} aria-label="Upload a file">
        <input type="file" name="file" aria-label="File to upload" />
        <input name="folder" class="grow" aria-label="Folder" placeholder="folder (optional)" />
        <button class="btn btn-small" disabled=${busy}>Upload</button></form>
      <button class="btn btn-small" onClick=${create}>+ New file</button>
      ${list.length ? html`<${Tree} node=${tree(list)} selected=${selected} onPick=${setSelected} />` : html`<${Empty}>${files.loading ? "Loading…" : "The workspace is empty."}</>`}
    </section>
    ${selected ? html`<div class="stack"><${TextFile} key=${selected} agentId=${agentId} path=${selected} onSaved=${files.reload} />
      <button class="btn btn-small btn-danger" onClick=${() => remove(selected)}>Delete ${selected}</button></div>`
      : html`<section class="panel"><p class="muted">Pick a file to view or edit it.</p></section>`}
  </div>`;
}

function Templates() {
  const list = useLoad(() => get("/templates"), [], { toastErrors: true });
  const [busy, run] = useAction();
  return html`<div class="cols template-list">${(list.data || []).map((t) => html`<section class="panel" key=${t.id} data-template=${t.name} aria-label=${`Template ${t.name}`}>
    <h3>${t.icon || ""} ${t.name}</h3>
    <p class="muted">${t.description}</p>
    <button class="btn btn-primary btn-small" disabled=${busy} onClick=${() => run(() => post(`/templates/${seg(t.id)}/apply`, {}), (a) => `Created agent ${a.name}`)
      .then((a) => { if (a) location.hash = `#/agents/${a.id}`; })}>Create an agent from it</button></section>`)}
    ${!list.loading && !(list.data || []).length ? html`<${Empty}>No templates.</>` : null}</div>`;
}

export default page(DataPage);
