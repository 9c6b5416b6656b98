// Audit log: the workspace's audit events, filtered by actor, action, resource and time range, paged,
// with an event's detail in a dialog.
import { get } from "../api.js";
import { html, useState } from "../ui.js";
import { Dialog, Field, PageFrame, Pager, Table, fieldErrors, useLoad, when } from "../components/index.js";

const ACTIONS = ["", "CREATE", "UPDATE", "DELETE"];
const RESOURCES = ("AGENT APPROVAL_GRANT CHANNEL CONVERSATION CRON_JOB DATASOURCE FEATURE_FLAG GUARD_CONFIG GUARD_RULE MCP_SERVER "
  + "MODEL MODEL_PROVIDER PLUGIN SETTINGS SKILL TOKEN TRIGGER USER WIKI_KB WORKFLOW WORKSPACE WORKSPACE_MEMBER").split(" ");
const PAGE_SIZE = 20;
const EMPTY = { actor: "", action: "", resourceType: "", resourceId: "", from: "", to: "" };

/** A datetime-local value ("2026-11-24T10:00") as ISO 8601 UTC, or "" when blank. */
function isoOf(local) {
  if (!local) return "";
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? local : d.toISOString();
}

export default function Audit() {
  const [draft, setDraft] = useState(EMPTY);
  const [filters, setFilters] = useState(EMPTY);
  const [page, setPage] = useState(1);
  const [shown, setShown] = useState(null);
  const state = useLoad(() => get("/audit/events", {
    page, size: PAGE_SIZE, actor: filters.actor.trim(), action: filters.action, resourceType: filters.resourceType.trim(),
    resourceId: filters.resourceId.trim(), startTime: isoOf(filters.from), endTime: isoOf(filters.to),
  }), [page, filters]);
  const errors = state.error ? fieldErrors(state.error, ["startTime", "endTime", "page", "size"]) : {};
  const set = (k) => (e) => setDraft({ ...draft, [k]: e.currentTarget.value });
  const apply = (e) => { e.preventDefault(); setPage(1); setFilters(draft); };
  const clear = () => { setDraft(EMPTY); setFilters(EMPTY); setPage(1); };

  return html`<${PageFrame} title="Audit log" subtitle="Who changed what in this workspace" wide>
    <form class="filters" onSubmit=${apply} aria-label="Filter audit events">
      <${Field} label="Actor" hint="username or user id"><input value=${draft.actor} onInput=${set("actor")} /><//>
      <${Field} label="Action">
        <select value=${draft.action} onChange=${set("action")}>${ACTIONS.map((a) => html`<option value=${a}>${a || "any"}</option>`)}</select>
      <//>
      <${Field} label="Resource type" hint="e.g. AGENT, USER"><input list="audit-resources" value=${draft.resourceType} onInput=${set("resourceType")} /><//>
      <datalist id="audit-resources">${RESOURCES.map((r) => html`<option value=${r} />`)}</datalist>
      <${Field} label="Resource id"><input value=${draft.resourceId} onInput=${set("resourceId")} /><//>
      <${Field} label="From" error=${errors.startTime}><input type="datetime-local" value=${draft.from} onInput=${set("from")} /><//>
      <${Field} label="To" error=${errors.endTime}><input type="datetime-local" value=${draft.to} onInput=${set("to")} /><//>
      <div class="filter-actions">
        <button type="submit" class="btn btn-primary">Filter</button>
        <button type="button" class="btn" onClick=${clear}>Clear</button>
      </div>
    </form>
    ${state.error && !errors.startTime && !errors.endTime && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    ${state.loading && !state.data ? html`<p class="loading" role="status">Loading…</p>` : state.data && html`
      <${Table} label="Audit events" rows=${state.data.records}
        empty=${filters === EMPTY ? "No audit events yet." : "No event matches these filters."}
        columns=${[
          { key: "createTime", label: "Time", render: (e) => when(e.createTime) },
          { key: "actorUsername", label: "Actor", render: (e) => e.actorUsername || "system" },
          { key: "action", label: "Action" },
          { key: "resourceType", label: "Resource", render: (e) => `${e.resourceType}${e.resourceId ? ` ${e.resourceId}` : ""}` },
          { key: "detail", label: "Detail", render: (e) => html`<button type="button" class="link-btn"
              aria-label=${`Details of event ${e.id}`} onClick=${() => setShown(e)}>${e.detail || "(details)"}</button>` },
        ]} />
      <${Pager} page=${state.data.current} size=${state.data.size} total=${state.data.total} onPage=${setPage} />`}
    ${shown && html`<${Dialog} title=${`Audit event ${shown.id}`} onClose=${() => setShown(null)}>
      <dl class="detail-list">
        ${[["Time", when(shown.createTime) + ` (${shown.createTime})`], ["Actor", `${shown.actorUsername || "system"}${shown.actorUserId ? ` (user ${shown.actorUserId})` : ""}`],
          ["Action", shown.action], ["Resource type", shown.resourceType], ["Resource id", shown.resourceId || "—"],
          ["Workspace", shown.workspaceId], ["Detail", shown.detail || "—"]].map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}
      </dl>
      <div class="actions"><button type="button" class="btn" onClick=${() => setShown(null)} autofocus>Close</button></div>
    <//>`}
  <//>`;
}
