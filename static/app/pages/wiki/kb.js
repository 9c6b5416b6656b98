// One knowledge base: its linked folder (live watcher state), uploads, processing, search, pages, research.
import { api, get, post, put, seg } from "../../api.js";
import { html, useState } from "../../ui.js";
import { Field, PageFrame, Panel, Table, fieldErrors, toast, toastError, useLoad, usePoll } from "../../components/index.js";
import { pageHref } from "./links.js";
import { Research } from "./research.js";

const KB = "/wiki/knowledge-bases";

export function KbView({ kbId }) {
  const state = useLoad(() => get(`${KB}/${seg(kbId)}`), [kbId]);
  return html`<${PageFrame} title=${state.data ? state.data.name : "Knowledge base"} wide state=${state}
      subtitle=${html`<a href="#/wiki">All knowledge bases</a>`}>
    ${(kb) => html`
      <div class="two-col">
        <${SourceFolder} kb=${kb} onChange=${() => state.reload(true)} />
        <${Upload} kbId=${kbId} />
      </div>
      <${Progress} kbId=${kbId} />
      <div class="two-col">
        <${Search} kbId=${kbId} />
        <${Pages} kbId=${kbId} />
      </div>
      <${Research} kbId=${kbId} />`}
  <//>`;
}

function SourceFolder({ kb, onChange }) {
  const [path, setPath] = useState(kb.sourceDirectory || "");
  const [error, setError] = useState(null);
  const watcher = useLoad(() => get(`${KB}/${seg(kb.id)}/source-watcher`), [kb.id]);
  usePoll(() => watcher.reload(true), 1000, [watcher.reload]);
  const w = watcher.data;
  async function link(e) {
    e.preventDefault();
    setError(null);
    try {
      await put(`${KB}/${seg(kb.id)}/source-directory`, { path: path.trim() || null });
      toast(path.trim() ? "Folder linked: it syncs by itself from now on" : "Folder unlinked");
      watcher.reload(true);
      onChange();
    } catch (err) {
      setError(fieldErrors(err, ["path"]).path || err.message);
    }
  }
  async function scan() {
    try {
      const result = await post(`${KB}/${seg(kb.id)}/scan`);
      toast(`Scanned: ${result.added} added, ${result.updated} changed, ${result.removed} removed`);
      watcher.reload(true);
    } catch (err) { toastError(err); }
  }
  return html`<${Panel} title="Source folder" id="wiki-source">
    <form class="inline-form" onSubmit=${link}>
      <${Field} label="Folder on the server" error=${error}
          hint=${w && w.roots && w.roots.length ? `Inside ${w.roots.join(", ")}` : "The administrator allows folders with wiki_source_roots"}>
        <input name="source-path" value=${path} placeholder="/home/me/notes" onInput=${(e) => setPath(e.currentTarget.value)} />
      <//>
      <button type="submit" class="btn btn-primary">${path.trim() ? "Link" : "Unlink"}</button>
    </form>
    ${w && w.state !== "unlinked" && html`<div class="watcher" data-state=${w.state}>
      <p><span class=${`badge state-${w.state}`} aria-label="Watcher state">${w.state}</span>
        ${w.scanning && html` <span class="muted">scanning…</span>`}
        ${w.pendingEvents > 0 && html` <span class="muted">${w.pendingEvents} pending changes</span>`}
        <button type="button" class="btn btn-small" onClick=${scan}>Scan now</button></p>
      ${w.error && html`<p class="field-error" role="alert">${w.error}</p>`}
      ${w.lastScan && !w.lastScan.error && html`<p class="muted">${lastScan(w)}</p>`}
    </div>`}
  <//>`;
}

function lastScan(w) {
  const r = w.lastScan;
  return `Last scan ${new Date(w.lastScanTime).toLocaleTimeString()}: ${r.added} added, ${r.updated} changed, `
    + `${r.removed} removed, ${r.skippedCount} skipped, ${r.failedCount} failed`;
}

