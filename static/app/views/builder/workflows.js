// Automation → Workflows (definition editor with the compiler's diagnostics inline, a read-only graph of
// the nodes, runs with per-step status, resume a paused run) and Team runs (teams, start a run, watch tasks).
import { del, get, post, put, seg } from "../../api.js";
import { html, useEffect, useState } from "../../ui.js";
import {
  Badge, Empty, Field, confirmDialog, rows, toast, useAction, useLoad, useSession, when,
} from "../../components/index.js";

const KIND = { succeeded: "ok", completed: "ok", running: "", pending: "", failed: "bad", cancelled: "warn", paused: "warn", skipped: "" };

export function WorkflowsTab({ selected }) {
  const list = useLoad(() => get("/workflows"), [], { toastErrors: true });
  const [busy, run] = useAction();
  const create = (e) => {
    e.preventDefault();
    const el = e.currentTarget.elements;
    run(() => post("/workflows", { name: el.name.value, description: el.description.value }), "Workflow created")
      .then((w) => { if (w) { e.target.reset(); list.reload(); location.hash = `#/automation/workflows/${w.id}`; } });
  };
  return html`<div class="split">
    <div class="stack">
      <form class="panel" aria-label="New workflow" onSubmit=${create}>
        <h3>New workflow</h3>
        <${Field} label="Name"><input name="name" required maxlength="100" /></>
        <${Field} label="Description"><input name="description" /></>
        <button class="btn btn-primary" disabled=${busy}>Create</button>
      </form>
      <section class="panel" aria-label="Workflows">
        ${(list.data || []).length ? html`<ul class="list workflow-list">${list.data.map((w) => html`<li key=${w.id} class=${w.id === selected ? "selected" : ""}>
          <span class="item-main"><a class="item-title" href=${`#/automation/workflows/${w.id}`}>${w.name}</a>
            <small class="muted">${w.latestRevisionId ? "published" : "draft only"}${w.enabled ? "" : " · disabled"}</small></span></li>`)}</ul>`
          : html`<${Empty}>${list.loading ? "Loading…" : "No workflows yet."}</>`}
      </section>
    </div>
    ${selected ? html`<${WorkflowDetail} key=${selected} id=${selected} onChange=${list.reload} />`
      : html`<section class="panel"><p class="muted">Pick a workflow to edit its definition and follow its runs.</p></section>`}
  </div>`;
}

function WorkflowDetail({ id, onChange }) {
  const member = useSession().can("member");
  const wf = useLoad(() => get(`/workflows/${seg(id)}`), [id], { toastErrors: true });
  const templates = useLoad(() => get("/workflows/draft/templates").catch(() => []), [], { toastErrors: true });
  const runs = useLoad(() => get(`/workflows/${seg(id)}/runs`), [id], { toastErrors: true });
  const [text, setText] = useState(null);
  const [check, setCheck] = useState(null);
  const [openRun, setOpenRun] = useState(null);
  const [busy, run] = useAction();
  const w = wf.data;
  const value = text ?? (w ? JSON.stringify(w.draft, null, 2) : "");
  let parsed = null;
  let parseError = null;
  try { parsed = JSON.parse(value || "{}"); } catch (err) { parseError = err.message; }
  useEffect(() => {
    if (!w || parseError || !member) { setCheck(null); return undefined; }
    let live = true;
    const t = setTimeout(async () => {
      try {
        const r = await post("/workflows/draft/preview-compile", { graph: parsed });
        if (live) setCheck(r);
      } catch (err) {
        if (live) setCheck({ ok: false, diagnostics: [{ severity: "error", code: "REQUEST", message: err.message }] });
      }
    }, 300);
    return () => { live = false; clearTimeout(t); };
  }, [value, !!w]);
  if (!w) return html`<section class="panel"><p class="muted">${wf.loading ? "Loading…" : "Not found."}</p></section>`;
  const save = () => run(() => put(`/workflows/${seg(id)}/draft`, { graph: parsed }), "Draft saved").then((r) => { if (r) { setText(null); wf.reload(); } });
  const publish = () => run(async () => { await put(`/workflows/${seg(id)}/draft`, { graph: parsed }); return post(`/workflows/${seg(id)}/publish`); }, "Published")
    .then((r) => { if (r) { setText(null); wf.reload(); onChange(); } });
  const start = (e) => {
    e.preventDefault();
    let input;
    try { input = JSON.parse(e.currentTarget.elements.input.value || "{}"); } catch (err) { toast(`Input: ${err.message}`, "error"); return; }
    run(() => post(`/workflows/${seg(id)}/runs`, { input }), "Run started").then((r) => { if (r) { setOpenRun(r.id); runs.reload(); } });
  };
  const remove = async () => {
    if (!(await confirmDialog({ title: "Delete workflow", message: `Delete “${w.name}”?` }))) return;
    if (await run(() => del(`/workflows/${seg(id)}`), "Deleted") !== undefined) { location.hash = "#/automation/workflows"; onChange(); }
  };
  const diags = parseError ? [{ severity: "error", code: "JSON", message: parseError }] : (check?.diagnostics || []);
  const bad = new Set(diags.filter((d) => d.nodeId).map((d) => d.nodeId));
  return html`<section class="panel workflow-detail" aria-label=${`Workflow ${w.name}`}>
    <div class="card-head"><h2 class="grow">${w.name}</h2>${w.latestRevision ? html`<${Badge} kind="ok">revision ${w.latestRevision.version || w.latestRevisionId}</>` : html`<${Badge}>unpublished</>`}</div>
    ${w.description ? html`<p class="muted">${w.description}</p>` : null}
    ${(templates.data || []).length ? html`<div class="row"><label class="row">Start from <select aria-label="Template" onChange=${(e) => {
      const t = templates.data.find((x) => x.key === e.currentTarget.value);
      if (t) setText(JSON.stringify(t.graph, null, 2));
    }}><option value="">a template…</option>${templates.data.map((t) => html`<option value=${t.key}>${t.name}</option>`)}</select></label></div>` : null}
    <${Field} label="Definition (JSON: nodes and edges)" wide><textarea class="editor-area" spellcheck="false" value=${value} onInput=${(e) => setText(e.currentTarget.value)}></textarea></>
    <div class="diagnostics" aria-live="polite">
      ${diags.length ? html`<ul class="diag">${diags.map((d) => html`<li class=${d.severity} data-code=${d.code}>
        <strong>${d.code}</strong> ${d.message}${d.nodeId ? html` <small class="muted">(node ${d.nodeId})</small>` : null}</li>`)}</ul>`
        : check?.ok ? html`<ul class="diag"><li class="ok">Compiles without problems.</li></ul>` : null}
    </div>
    <div class="row" hidden=${!member}><button class="btn" disabled=${busy || !!parseError} onClick=${save}>Save draft</button>
      <button class="btn btn-primary" disabled=${busy || !check?.ok} onClick=${publish}>Publish</button>
      <button class="btn btn-danger" onClick=${remove}>Delete</button></div>
    <h3>Graph</h3>
    ${parsed && Array.isArray(parsed.nodes) && parsed.nodes.length ? html`<${Graph} graph=${parsed} bad=${bad} />` : html`<${Empty}>No nodes yet.</>`}
    <h3>Runs</h3>
    ${w.latestRevisionId ? html`<form class="row" onSubmit=${start}><input class="grow" name="input" aria-label="Run input (JSON)" placeholder='{"task": "..."}' />
      <button class="btn btn-primary btn-small" disabled=${busy}>Start run</button></form>` : html`<p class="muted">Publish to run it.</p>`}
    <ul class="list wf-runs">${(runs.data || []).map((r) => html`<li key=${r.id} class=${r.id === openRun ? "selected" : ""}>
      <button class="link" onClick=${() => setOpenRun(r.id)}>${when(r.createTime)}</button><${Badge} kind=${KIND[r.status]}>${r.status}</></li>`)}</ul>
    ${openRun ? html`<${RunDetail} key=${openRun} id=${openRun} onChange=${runs.reload} />` : null}
  </section>`;
}

/** A read-only layered drawing of the graph: columns by distance from the start node. */
export function Graph({ graph, bad = new Set() }) {
  const nodes = graph.nodes.filter((n) => n && typeof n.id === "string");
  const edges = (Array.isArray(graph.edges) ? graph.edges : []).filter((e) => e && nodes.some((n) => n.id === e.from) && nodes.some((n) => n.id === e.to));
  const level = {};
  const start = nodes.find((n) => n.type === "start") || nodes[0];
  const queue = start ? [start.id] : [];
  if (start) level[start.id] = 0;
  while (queue.length) {
    const cur = queue.shift();
    for (const e of edges) {
      if (e.from === cur && level[e.to] === undefined) { level[e.to] = level[cur] + 1; queue.push(e.to); }
    }
  }
  let maxLevel = Math.max(0, ...Object.values(level));
  for (const n of nodes) if (level[n.id] === undefined) level[n.id] = ++maxLevel;
  const columns = {};
  for (const n of nodes) (columns[level[n.id]] ||= []).push(n);
  const W = 130; const H = 44; const GX = 50; const GY = 24;
  const pos = {};
  for (const [col, list] of Object.entries(columns)) list.forEach((n, i) => { pos[n.id] = { x: 10 + col * (W + GX), y: 10 + i * (H + GY) }; });
  const width = 20 + (maxLevel + 1) * (W + GX);
  const height = 20 + Math.max(...Object.values(columns).map((l) => l.length)) * (H + GY);
  return html`<div class="graph"><svg role="img" aria-label="Workflow graph" width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`}>
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="edge-head" /></marker></defs>
    ${edges.map((e, i) => {
      const a = pos[e.from]; const b = pos[e.to];
      const back = level[e.to] <= level[e.from];
      const x1 = a.x + W; const y1 = a.y + H / 2; const x2 = b.x; const y2 = b.y + H / 2;
      const d = back ? `M${a.x + W / 2},${a.y + H} C${a.x + W / 2},${a.y + H + 40} ${b.x + W / 2},${b.y + H + 40} ${b.x + W / 2},${b.y + H}`
        : `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}`;
      return html`<g key=${i}><path class=${back ? "edge back" : "edge"} d=${d} marker-end="url(#arrow)" />
        ${e.condition ? html`<text x=${(x1 + x2) / 2} y=${(y1 + y2) / 2 - 4} text-anchor="middle" class="edge-label">${e.condition}</text>` : null}</g>`;
    })}
    ${nodes.map((n) => html`<g key=${n.id} class=${bad.has(n.id) ? "node bad" : "node"} data-node=${n.id}>
      <rect x=${pos[n.id].x} y=${pos[n.id].y} width=${W} height=${H} rx="8" />
      <text x=${pos[n.id].x + W / 2} y=${pos[n.id].y + 18} text-anchor="middle">${n.id.slice(0, 18)}</text>
      <text x=${pos[n.id].x + W / 2} y=${pos[n.id].y + 34} text-anchor="middle" class="node-type">${n.type}</text></g>`)}
  </svg></div>`;
}

