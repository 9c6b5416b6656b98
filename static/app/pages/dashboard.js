// Home: the workspace's figures (conversations, messages, tokens per day and per model, tool calls,
// failures, cron runs); for global admins the running turns (stop, recycle) and the provider pool (re-probe).
import { get, post, seg } from "../api.js";
import { html, useState } from "../ui.js";
import {
  Chart, ErrorBox, Loading, PageFrame, Panel, Table, confirmDialog, toast, toastError, useLoad, usePoll, useSession, when,
} from "../components/index.js";

const DAYS = 14;

function startOf(days) {
  const d = new Date();
  d.setUTCHours(0, 0, 0, 0);
  d.setUTCDate(d.getUTCDate() - (days - 1));
  return d.toISOString();
}

const num = (n) => (n ?? 0).toLocaleString();

export default function Dashboard() {
  const session = useSession();
  const wsAdmin = session.can("admin");
  const state = useLoad(async () => {
    const [overview, trend, byModel, summary, runs, tools] = await Promise.all([
      get("/dashboard/stats"),
      get("/dashboard/trend", { days: DAYS }),
      get("/token-usage", { groupBy: "model", startTime: startOf(DAYS) }),
      get("/notifications/summary"),
      get("/dashboard/cron-runs", { size: 5 }),
      wsAdmin ? get("/security/audit/stats", { days: 1 }) : Promise.resolve(null),
    ]);
    return { overview, trend, byModel, summary, runs, tools };
  }, [wsAdmin]);
  usePoll(() => state.reload(true), 30_000, [state.reload]);

  return html`<${PageFrame} title="Home" subtitle="This workspace at a glance" wide state=${state}
      actions=${html`<button type="button" class="btn" onClick=${() => state.reload()}>Refresh</button>`}>
    ${(d) => html`
      <${Stats} d=${d} />
      <div class="two-col">
        <${Panel} title="Tokens per day">
          <${Chart} label=${`Tokens per day, last ${DAYS} days (UTC)`} bars
            x=${d.trend.map((t) => Date.parse(t.date + "T00:00:00Z") / 1000)}
            series=${[{ label: "Tokens", values: d.trend.map((t) => t.totalTokens) }]} />
        <//>
        <${Panel} title="Messages and new conversations per day">
          <${Chart} label=${`Messages per day, last ${DAYS} days (UTC)`}
            x=${d.trend.map((t) => Date.parse(t.date + "T00:00:00Z") / 1000)}
            series=${[
              { label: "Messages", values: d.trend.map((t) => t.messages) },
              { label: "Conversations", values: d.trend.map((t) => t.conversations) },
            ]} />
        <//>
      </div>
      <div class="two-col">
        <${Panel} title="Tokens per model">
          <${Table} label="Tokens per model" empty="No model calls in this period."
            rowKey=${(r) => r.model || "-"} rows=${d.byModel.items}
            columns=${[
              { key: "model", label: "Model" },
              { key: "messages", label: "Answers", class: "num" },
              { key: "totalTokens", label: "Tokens", class: "num", render: (r) => num(r.totalTokens) },
            ]} />
        <//>
        <${Panel} title="Recent cron runs" actions=${html`<span class="muted">${d.runs.total} in all</span>`}>
          <${Table} label="Recent cron runs" empty="No cron or trigger runs yet." rows=${d.runs.records}
            columns=${[
              { key: "jobName", label: "Job" },
              { key: "status", label: "Status", render: (r) => html`<span class=${`pill ${r.status === "success" ? "ok" : r.status === "failed" ? "bad" : ""}`}>${r.status}</span>` },
              { key: "startTime", label: "Started", render: (r) => when(r.startTime) },
              { key: "conversationId", label: "Conversation", render: (r) => (r.conversationId
                ? html`<a href=${`#/chat/${encodeURIComponent(r.conversationId)}`}>Open</a>` : "—") },
            ]} />
        <//>
      </div>
    `}
  <//>
  ${session.isGlobalAdmin && html`<div class="page-inner wide admin-panels">
    <div class="two-col"><${RunningTurns} /><${ProviderPool} /></div>
  </div>`}`;
}

function Stats({ d }) {
  const o = d.overview;
  const s = d.summary;
  const items = [
    ["Conversations", num(o.conversations), `${num(o.activeConversations)} active today`],
    ["Messages", num(o.total.messages), `${num(o.today.messages)} today`],
    ["Tokens today", num(o.today.totalTokens), `${num(o.total.totalTokens)} in all`],
    ["Running turns", num(o.runningTurns), `${num(o.enabledAgents)} of ${num(o.agents)} agents enabled`],
    ["Tool calls (24 h)", d.tools ? num(d.tools.total) : "—", d.tools ? `${num(d.tools.byDecision.deny)} denied` : "admins see tool calls"],
    ["Failures (24 h)", num((s.failedToolCalls24h || 0) + (s.failedMessages24h || 0)),
      `${num(s.failedToolCalls24h)} tool calls, ${num(s.failedMessages24h)} answers`],
  ];
  return html`<div class="stat-grid" role="list">
    ${items.map(([label, value, sub]) => html`<div class="stat" role="listitem" key=${label} data-stat=${label}>
      <div class="label">${label}</div><div class="value">${value}</div><div class="label">${sub}</div>
    </div>`)}
  </div>`;
}

function RunningTurns() {
  const state = useLoad(() => get("/admin/agent-runtime/snapshot"), []);
  usePoll(() => state.reload(true), 5_000, [state.reload]);
  const running = (state.data && state.data.runs) || [];
  const act = async (turn, action) => {
    if (action === "recycle" && !await confirmDialog({
      title: "Force recycle this turn?", submit: "Recycle",
      message: "The turn is cancelled at once and its run state dropped; the partial answer is kept.",
    })) return;
    try {
      await post(`/admin/agent-runtime/runs/${seg(turn.conversationId)}/${action}`);
      toast(action === "stop" ? "Stop requested" : "Turn recycled", "ok");
    } catch (err) { toastError(err); }
    state.reload(true);
    setTimeout(() => state.reload(true), 1000); // a recycled turn leaves the list once its task has wound down
  };
  return html`<${Panel} title="Running turns" id="running-turns">
    ${state.error && html`<${ErrorBox} error=${state.error} retry=${state.reload} />`}
    ${state.loading && !state.data ? html`<${Loading} />` : html`<${Table} label="Running turns" empty="No turn is running."
      rowKey=${(t) => t.conversationId} rows=${running}
      columns=${[
        { key: "conversationId", label: "Conversation", render: (t) => html`<a href=${`#/chat/${encodeURIComponent(t.conversationId)}`}>${t.conversationId}</a>` },
        { key: "phase", label: "Phase", render: (t) => `${t.phase || t.status}${t.stopRequested ? " (stopping)" : ""}` },
        { key: "secondsSinceLastEvent", label: "Quiet for", render: (t) => `${Math.round(t.secondsSinceLastEvent)} s` },
        { key: "actions", label: "", render: (t) => html`<div class="row-actions">
          <button type="button" class="btn btn-small" onClick=${() => act(t, "stop")} aria-label=${`Stop ${t.conversationId}`}>Stop</button>
          <button type="button" class="btn btn-small btn-danger" onClick=${() => act(t, "recycle")} aria-label=${`Recycle ${t.conversationId}`}>Recycle</button>
        </div>` },
      ]} />`}
  <//>`;
}

function ProviderPool() {
  const state = useLoad(() => get("/llm/provider-pool"), []);
  const [busy, setBusy] = useState(null);
  const reprobe = async (p) => {
    setBusy(p.providerId);
    try {
      const r = await post(`/llm/provider-pool/${seg(p.providerId)}/reprobe`);
      toast(r.probe?.success ? `${p.name}: reachable` : `${p.name}: ${r.probe?.message || "probe failed"}`, r.probe?.success ? "ok" : "error");
    } catch (err) { toastError(err); }
    setBusy(null);
    state.reload(true);
  };
  const rows = (state.data || []).filter((p) => p.enabled);
  return html`<${Panel} title="Provider pool" id="provider-pool">
    ${state.error && html`<${ErrorBox} error=${state.error} retry=${state.reload} />`}
    ${state.loading && !state.data ? html`<${Loading} />` : html`<${Table} label="Provider pool" empty="No provider is enabled."
      rowKey=${(p) => p.providerId} rows=${rows}
      columns=${[
        { key: "name", label: "Provider" },
        { key: "state", label: "State", render: (p) => html`<span class=${`pill ${p.state === "healthy" ? "ok" : p.state === "cooldown" ? "bad" : "warn"}`}>${p.state}</span>` },
        { key: "cooldown", label: "Cooldown", render: (p) => (p.cooldownRemainingSeconds ? `${p.cooldownRemainingSeconds} s left` : "—") },
        { key: "lastError", label: "Last error", render: (p) => p.lastError || "—" },
        { key: "actions", label: "", render: (p) => html`<button type="button" class="btn btn-small" disabled=${busy === p.providerId}
            onClick=${() => reprobe(p)} aria-label=${`Re-probe ${p.name}`}>${busy === p.providerId ? "Probing…" : "Re-probe"}</button>` },
      ]} />`}
  <//>`;
}