function Upload({ kbId }) {
  const [over, setOver] = useState(false);
  const [busy, setBusy] = useState(0);
  async function send(files) {
    for (const file of files) {
      const form = new FormData();
      form.append("file", file, file.name);
      setBusy((n) => n + 1);
      try {
        await api("POST", `${KB}/${seg(kbId)}/raw/upload`, form);
        toast(`${file.name} added`);
      } catch (err) { toastError(err); } finally { setBusy((n) => n - 1); }
    }
  }
  return html`<${Panel} title="Add files">
    <div class=${`drop-zone ${over ? "over" : ""}`}
        onDragOver=${(e) => { e.preventDefault(); setOver(true); }} onDragLeave=${() => setOver(false)}
        onDrop=${(e) => { e.preventDefault(); setOver(false); send([...e.dataTransfer.files]); }}>
      <p>Drop Markdown, text, HTML or PDF files here, or</p>
      <label class="btn">Choose files<input type="file" multiple hidden accept=".md,.markdown,.txt,.csv,.html,.htm,.pdf"
        onChange=${(e) => { send([...e.currentTarget.files]); e.currentTarget.value = ""; }} /></label>
      ${busy > 0 && html`<p class="muted" role="status">Uploading ${busy}…</p>`}
    </div>
  <//>`;
}

function Progress({ kbId }) {
  const status = useLoad(() => get(`${KB}/${seg(kbId)}/processing-status`), [kbId]);
  usePoll(() => status.reload(true), 1500, [status.reload]);
  const s = status.data;
  if (!s) return null;
  const c = s.counts;
  const busy = s.materials.filter((m) => m.status === "processing" || m.status === "pending");
  const failed = s.materials.filter((m) => m.status === "failed" || m.status === "partial");
  async function retry(m) {
    try {
      await post(`${KB}/${seg(kbId)}/raw/${seg(m.rawId)}/reprocess?force=true`);
      toast(`${m.title}: queued again`);
      status.reload(true);
    } catch (err) { toastError(err); }
  }
  return html`<${Panel} title="Processing" id="wiki-progress">
    <p aria-live="polite">${`${s.idle ? "Idle" : "Working"} · ${s.total} materials: ${c.completed} done, ${c.processing} processing, `
      + `${c.pending} waiting, ${c.failed} failed, ${c.partial} partial`}</p>
    ${busy.length > 0 && html`<ul class="plain">${busy.slice(0, 8).map((m) => html`<li key=${m.rawId}>${m.title}: ${m.step || m.status}</li>`)}</ul>`}
    ${failed.length > 0 && html`<ul class="plain" aria-label="Failed materials">${failed.slice(0, 50).map((m) => html`<li key=${m.rawId}>
      <strong>${m.title}</strong> <span class="badge">${m.status}</span>
      <small class="field-error"> ${m.error || "no reason recorded"}</small>
      <button type="button" class="btn btn-small" aria-label=${`Retry ${m.title}`} onClick=${() => retry(m)}>Retry</button></li>`)}</ul>`}
  <//>`;
}

function Search({ kbId }) {
  const [query, setQuery] = useState("");
  const [result, setResult] = useState(null);
  async function submit(e) {
    e.preventDefault();
    try {
      setResult(await post(`/wiki/kb/${seg(kbId)}/search-preview`, { query: query.trim(), topK: 10 }));
    } catch (err) { toastError(err); }
  }
  return html`<${Panel} title="Search" id="wiki-search">
    <form class="inline-form" role="search" onSubmit=${submit}>
      <${Field} label="Search pages"><input name="wiki-query" value=${query} onInput=${(e) => setQuery(e.currentTarget.value)} /><//>
      <button type="submit" class="btn" disabled=${!query.trim()}>Search</button>
    </form>
    ${result && (result.results.length ? html`<ol class="search-results">
      ${result.results.map((r) => html`<li key=${r.pageId}><a href=${pageHref(kbId, r.slug)}>${r.title}</a>
        <small class="muted"> ${r.pageType} · ${r.score.toFixed(2)}</small><p class="muted">${r.snippet}</p></li>`)}
    </ol>` : html`<p class="muted">No page matches.</p>`)}
  <//>`;
}

function Pages({ kbId }) {
  const pages = useLoad(() => get(`${KB}/${seg(kbId)}/pages`, { size: 100 }), [kbId]);
  usePoll(() => pages.reload(true), 2000, [pages.reload]);
  const rows = pages.data ? pages.data.records : [];
  return html`<${Panel} title=${`Pages${pages.data ? ` (${pages.data.total})` : ""}`} id="wiki-pages">
    <${Table} label="Pages" empty="No pages yet." rows=${rows}
      columns=${[
        { key: "title", label: "Title", render: (p) => html`<a href=${pageHref(kbId, p.slug)}>${p.title}</a>` },
        { key: "pageType", label: "Type" },
      ]} />
  <//>`;
}