function RunDetail({ id, onChange }) {
  const r = useLoad(() => get(`/workflows/runs/${seg(id)}`), [id], { toastErrors: true });
  const [busy, run] = useAction();
  const data = r.data;
  useEffect(() => {
    if (!data || data.status !== "running") return undefined;
    const t = setTimeout(() => { r.reload(); onChange(); }, 600);
    return () => clearTimeout(t);
  }, [data]);
  if (!data) return null;
  const resume = (outcome) => run(() => post(`/workflows/runs/${seg(id)}/resume`, { pauseToken: data.pauseToken, outcome }), `Resumed: ${outcome}`)
    .then(() => { r.reload(); onChange(); });
  return html`<div class="wf-run" aria-label="Workflow run">
    <p><${Badge} kind=${KIND[data.status]}>${data.status}</> ${data.error ? html`<span class="error">${data.error}</span>` : null}
      ${data.output != null ? html`<span>Output: <code>${typeof data.output === "string" ? data.output : JSON.stringify(data.output)}</code></span>` : null}</p>
    ${data.status === "paused" ? html`<div class="row"><span class="grow">Waiting at <code>${data.pausedNodeId}</code>${data.pauseReason ? `: ${data.pauseReason}` : ""}</span>
      <button class="btn btn-primary btn-small" disabled=${busy} onClick=${() => resume("approved")}>Approve</button>
      <button class="btn btn-small" disabled=${busy} onClick=${() => resume("rejected")}>Reject</button></div>` : null}
    <ol class="list wf-steps">${(data.steps || []).map((s) => html`<li key=${s.id} data-node=${s.nodeId}>
      <span class="item-main"><span class="item-title">${s.seq}. ${s.nodeId} <small class="muted">${s.nodeType}</small></span>
        ${s.error ? html`<small class="error">${s.error}</small>` : s.output != null ? html`<small class="muted">${typeof s.output === "string" ? s.output : JSON.stringify(s.output)}</small>` : null}</span>
      <span class="row">${s.outcome ? html`<small>${s.outcome}</small>` : null}<${Badge} kind=${KIND[s.status]}>${s.status}</>
        ${s.conversationId ? html`<a class="btn btn-small" href=${`#/chat/${encodeURIComponent(s.conversationId)}`}>Conversation</a>` : null}</span></li>`)}</ol>
  </div>`;
}

export function TeamsTab({ selected }) {
  const teams = useLoad(() => get("/teams"), [], { toastErrors: true });
  const agents = useLoad(() => get("/agents"), [], { toastErrors: true });
  const [busy, run] = useAction();
  const create = (e) => {
    e.preventDefault();
    const el = e.currentTarget.elements;
    const members = Array.from(el.members.selectedOptions, (o) => o.value);
    run(() => post("/teams", { name: el.name.value, description: el.description.value, leadAgentId: el.lead.value, memberAgentIds: members }), "Team created")
      .then((t) => { if (t) { e.target.reset(); teams.reload(); location.hash = `#/automation/teams/${t.id}`; } });
  };
  const agentList = agents.data || [];
  return html`<div class="split">
    <div class="stack">
      <form class="panel" aria-label="New team" onSubmit=${create}>
        <h3>New team</h3>
        <${Field} label="Name"><input name="name" required /></>
        <${Field} label="Description"><input name="description" /></>
        <${Field} label="Lead agent"><select name="lead" required>${agentList.map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select></>
        <${Field} label="Members"><select name="members" multiple size="4">${agentList.map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select></>
        <button class="btn btn-primary" disabled=${busy || !agentList.length}>Create team</button>
      </form>
      <section class="panel" aria-label="Teams">
        ${rows(teams.data).length ? html`<ul class="list team-list">${rows(teams.data).map((t) => html`<li key=${t.id} class=${t.id === selected ? "selected" : ""}>
          <span class="item-main"><a class="item-title" href=${`#/automation/teams/${t.id}`}>${t.name}</a><small class="muted">${t.memberAgentIds.length} members</small></span></li>`)}</ul>`
          : html`<${Empty}>${teams.loading ? "Loading…" : "No teams yet."}</>`}
      </section>
    </div>
    ${selected ? html`<${TeamDetail} key=${selected} id=${selected} agents=${agentList} />` : html`<section class="panel"><p class="muted">Pick a team to start a run and watch its tasks.</p></section>`}
  </div>`;
}

function TeamDetail({ id, agents }) {
  const team = useLoad(() => get(`/teams/${seg(id)}`), [id], { toastErrors: true });
  const runs = useLoad(() => get(`/teams/${seg(id)}/runs`), [id], { toastErrors: true });
  const [openRun, setOpenRun] = useState(null);
  const [busy, run] = useAction();
  const list = rows(runs.data);
  const current = list.find((r) => r.id === openRun) || list[0];
  useEffect(() => {
    if (!list.some((r) => r.active)) return undefined;
    const t = setTimeout(() => runs.reload(), 700);
    return () => clearTimeout(t);
  }, [runs.data]);
  const t = team.data;
  if (!t) return html`<section class="panel"><p class="muted">${team.loading ? "Loading…" : "Not found."}</p></section>`;
  const name = (aid) => agents.find((a) => String(a.id) === String(aid))?.name || aid;
  const start = (e) => {
    e.preventDefault();
    const goal = e.currentTarget.elements.goal.value;
    run(() => post(`/teams/${seg(id)}/runs`, { goal }), "Team run started").then((r) => { if (r) { e.target.reset(); setOpenRun(r.id); runs.reload(); } });
  };
  return html`<section class="panel team-detail" aria-label=${`Team ${t.name}`}>
    <h2>${t.name}</h2>
    <p class="muted">Lead ${name(t.leadAgentId)} · members ${t.memberAgentIds.map(name).join(", ") || "none"}</p>
    <form class="row" onSubmit=${start}><input class="grow" name="goal" required aria-label="Goal for the team" placeholder="What should the team do?" />
      <button class="btn btn-primary" disabled=${busy}>Start run</button></form>
    <ul class="list">${list.map((r) => html`<li key=${r.id} class=${current && r.id === current.id ? "selected" : ""}>
      <button class="link" onClick=${() => setOpenRun(r.id)}>${r.goal.slice(0, 80)}</button><${Badge} kind=${KIND[r.status]}>${r.status}</></li>`)}</ul>
    ${current ? html`<div class="team-run"><h3>Tasks</h3>
      ${current.tasks.length ? html`<ol class="list team-tasks">${current.tasks.map((k) => html`<li key=${k.index} data-status=${k.status}>
        <span class="item-main"><span class="item-title">${k.agentName}</span><small>${k.task}</small>${k.result ? html`<small class="muted">${k.result}</small>` : null}${k.error ? html`<small class="error">${k.error}</small>` : null}</span>
        <${Badge} kind=${KIND[k.status]}>${k.status}</></li>`)}</ol>` : html`<${Empty}>The lead is planning…</>`}
      ${current.result ? html`<h3>Result</h3><p>${current.result}</p>` : null}
      ${current.error ? html`<p class="error">${current.error}</p>` : null}
      ${current.active ? html`<button class="btn btn-small btn-danger" onClick=${() => run(() => post(`/team-runs/${seg(current.id)}/cancel`, {}), "Cancelled").then(runs.reload)}>Cancel run</button>` : null}
    </div>` : null}
  </section>`;
}
