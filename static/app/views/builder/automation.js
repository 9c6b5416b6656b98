// Automation: cron jobs (schedule preview with the next five runs in the chosen zone, run now, history with
// links to the run's conversation), triggers (event, filters, template, test), workflows and team runs.
import { del, get, post, put, seg } from "../../api.js";
import { html, useEffect, useState } from "../../ui.js";
import {
  Badge, Empty, Field, Head, Tabs, Toggle, confirmDialog, page, rows, toast, useAction, useLoad, when,
} from "../../components/index.js";
import { WorkflowsTab, TeamsTab } from "./workflows.js";

const TABS = [["cron", "Cron jobs"], ["triggers", "Triggers"], ["workflows", "Workflows"], ["teams", "Team runs"]];
const STATUS_KIND = { succeeded: "ok", completed: "ok", running: "", failed: "bad", error: "bad", cancelled: "warn", paused: "warn" };
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";

function AutomationPage({ args }) {
  const tab = TABS.some(([k]) => k === args[0]) ? args[0] : "cron";
  return html`
    <${Head} title="Automation" />
    <${Tabs} base="automation" tabs=${TABS} current=${tab} />
    ${tab === "cron" ? html`<${CronTab} selected=${args[1]} />` : null}
    ${tab === "triggers" ? html`<${TriggersTab} />` : null}
    ${tab === "workflows" ? html`<${WorkflowsTab} selected=${args[1]} />` : null}
    ${tab === "teams" ? html`<${TeamsTab} selected=${args[1]} />` : null}`;
}

/** The schedule in words and its next five runs, from the server's own parser, as the user types. */
export function SchedulePreview({ expression, zone }) {
  const [state, setState] = useState(null);
  useEffect(() => {
    if (!expression.trim()) { setState(null); return undefined; }
    let live = true;
    const t = setTimeout(async () => {
      try {
        const data = await get("/cron-jobs/preview", { cronExpression: expression, timezone: zone || undefined, count: 5 });
        if (live) setState({ data });
      } catch (err) {
        if (live) setState({ error: err.message });
      }
    }, 250);
    return () => { live = false; clearTimeout(t); };
  }, [expression, zone]);
  if (!state) return null;
  if (state.error) return html`<p class="form-error schedule-preview" role="status">${state.error}</p>`;
  return html`<div class="schedule-preview" role="status">
    <strong>${state.data.description}</strong> <small class="muted">(${state.data.timezone})</small>
    <ol class="runs-preview">${state.data.nextRuns.map((r) => html`<li>${when(r, state.data.timezone)}</li>`)}</ol>
  </div>`;
}

