// Memory, per agent: memory files (MEMORY.md, daily notes, DREAMS.md) viewed and edited; facts with
// confirm/edit/forget; contradictions to resolve; dreams: status, the morning card, reports, focused dream, live events.
import { apiHeaders, get, post, put, seg } from "../../api.js";
import { readSse } from "../../sse.js";
import { html, useEffect, useState } from "../../ui.js";
import {
  Badge, Empty, Field, Head, formDialog, page, rows, toastError, useAction, useLoad, when,
} from "../../components/index.js";

const TABS = [["facts", "Facts"], ["files", "Files"], ["dreams", "Dreams"]];

function MemoryPage({ args }) {
  const agents = useLoad(() => get("/agents"), [], { toastErrors: true });
  const list = agents.data || [];
  const agentId = args[0] && list.some((a) => a.id === args[0]) ? args[0] : list[0]?.id;
  const tab = TABS.some(([k]) => k === args[1]) ? args[1] : "facts";
  return html`
    <${Head} title="Memory">
      ${list.length ? html`<label class="row">Agent <select aria-label="Agent" value=${agentId}
        onChange=${(e) => { location.hash = `#/memory/${e.currentTarget.value}/${tab}`; }}>
        ${list.map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select></label>` : null}
    </>
    ${!agents.loading && !list.length ? html`<${Empty}>Create an agent first; its memory shows here.</>` : null}
    ${agentId ? html`
      <nav class="tabs" aria-label="Sections">${TABS.map(([k, label]) => html`<a class="tab" href=${`#/memory/${agentId}/${k}`} aria-current=${k === tab ? "page" : undefined}>${label}</a>`)}</nav>
      ${tab === "facts" ? html`<${Facts} key=${agentId} agentId=${agentId} />` : null}
      ${tab === "files" ? html`<${MemoryFiles} key=${agentId} agentId=${agentId} />` : null}
      ${tab === "dreams" ? html`<${Dreams} key=${agentId} agentId=${agentId} />` : null}` : null}`;
}

export function Facts({ agentId }) {
  const base = `/memory/${seg(agentId)}`;
  const [status, setStatus] = useState("active");
  const facts = useLoad(() => get(`${base}/facts`, { status }), [agentId, status], { toastErrors: true });
  const conflicts = useLoad(() => get(`${base}/facts/contradictions`), [agentId], { toastErrors: true });
  const [busy, run] = useAction();
  const reload = () => { facts.reload(); conflicts.reload(); };
  const edit = async (f) => {
    const v = await formDialog({ title: `Edit ${f.key}`, submit: "Save", fields: [{ name: "statement", label: "Statement", type: "textarea", value: f.statement }] });
    if (v) run(() => post(`${base}/facts/${seg(f.id)}/edit`, { statement: v.statement }), "Fact saved").then(reload);
  };
  const resolve = (c, resolution) => run(() => post(`${base}/facts/contradictions/${seg(c.id)}/resolve`, { resolution }), "Resolved").then(reload);
  return html`<div class="stack">
    ${(conflicts.data || []).length ? html`<section class="panel contradictions" aria-label="Contradictions">
      <h3>Contradictions to resolve</h3>
      <ul class="list">${conflicts.data.map((c) => html`<li key=${c.id}>
        <span class="item-main"><span class="item-title">${c.factA.key}</span>
          <small>A: ${c.factA.statement}</small><small>B: ${c.factB.statement}</small></span>
        <span class="row">
          <button class="btn btn-small" disabled=${busy} onClick=${() => resolve(c, "KEEP_A")}>Keep A</button>
          <button class="btn btn-small" disabled=${busy} onClick=${() => resolve(c, "KEEP_B")}>Keep B</button>
          <button class="btn btn-small" disabled=${busy} onClick=${() => resolve(c, "MERGE")}>Merge</button>
          <button class="btn btn-small" disabled=${busy} onClick=${() => resolve(c, "IGNORE")}>Keep both</button></span></li>`)}</ul>
    </section>` : null}
    <section class="panel" aria-label="Facts">
      <div class="row"><h3 class="grow">Facts</h3>
        <select aria-label="Show" value=${status} onChange=${(e) => setStatus(e.currentTarget.value)}>
          <option value="active">Active</option><option value="forgotten">Forgotten</option><option value="all">All</option></select></div>
      ${(facts.data || []).length ? html`<ul class="list fact-list">${facts.data.map((f) => html`<li key=${f.id} data-fact=${f.key}>
        <span class="item-main"><span class="item-title">${f.statement}</span>
          <small class="muted">${f.key} · confidence ${f.confidence} · ${f.mentions}× mentioned${f.userEdited ? " · edited" : ""}</small></span>
        <span class="row">
          ${f.helpfulCount ? html`<${Badge} kind="ok">confirmed${f.helpfulCount > 1 ? ` ×${f.helpfulCount}` : ""}</>` : null}
          ${f.status === "active" ? html`
            <button class="btn btn-small" aria-label=${`Confirm ${f.key}`} onClick=${() => run(() => post(`${base}/facts/${seg(f.id)}/feedback`, { value: "HELPFUL" }), "Confirmed").then(reload)}>Confirm</button>
            <button class="btn btn-small" aria-label=${`Edit ${f.key}`} onClick=${() => edit(f)}>Edit</button>
            <button class="btn btn-small btn-danger" aria-label=${`Forget ${f.key}`} onClick=${() => run(() => post(`${base}/facts/${seg(f.id)}/forget`), "Forgotten").then(reload)}>Forget</button>`
            : html`<${Badge}>${f.status}</>`}</span></li>`)}</ul>`
        : html`<${Empty}>${facts.loading ? "Loading…" : "No facts remembered yet. They are extracted from your conversations with this agent."}</>`}
    </section>
  </div>`;
}

const filePath = (agentId, p) => `/agents/${seg(agentId)}/workspace/files/${p.split("/").map(seg).join("/")}`;
const memoryPath = (agentId, p) => `/memory/${seg(agentId)}/files/${p.split("/").map(seg).join("/")}`;

export async function readText(path) {
  const r = await fetch("/api/v1" + path, { headers: apiHeaders() });
  if (!r.ok) {
    let msg = `HTTP ${r.status}`;
    try { msg = (await r.json()).msg || msg; } catch { /* not JSON */ }
    throw new Error(msg);
  }
  return r.text();
}

function MemoryFiles({ agentId }) {
  const files = useLoad(() => get(`/memory/${seg(agentId)}/files`), [agentId], { toastErrors: true });
  const list = files.data || [];
  const [selected, setSelected] = useState(null);
  const path = selected || list[0]?.path;
  return html`<div class="split">
    <section class="panel" aria-label="Memory files">
      <p class="muted">Your memory of this agent, private to you: MEMORY.md follows the facts; daily notes and DREAMS.md can be edited.</p>
      ${list.length ? html`<ul class="list file-list">${list.map((f) => html`<li key=${f.path} class=${f.path === path ? "selected" : ""}>
        <button class="link" onClick=${() => setSelected(f.path)}>${f.path}</button><small class="muted">${f.size} B</small></li>`)}</ul>`
        : html`<${Empty}>${files.loading ? "Loading…" : "No memory files yet."}</>`}
    </section>
    ${path ? html`<${MemoryFile} key=${path} agentId=${agentId} path=${path} onSaved=${files.reload} />` : null}
  </div>`;
}

function MemoryFile({ agentId, path, onSaved }) {
  const loaded = useLoad(() => get(memoryPath(agentId, path)), [agentId, path], { toastErrors: true });
  const [text, setText] = useState(null);
  const [busy, run] = useAction();
  const f = loaded.data;
  const value = text ?? f?.content ?? "";
  return html`<section class="panel text-file" aria-label=${`File ${path}`}>
    <${Field} label=${f && !f.editable ? `${path} (from the facts)` : `Edit ${path}`} wide>
      <textarea class="editor-area" spellcheck="false" value=${value} readonly=${f && !f.editable} onInput=${(e) => setText(e.currentTarget.value)}></textarea></>
    ${f?.editable ? html`<div class="row"><button class="btn btn-primary btn-small" disabled=${busy || text === null}
      onClick=${() => run(() => put(memoryPath(agentId, path), { content: value }), "Saved").then((r) => { if (r) { setText(null); onSaved?.(); } })}>Save</button>
      ${text !== null ? html`<button class="btn btn-small" onClick=${() => setText(null)}>Discard</button>` : null}</div>`
      : html`<p class="muted">Confirm, edit or forget facts to change it.</p>`}
  </section>`;
}

/** View and edit one text file of an agent's workspace. */
export function TextFile({ agentId, path, onSaved }) {
  const loaded = useLoad(() => readText(filePath(agentId, path)), [agentId, path], { toastErrors: true });
  const [text, setText] = useState(null);
  const [busy, run] = useAction();
  const value = text ?? loaded.data ?? "";
  return html`<section class="panel text-file" aria-label=${`File ${path}`}>
    <${Field} label=${`Edit ${path}`} wide><textarea class="editor-area" spellcheck="false" value=${value} onInput=${(e) => setText(e.currentTarget.value)}></textarea></>
    <div class="row"><button class="btn btn-primary btn-small" disabled=${busy || text === null}
      onClick=${() => run(() => put(filePath(agentId, path), { content: value }), "Saved").then((r) => { if (r) { setText(null); onSaved?.(); } })}>Save</button>
      ${text !== null ? html`<button class="btn btn-small" onClick=${() => setText(null)}>Discard</button>` : null}</div>
  </section>`;
}

function Dreams({ agentId }) {
  const base = `/memory/${seg(agentId)}`;
  const status = useLoad(() => get(`${base}/dreaming/status`), [agentId], { toastErrors: true });
  const card = useLoad(() => get(`${base}/dream/morning-card`), [agentId], { toastErrors: true });
  const reports = useLoad(() => get(`${base}/dream/reports`, { size: 20 }), [agentId], { toastErrors: true });
  const diary = useLoad(() => get(`${base}/dreaming/dreams`), [agentId], { toastErrors: true });
  const [report, setReport] = useState(null);
  const [events, setEvents] = useState([]);
  const [busy, run] = useAction();
  const reloadAll = () => { status.reload(); card.reload(); reports.reload(); diary.reload(); };
  useEffect(() => {
    const abort = new AbortController();
    (async () => {
      try {
        const r = await fetch(`/api/v1${base}/dream/events`, { headers: apiHeaders({ Accept: "text/event-stream" }), signal: abort.signal });
        if (!r.ok) return;
        for await (const frame of readSse(r)) {
          if (frame.event === "heartbeat") continue;
          setEvents((list) => [...list.slice(-30), frame]);
          if (frame.event === "dream_completed" || frame.event === "error") reloadAll();
        }
      } catch (err) {
        if (err.name !== "AbortError") toastError(err);
      }
    })();
    return () => abort.abort();
  }, [agentId]);
  const open = (id) => run(() => get(`${base}/dream/reports/${seg(id)}`)).then((r) => r && setReport(r));
  const focused = (e) => {
    e.preventDefault();
    const topic = e.currentTarget.elements.topic.value;
    run(() => post(`${base}/dreaming/focused`, { topic }), "Focused dream finished").then((r) => { if (r) { setReport(r); reloadAll(); } });
  };
  const editEntry = async (entry) => {
    const v = await formDialog({ title: `Edit ${entry.key}`, submit: "Save", fields: [{ name: "after", label: "Memory entry", type: "textarea", value: entry.after || "" }] });
    if (v) run(() => post(`${base}/dream/reports/${seg(report.id)}/entries/${seg(entry.key)}/edit`, { after: v.after }), "Entry saved").then(() => open(report.id));
  };
  const c = card.data;
  const st = status.data;
  return html`<div class="cols">
    <section class="panel morning-card" aria-label="Morning card">
      <h3>Morning card</h3>
      ${c ? html`<p>${c.summary}</p><small class="muted">${when(c.finishTime)} · ${c.mode}${c.topic ? ` · ${c.topic}` : ""}</small>
        <ul class="list">${c.highlights.map((e) => html`<li key=${e.key}><span><code>${e.key}</code> ${e.after || e.before}</span><${Badge}>${e.action}</></li>`)}</ul>
        ${c.seen ? html`<${Badge}>seen</>` : html`<button class="btn btn-small" onClick=${() => run(() => post(`${base}/dream/morning-card/seen`)).then(card.reload)}>Mark as seen</button>`}`
        : html`<${Empty}>No dream yet.</>`}
    </section>
    <section class="panel" aria-label="Dreaming">
      <h3>Dreaming</h3>
      ${st ? html`<${DreamingStatus} st=${st} />` : null}
      <form class="row" onSubmit=${focused} aria-label="Focused dream">
        <input class="grow" name="topic" required aria-label="Topic" placeholder="Topic, e.g. travel plans" />
        <button class="btn btn-primary" disabled=${busy}>Dream on it</button></form>
      <button class="btn btn-small" disabled=${busy} onClick=${() => run(() => post(`${base}/emergence`), "Consolidated").then((r) => { if (r) { setReport(r); reloadAll(); } })}>Consolidate now</button>
      <h3>Live events</h3>
      <ul class="list dream-events" aria-live="polite">${events.map((ev, i) => html`<li key=${i}><code>${ev.event}</code>
        <small class="muted">${ev.data?.stage || ev.data?.status || ev.data?.message || (ev.data?.running ? "running" : "")}</small></li>`)}</ul>
    </section>
    <section class="panel" aria-label="Dream reports">
      <h3>Reports</h3>
      ${rows(reports.data).length ? html`<ul class="list">${rows(reports.data).map((r) => html`<li key=${r.id}>
        <button class="link" onClick=${() => open(r.id)}>${when(r.createTime)}</button><small class="muted">${r.mode}${r.topic ? ` · ${r.topic}` : ""} · ${r.status}</small></li>`)}</ul>`
        : html`<${Empty}>No reports yet.</>`}
      ${report ? html`<div class="dream-report"><h3>Report ${when(report.createTime)}</h3><p>${report.summary || report.error}</p>
        <ul class="list">${report.entries.map((e) => html`<li key=${e.key}>
          <span class="item-main"><span class="item-title">${e.key} <${Badge}>${e.action}</></span><small>${e.after || e.before}</small></span>
          <span class="row">${e.confirmed ? html`<${Badge} kind="ok">confirmed</>` : html`<button class="btn btn-small" onClick=${() => run(() => post(`${base}/dream/reports/${seg(report.id)}/entries/${seg(e.key)}/confirm`), "Confirmed").then(() => open(report.id))}>Confirm</button>`}
            <button class="btn btn-small" onClick=${() => editEntry(e)}>Edit</button></span></li>`)}</ul></div>` : null}
    </section>
    <section class="panel" aria-label="Dream diary">
      <h3>DREAMS.md</h3>
      ${diary.data?.content ? html`<pre class="code">${diary.data.content}</pre>` : html`<${Empty}>The diary starts with the first dream.</>`}
    </section>
  </div>`;
}

/** When this memory dreams next, how the last dream went, and what it holds, in words. */
function DreamingStatus({ st }) {
  const why = !st.configEnabled ? "off in the server's settings (dreaming_enabled)" : !st.featureFlag ? "off: the “dreaming” feature flag" : "";
  const facts = st.stats || {};
  return html`<dl class="kv dreaming-status">
    <dt>Nightly dream</dt><dd>${st.enabled ? `every night at ${String(st.hour).padStart(2, "0")}:00 (${st.timezone})` : why}</dd>
    ${st.enabled ? html`<dt>Next dream</dt><dd>${when(st.nextRunTime, st.timezone)}</dd>` : null}
    <dt>Last dream</dt><dd>${st.running ? "dreaming now…" : st.lastRunTime ? `${when(st.lastRunTime)} · ${st.lastRunStatus}` : "none yet"}</dd>
    <dt>Facts</dt><dd>${facts.activeFacts ?? 0} remembered${facts.userEditedFacts ? `, ${facts.userEditedFacts} edited by you` : ""}${facts.forgottenFacts ? `, ${facts.forgottenFacts} forgotten` : ""}</dd>
    ${facts.openContradictions ? html`<dt>To resolve</dt><dd>${facts.openContradictions} contradiction${facts.openContradictions === 1 ? "" : "s"}</dd>` : null}
  </dl>`;
}

export default page(MemoryPage);
