// Goals: a conversation's goal (set, pause, resume, complete, abandon, criteria) and its timeline of
// evaluations and state changes.
import { get, patch, post, seg } from "../../api.js";
import { html, useState } from "../../ui.js";
import {
  Badge, Empty, Field, Head, confirmDialog, page, rows, useAction, useLoad, when,
} from "../../components/index.js";

const STATUS_KIND = { active: "ok", paused: "warn", completed: "ok", abandoned: "bad", exhausted: "bad" };

function GoalsPage({ args }) {
  const [status, setStatus] = useState("");
  const goals = useLoad(() => get("/goals", { status }), [status], { toastErrors: true });
  const list = goals.data || [];
  const selected = args[0];
  return html`
    <${Head} title="Goals" />
    <div class="split">
      <div class="stack">
        <${NewGoal} onCreated=${(g) => { goals.reload(); location.hash = `#/goals/${g.id}`; }} />
        <section class="panel" aria-label="Goal list">
          <div class="row"><h3 class="grow">Goals</h3>
            <select aria-label="Status" value=${status} onChange=${(e) => setStatus(e.currentTarget.value)}>
              <option value="">All</option>${Object.keys(STATUS_KIND).map((s) => html`<option value=${s}>${s}</option>`)}</select></div>
          ${list.length ? html`<ul class="list goal-list">${list.map((g) => html`<li key=${g.id} class=${g.id === selected ? "selected" : ""}>
            <span class="item-main"><a class="item-title" href=${`#/goals/${g.id}`}>${g.title}</a><small class="muted">${g.conversationId}</small></span>
            <${Badge} kind=${STATUS_KIND[g.status]}>${g.status}</></li>`)}</ul>`
            : html`<${Empty}>${goals.loading ? "Loading…" : "No goals yet."}</>`}
        </section>
      </div>
      ${selected ? html`<${GoalDetail} key=${selected} id=${selected} onChange=${goals.reload} />`
        : html`<section class="panel"><p class="muted">A goal keeps an agent working toward an outcome across turns of one conversation. Pick one to follow its evaluations.</p></section>`}
    </div>`;
}

function NewGoal({ onCreated }) {
  const convs = useLoad(() => get("/conversations"), [], { toastErrors: true });
  const [busy, run] = useAction();
  const list = rows(convs.data).filter((c) => c.agentId);
  const submit = (e) => {
    e.preventDefault();
    const el = e.currentTarget.elements;
    const conv = list.find((c) => c.conversationId === el.conversationId.value);
    const criteria = el.criteria.value.split("\n").map((c) => c.trim()).filter(Boolean);
    run(() => post("/goals", { conversationId: conv.conversationId, agentId: conv.agentId, title: el.title.value, criteria }), "Goal set")
      .then((g) => { if (g) { e.target.reset(); onCreated(g); } });
  };
  return html`<form class="panel stack" aria-label="Set a goal" onSubmit=${submit}>
    <h3>Set a goal</h3>
    <${Field} label="Conversation"><select name="conversationId" required>
      ${list.map((c) => html`<option value=${c.conversationId}>${c.title || c.conversationId} · ${c.agentName || ""}</option>`)}</select></>
    <${Field} label="Goal"><input name="title" required maxlength="500" placeholder="Ship the release notes" /></>
    <${Field} label="Criteria (one per line)"><textarea name="criteria" rows="3"></textarea></>
    <button class="btn btn-primary" disabled=${busy || !list.length}>Set goal</button>
  </form>`;
}

function GoalDetail({ id, onChange }) {
  const goal = useLoad(() => get(`/goals/${seg(id)}`), [id], { toastErrors: true });
  const events = useLoad(() => get(`/goals/${seg(id)}/events`), [id], { toastErrors: true });
  const [busy, run] = useAction();
  const g = goal.data;
  if (!g) return html`<section class="panel"><p class="muted">${goal.loading ? "Loading…" : "Goal not found."}</p></section>`;
  const reload = () => { goal.reload(); events.reload(); onChange(); };
  const act = (fn, msg) => run(fn, msg).then(reload);
  const open = g.status === "active" || g.status === "paused";
  const addCriterion = (e) => {
    e.preventDefault();
    const input = e.currentTarget.elements.criterion;
    act(() => post(`/goals/${seg(id)}/criteria`, { criterion: input.value }), "Criterion added").then(() => { input.value = ""; });
  };
  return html`<section class="panel goal-detail" aria-label=${`Goal ${g.title}`}>
    <div class="card-head"><h2 class="grow">${g.title}</h2><${Badge} kind=${STATUS_KIND[g.status]}>${g.status}</></div>
    <p class="muted">Conversation <a href="#/chat">${g.conversationId}</a> · set ${when(g.createTime)}${g.closedAt ? ` · closed ${when(g.closedAt)}` : ""}</p>
    <div class="row">
      ${g.status === "active" ? html`<button class="btn" disabled=${busy} onClick=${() => act(() => post(`/goals/${seg(id)}/pause`), "Paused")}>Pause</button>` : null}
      ${g.status === "paused" ? html`<button class="btn" disabled=${busy} onClick=${() => act(() => post(`/goals/${seg(id)}/resume`), "Resumed")}>Resume</button>` : null}
      ${open ? html`<button class="btn btn-primary" disabled=${busy} onClick=${() => act(() => patch(`/goals/${seg(id)}`, { status: "completed" }), "Completed")}>Mark complete</button>
        <button class="btn btn-danger" disabled=${busy} onClick=${async () => { if (await confirmDialog({ title: "Abandon goal", message: `Abandon “${g.title}”?`, submit: "Abandon" })) act(() => post(`/goals/${seg(id)}/abandon`, {}), "Abandoned"); }}>Abandon</button>` : null}
    </div>
    <h3>Criteria</h3>
    ${g.criteria.length ? html`<ol class="criteria">${g.criteria.map((c) => html`<li>${c}</li>`)}</ol>` : html`<${Empty}>No criteria.</>`}
    ${g.status === "active" ? html`<form class="row" onSubmit=${addCriterion}><input class="grow" name="criterion" required aria-label="New criterion" placeholder="Add a criterion" /><button class="btn btn-small">Add</button></form>` : null}
    <h3>Timeline</h3>
    <ol class="list goal-events">${(events.data || []).map((e) => html`<li key=${e.id} data-type=${e.type}>
      <span class="item-main"><span class="item-title">${e.type.replace(/_/g, " ")}${e.toStatus && e.toStatus !== e.fromStatus ? ` → ${e.toStatus}` : ""}</span>
        ${e.detail ? html`<small class="muted">${Object.entries(e.detail).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · ")}</small>` : null}</span>
      <small class="muted">${when(e.createTime)}</small></li>`)}</ol>
  </section>`;
}

export default page(GoalsPage);