function CronTab({ selected }) {
  const jobs = useLoad(() => get("/cron-jobs"), [], { toastErrors: true });
  const agents = useLoad(() => get("/agents"), [], { toastErrors: true });
  const [expr, setExpr] = useState("0 9 * * 1-5");
  const [zone, setZone] = useState(ZONE);
  const [busy, run] = useAction();
  const [, act] = useAction();
  const create = (e) => {
    e.preventDefault();
    const el = e.currentTarget.elements;
    run(() => post("/cron-jobs", { name: el.name.value, agentId: el.agentId.value, cronExpression: expr, timezone: zone, message: el.message.value }), "Cron job created")
      .then((j) => { if (j) { e.target.reset(); jobs.reload(); location.hash = `#/automation/cron/${j.id}`; } });
  };
  const list = jobs.data || [];
  return html`<div class="split">
    <div class="stack">
      <form class="panel cron-form" aria-label="New cron job" onSubmit=${create}>
        <h3>New cron job</h3>
        <${Field} label="Name"><input name="name" required maxlength="100" /></>
        <${Field} label="Agent"><select name="agentId" required>${(agents.data || []).map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select></>
        <${Field} label="Schedule (cron: minute hour day month weekday)"><input name="cron" required value=${expr} onInput=${(e) => setExpr(e.currentTarget.value)} /></>
        <${Field} label="Time zone"><input name="timezone" value=${zone} list="zones" onInput=${(e) => setZone(e.currentTarget.value)} /></>
        <datalist id="zones">${(Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : [ZONE]).map((z) => html`<option value=${z} />`)}</datalist>
        <${SchedulePreview} expression=${expr} zone=${zone} />
        <${Field} label="Message to the agent"><textarea name="message" rows="3" required></textarea></>
        <button class="btn btn-primary" disabled=${busy}>Create</button>
      </form>
      <section class="panel" aria-label="Cron jobs">
        ${list.length ? html`<ul class="list cron-list">${list.map((j) => html`<li key=${j.id} data-job=${j.name} class=${j.id === selected ? "selected" : ""}>
          <span class="item-main"><a class="item-title" href=${`#/automation/cron/${j.id}`}>${j.name}</a>
            <small class="muted"><code>${j.cronExpression}</code> ${j.timezone} · ${j.agentName || ""} · next ${when(j.nextFireTime, j.timezone)}</small></span>
          <${Toggle} label=${`Enable ${j.name}`} checked=${j.enabled} onChange=${(v) => act(() => put(`/cron-jobs/${seg(j.id)}/toggle`, { enabled: v })).then(jobs.reload)} /></li>`)}</ul>`
          : html`<${Empty}>${jobs.loading ? "Loading…" : "No cron jobs yet."}</>`}
      </section>
    </div>
    ${selected ? html`<${CronDetail} key=${selected} id=${selected} onChange=${jobs.reload} />`
      : html`<section class="panel"><p class="muted">Pick a job to run it now and see its history.</p></section>`}
  </div>`;
}

function CronDetail({ id, onChange }) {
  const job = useLoad(() => get(`/cron-jobs/${seg(id)}`), [id], { toastErrors: true });
  const history = useLoad(() => get(`/dashboard/cron-runs/${seg(id)}`, { size: 20 }), [id], { toastErrors: true });
  const [busy, run] = useAction();
  const list = rows(history.data);
  useEffect(() => {
    if (!list.some((r) => r.status === "running")) return undefined;
    const t = setTimeout(() => history.reload(), 600);
    return () => clearTimeout(t);
  }, [history.data]);
  const j = job.data;
  if (!j) return html`<section class="panel"><p class="muted">${job.loading ? "Loading…" : "Not found."}</p></section>`;
  const remove = async () => {
    if (!(await confirmDialog({ title: "Delete cron job", message: `Delete “${j.name}” and its run history?` }))) return;
    if (await run(() => del(`/cron-jobs/${seg(id)}`), "Deleted") !== undefined) { location.hash = "#/automation/cron"; onChange(); }
  };
  return html`<section class="panel cron-detail" aria-label=${`Cron job ${j.name}`}>
    <div class="card-head"><h2 class="grow">${j.name}</h2><${Badge} kind=${j.enabled ? "ok" : ""}>${j.enabled ? "enabled" : "disabled"}</></div>
    <dl class="kv"><dt>Agent</dt><dd>${j.agentName}</dd><dt>Message</dt><dd>${j.message}</dd>
      <dt>Next run</dt><dd>${when(j.nextFireTime, j.timezone)}</dd><dt>Owner</dt><dd>${j.ownerUsername}</dd></dl>
    <${SchedulePreview} expression=${j.cronExpression} zone=${j.timezone} />
    <div class="row"><button class="btn btn-primary" disabled=${busy} onClick=${() => run(() => post(`/cron-jobs/${seg(id)}/run`), "Started").then(history.reload)}>Run now</button>
      <button class="btn btn-danger" onClick=${remove}>Delete</button></div>
    <h3>History</h3>
    ${list.length ? html`<ul class="list run-list">${list.map((r) => html`<li key=${r.id} data-status=${r.status}>
      <span class="item-main"><span class="item-title">${when(r.startTime || r.scheduledTime, j.timezone)}</span>
        <small class="muted">${r.cause}${r.durationMs != null ? ` · ${r.durationMs} ms` : ""}${r.error ? ` · ${r.error}` : ""}</small></span>
      <span class="row"><${Badge} kind=${STATUS_KIND[r.status] || ""}>${r.status}</>
        ${r.conversationId ? html`<a class="btn btn-small" href=${`#/chat/${encodeURIComponent(r.conversationId)}`}>Open conversation</a>` : null}</span></li>`)}</ul>`
      : html`<${Empty}>No runs yet.</>`}
  </section>`;
}

function filterText(filter) {
  return filter ? Object.entries(filter).map(([k, v]) => `${k}=${v}`).join("\n") : "";
}
function parseFilter(text) {
  const out = {};
  for (const line of text.split("\n")) {
    const i = line.indexOf("=");
    if (i <= 0) continue;
    const raw = line.slice(i + 1).trim();
    let value = raw;
    if (raw === "true" || raw === "false") value = raw === "true";
    else if (raw !== "" && !Number.isNaN(Number(raw))) value = Number(raw);
    out[line.slice(0, i).trim()] = value;
  }
  return Object.keys(out).length ? out : null;
}

function TriggersTab() {
  const list = useLoad(() => get("/triggers"), [], { toastErrors: true });
  const agents = useLoad(() => get("/agents"), [], { toastErrors: true });
  const [type, setType] = useState("event");
  const [expr, setExpr] = useState("0 * * * *");
  const [zone, setZone] = useState(ZONE);
  const [results, setResults] = useState({});
  const [busy, run] = useAction();
  const create = (e) => {
    e.preventDefault();
    const el = e.currentTarget.elements;
    const body = { name: el.name.value, agentId: el.agentId.value, type, message: el.message.value };
    if (type === "event") Object.assign(body, { eventType: el.eventType.value, filter: parseFilter(el.filter.value) });
    else Object.assign(body, { cronExpression: expr, timezone: zone });
    run(() => post("/triggers", body), "Trigger created").then((t) => { if (t) { e.target.reset(); list.reload(); } });
  };
  const test = (t, e) => {
    e.preventDefault();
    let payload;
    try { payload = JSON.parse(e.currentTarget.elements.payload.value || "{}"); } catch (err) { toast(`Payload: ${err.message}`, "error"); return; }
    run(() => post("/triggers/events", { type: t.eventType, source: "console-test", payload }))
      .then((r) => { if (r) { setResults({ ...results, [t.id]: r.find((x) => x.triggerId === t.id) || { fired: false, reason: "not matched" } }); } });
  };
  return html`<div class="split">
    <form class="panel" aria-label="New trigger" onSubmit=${create}>
      <h3>New trigger</h3>
      <${Field} label="Name"><input name="name" required /></>
      <${Field} label="Agent"><select name="agentId">${(agents.data || []).map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select></>
      <${Field} label="Kind"><select name="type" value=${type} onChange=${(e) => setType(e.currentTarget.value)}>
        <option value="event">On an event</option><option value="cron">On a schedule</option></select></>
      ${type === "event" ? html`
        <${Field} label="Event type"><input name="eventType" required placeholder="order.created" /></>
        <${Field} label="Filters (path=value per line)" hint="Paths into the event's payload; every line must match, e.g. customer.tier=gold"><textarea name="filter" rows="2"></textarea></>`
      : html`<${Field} label="Schedule (cron)"><input name="cron" value=${expr} onInput=${(e) => setExpr(e.currentTarget.value)} /></>
        <${Field} label="Time zone"><input name="timezone" value=${zone} onInput=${(e) => setZone(e.currentTarget.value)} /></>
        <${SchedulePreview} expression=${expr} zone=${zone} />`}
      <${Field} label="Message template" hint="{{event.path}} is filled from the payload, {{envelope.type}} and {{envelope.source}} from the event"><textarea name="message" rows="3" required></textarea></>
      <button class="btn btn-primary" disabled=${busy}>Create trigger</button>
    </form>
    <section class="panel" aria-label="Triggers">
      ${(list.data || []).length ? html`<ul class="list trigger-list">${list.data.map((t) => html`<li key=${t.id} data-trigger=${t.name}>
        <span class="item-main"><span class="item-title">${t.name}</span>
          <small class="muted">${t.type === "event" ? html`on <code>${t.eventType}</code>${t.filter ? ` where ${filterText(t.filter).replace(/\n/g, ", ")}` : ""}` : html`<code>${t.cronExpression}</code> ${t.timezone}`} · ${t.agentName || ""}</small>
          <small>${t.message}</small>
          ${t.type === "event" ? html`<form class="row trigger-test" onSubmit=${(e) => test(t, e)}>
            <input class="grow" name="payload" aria-label=${`Test payload for ${t.name}`} placeholder='{"total": 42}' />
            <button class="btn btn-small" disabled=${busy}>Test</button></form>` : null}
          ${results[t.id] ? html`<small class="test-result">${results[t.id].fired ? `Fired: run ${results[t.id].runId}` : `Not fired: ${results[t.id].reason}`}</small>` : null}</span>
        <span class="row"><${Toggle} label=${`Enable ${t.name}`} checked=${t.enabled} onChange=${(v) => run(() => put(`/triggers/${seg(t.id)}`, { enabled: v })).then(list.reload)} />
          <button class="btn btn-small btn-danger" aria-label=${`Delete ${t.name}`} onClick=${async () => { if (await confirmDialog({ title: "Delete trigger", message: `Delete ${t.name}?` })) run(() => del(`/triggers/${seg(t.id)}`), "Deleted").then(list.reload); }}>Delete</button></span></li>`)}</ul>`
        : html`<${Empty}>${list.loading ? "Loading…" : "No triggers yet."}</>`}
    </section>
  </div>`;
}

export default page(AutomationPage);
