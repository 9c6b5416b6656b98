// Usage: tokens over time and by model, agent, user, provider (and source, when the server reports
// sources), as a chart with a table beside it; the table downloads as CSV.
import { get, seg } from "../api.js";
import { html, useState } from "../ui.js";
import { Chart, Field, PageFrame, Panel, Table, useLoad, useSession } from "../components/index.js";

const RANGES = [[7, "Last 7 days"], [30, "Last 30 days"], [90, "Last 90 days"]];
const GROUPS = [["model", "Model"], ["agent", "Agent"], ["user", "User"], ["provider", "Provider"], ["source", "Source"]];
const KEY = { model: "model", agent: "agentId", user: "userId", provider: "provider", source: "source" };
const num = (n) => (n ?? 0).toLocaleString();

function startOf(days) {
  const d = new Date();
  d.setUTCHours(0, 0, 0, 0);
  d.setUTCDate(d.getUTCDate() - (days - 1));
  return d;
}

function csvCell(value) {
  const text = value === null || value === undefined ? "" : String(value);
  return /[",\n\r]/.test(text) || /^[=+\-@]/.test(text) ? `"${text.replace(/"/g, '""').replace(/^([=+\-@])/, "'$1")}"` : text;
}

/** Download rows as a CSV file (the spreadsheet-formula prefixes are neutralised). */
function downloadCsv(name, header, rows) {
  const text = [header, ...rows].map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n";
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const a = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export default function Usage() {
  const session = useSession();
  const [days, setDays] = useState(30);
  const [group, setGroup] = useState("model");
  const state = useLoad(async () => {
    const since = startOf(days);
    const startTime = since.toISOString();
    const [perDay, grouped, agents, members] = await Promise.all([
      get("/token-usage", { groupBy: "day", startTime }),
      group === "source" ? Promise.resolve(null) : get("/token-usage", { groupBy: group, startTime }),
      get("/agents").catch(() => []),
      get(`/workspaces/${seg(session.workspace)}/members`).catch(() => []),
    ]);
    const byDay = Object.fromEntries(perDay.items.map((i) => [i.date, i]));
    const dates = Array.from({ length: days }, (_, i) => new Date(since.getTime() + i * 86400000).toISOString().slice(0, 10));
    const rows = group === "source" ? (perDay.bySource || []) : grouped.items;
    return { dates, byDay, rows, total: perDay.total, hasSources: Array.isArray(perDay.bySource), agents, members };
  }, [days, group, session.workspace]);

  const label = (d, row) => {
    const key = row[KEY[group]];
    if (key === null || key === undefined || key === "") return "(none)";
    if (group === "agent") return d.agents.find((a) => a.id === key)?.name || `agent ${key}`;
    if (group === "user") return d.members.find((m) => m.userId === key)?.username || `user ${key}`;
    return key;
  };

  return html`<${PageFrame} title="Usage" subtitle="Tokens spent by this workspace's model calls" wide state=${state}
      actions=${html`<${Field} label="Period">
        <select value=${days} onChange=${(e) => setDays(Number(e.currentTarget.value))}>
          ${RANGES.map(([n, text]) => html`<option value=${n}>${text}</option>`)}
        </select><//>`}>
    ${(d) => {
      const groups = GROUPS.filter(([id]) => id !== "source" || d.hasSources);
      const total = d.total.totalTokens || 0;
      const rows = d.rows.map((r) => ({ ...r, name: label(d, r) }));
      const csv = () => downloadCsv(`usage-by-${group}-${days}d.csv`,
        [groups.find(([id]) => id === group)[1], "calls", "promptTokens", "completionTokens", "totalTokens"],
        rows.map((r) => [r.name, r.calls ?? r.messages, r.promptTokens, r.completionTokens, r.totalTokens]));
      return html`
        <div class="stat-grid">
          <div class="stat" data-stat="Total tokens"><div class="label">Total tokens</div><div class="value">${num(total)}</div></div>
          <div class="stat"><div class="label">Prompt</div><div class="value">${num(d.total.promptTokens)}</div></div>
          <div class="stat"><div class="label">Completion</div><div class="value">${num(d.total.completionTokens)}</div></div>
          <div class="stat"><div class="label">Model calls</div><div class="value">${num(d.total.calls ?? d.total.messages)}</div></div>
        </div>
        <div class="two-col">
          <${Panel} title="Tokens per day">
            <${Chart} label=${`Tokens per day (UTC), ${RANGES.find(([n]) => n === days)[1].toLowerCase()}`}
              x=${d.dates.map((day) => Date.parse(day + "T00:00:00Z") / 1000)}
              series=${[
                { label: "Prompt", values: d.dates.map((day) => d.byDay[day]?.promptTokens || 0) },
                { label: "Completion", values: d.dates.map((day) => d.byDay[day]?.completionTokens || 0) },
              ]} />
          <//>
          <${Panel} title="Breakdown" id="usage-groups" actions=${html`<button type="button" class="btn btn-small" onClick=${csv}
              disabled=${!rows.length}>Download CSV</button>`}>
            <div class="tabs" role="tablist" aria-label="Group usage by">
              ${groups.map(([id, text]) => html`<button type="button" role="tab" aria-selected=${id === group ? "true" : "false"}
                class=${id === group ? "tab active" : "tab"} onClick=${() => setGroup(id)}>${text}</button>`)}
            </div>
            <${Table} label=${`Usage by ${group}`} rows=${rows} rowKey=${(r) => r.name} empty="No model calls in this period."
              columns=${[
                { key: "name", label: groups.find(([id]) => id === group)[1] },
                { key: "calls", label: "Calls", class: "num", render: (r) => num(r.calls ?? r.messages) },
                { key: "totalTokens", label: "Tokens", class: "num", render: (r) => num(r.totalTokens) },
                { key: "share", label: "Share", render: (r) => {
                  const pct = total ? Math.round((r.totalTokens / total) * 100) : 0;
                  return html`<span class="share"><span class="share-bar" style=${{ width: `${pct}%` }}></span></span> ${pct}%`;
                } },
              ]} />
          <//>
        </div>`;
    }}
  <//>`;
}
