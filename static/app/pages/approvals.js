// Approvals inbox: the caller's pending tool calls across conversations and cron runs, and workflow runs
// paused at an approval step; Approve / Deny / Always allow (a grant), refreshed every few seconds.
import { apiHeaders, get, post, seg, takeRenewal } from "../api.js";
import { readSse } from "../sse.js";
import { notificationsChanged } from "../shell.js";
import { html, render, useState } from "../ui.js";
import { Dialog, PageFrame, Panel, confirmDialog, toast, toastError, useLoad, usePoll, useSession, useSourceName, when } from "../components/index.js";

const POLL_MS = 4_000;

function pretty(args) {
  try { return JSON.stringify(JSON.parse(args), null, 2); } catch { return String(args ?? ""); }
}

/**
 * Send `/approve` or `/deny` to the conversation as its owner; the server resumes the turn in this stream.
 * Resolves to the `done` data when the answer has finished.
 */
async function decide(item, command, onResolved) {
  const response = await fetch("/api/v1/chat/stream", {
    method: "POST",
    headers: apiHeaders({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify({ agentId: item.agentId, conversationId: item.conversationId, message: command }),
  });
  takeRenewal(response);
  if (!response.ok || !response.body) {
    let msg = `HTTP ${response.status}`;
    try { msg = (await response.json()).msg || msg; } catch { /* not JSON */ }
    throw new Error(msg);
  }
  let done = null;
  for await (const frame of readSse(response)) {
    if (frame.event === "tool_approval_resolved") onResolved(frame.data);
    if (frame.event === "error" && !done) throw new Error(frame.data?.message || "The answer failed");
    if (frame.event === "done") done = frame.data || {};
  }
  return done || {};
}

const DAY_MS = 24 * 3600 * 1000;

/** The grants "Always allow" can create for `item`, narrowest first, each spelled out: who, which tool, where, until when. */
function grantChoices(item, session) {
  const me = session.user?.nickname || session.user?.username || "you";
  const ws = (session.workspaces || []).find((w) => String(w.id) === String(session.workspace));
  const where = `every agent and conversation of workspace “${ws?.name || session.workspace}”`;
  const tool = `${item.toolName}, up to ${item.maxSeverity} severity`;
  const base = { toolName: item.toolName, maxSeverity: item.maxSeverity, note: "Always allowed from the approvals inbox" };
  const conv = item.conversationTitle || item.conversationId;
  return [
    { key: "conversation", label: `In the conversation “${conv}” only, while it exists`,
      scope: `Who: ${me} · Tool: ${tool} · Where: the conversation “${conv}” · Until: the conversation is deleted`,
      body: { ...base, scopeType: "CONVERSATION", scopeId: item.conversationId, grantKind: "UNTIL_CONVERSATION_END" } },
    { key: "day", label: "For me, everywhere in this workspace, for 24 hours",
      scope: `Who: ${me} · Tool: ${tool} · Where: ${where} · Until: ${new Date(Date.now() + DAY_MS).toLocaleString()}`,
      body: () => ({ ...base, scopeType: "USER", scopeId: String(session.user?.id), grantKind: "UNTIL_TIMESTAMP", expireAt: new Date(Date.now() + DAY_MS).toISOString() }) },
    { key: "always", label: "For me, everywhere in this workspace, until I revoke it",
      scope: `Who: ${me} · Tool: ${tool} · Where: ${where} · Until: revoked on the Security page`,
      body: { ...base, scopeType: "USER", scopeId: String(session.user?.id), grantKind: "ALWAYS" } },
  ];
}

/** Ask which grant "Always allow" creates, its scope spelled out before it exists; resolves to its body or null. */
function alwaysAllowDialog(item, session) {
  const choices = grantChoices(item, session);
  return new Promise((resolve) => {
    const host = document.createElement("div");
    document.body.append(host);
    const done = (value) => { render(null, host); host.remove(); resolve(value); };
    const Body = () => {
      const [pick, setPick] = useState(choices[0].key);
      const chosen = choices.find((c) => c.key === pick);
      return html`<${Dialog} title=${`Always allow ${item.toolName}?`} onClose=${() => done(null)}>
        <form method="dialog" class="stack" onSubmit=${(e) => { e.preventDefault(); done(typeof chosen.body === "function" ? chosen.body() : chosen.body); }}>
          <p>This call is approved now, and later calls of <code>${item.toolName}</code> run without asking:</p>
          <fieldset class="stack"><legend>Where and how long</legend>
            ${choices.map((c) => html`<label key=${c.key}><input type="radio" name="grant-scope" value=${c.key}
              checked=${pick === c.key} onChange=${() => setPick(c.key)} /> ${c.label}</label>`)}
          </fieldset>
          <p class="grant-scope" role="status">${chosen.scope}</p>
          <div class="actions">
            <button type="button" class="btn" onClick=${() => done(null)}>Cancel</button>
            <button type="submit" class="btn btn-primary">Allow and approve</button>
          </div>
        </form>
      <//>`;
    };
    render(html`<${Body} />`, host);
  });
}

export default function Approvals() {
  const session = useSession();
  const state = useLoad(async () => {
    const [calls, paused] = await Promise.all([
      get("/approval/pending"),
      session.can("member") && session.flag("workflows") ? get("/workflows/runs/paused") : Promise.resolve([]),
    ]);
    const mine = (paused || []).filter((r) => r.pauseToken && (r.startedBy === String(session.user?.id) || session.can("admin")));
    return { calls, runs: mine };
  }, [session.workspace, session.flag("workflows")]);
  usePoll(() => state.reload(true), POLL_MS, [state.reload]);
  const [busy, setBusy] = useState({}); // pendingId -> "approving" | "continuing" | …

  const mark = (id, value) => setBusy((b) => ({ ...b, [id]: value }));
  const act = async (item, kind) => {
    const id = item.pendingId;
    try {
      if (kind === "always") {
        const grant = await alwaysAllowDialog(item, session);
        if (!grant) return;
        await post("/approval/grants", grant);
      }
      mark(id, kind === "deny" ? "Denying…" : "Approving…");
      const done = await decide(item, kind === "deny" ? "/deny" : "/approve", (resolved) => {
        mark(id, resolved.decision === "approved" ? "Approved; the answer continues…" : "Denied; the answer continues…");
        notificationsChanged();
      });
      toast(`${item.toolName} ${kind === "deny" ? "denied" : "approved"}: the answer ${done.status === "awaiting_approval" ? "waits for another approval" : "finished"}`, "ok");
    } catch (err) { toastError(err); }
    mark(id, null);
    notificationsChanged();
    state.reload(true);
  };
  const resume = async (run, outcome) => {
    if (outcome === "rejected" && !await confirmDialog({ title: "Reject this step?", message: "The workflow run takes its rejected branch.", submit: "Reject" })) return;
    try {
      await post(`/workflows/runs/${seg(run.id)}/resume`, { outcome, pauseToken: run.pauseToken });
      toast(`Workflow run ${run.id} ${outcome}`, "ok");
    } catch (err) { toastError(err); }
    state.reload(true);
  };

  const isEmpty = (d) => !d.calls.length && !d.runs.length;
  return html`<${PageFrame} title="Approvals" subtitle="Tool calls and workflow steps waiting for your decision"
      state=${state} isEmpty=${isEmpty} empty="Nothing is waiting for you. New requests appear here by themselves.">
    ${(d) => html`
      ${d.calls.length > 0 && html`<section aria-label="Tool calls" class="stack">
        ${d.calls.map((item) => html`<${CallCard} key=${item.pendingId} item=${item} busy=${busy[item.pendingId]} onAct=${act} />`)}
      </section>`}
      ${d.runs.length > 0 && html`<h2 class="section-title">Workflow runs</h2>
        <section aria-label="Workflow runs" class="stack">
        ${d.runs.map((run) => html`<${Panel} key=${run.id} title=${`Workflow run ${run.id}`} class="approval-card">
          <p class="approval-reason">${run.pauseReason || "Waiting for approval"} <span class="muted">· step ${run.pausedNodeId || "?"}</span></p>
          <p class="muted">Started ${when(run.createTime)}${run.pauseDeadline ? ` · decide before ${when(run.pauseDeadline)}` : ""}</p>
          <div class="actions">
            <button type="button" class="btn btn-primary" onClick=${() => resume(run, "approved")}>Approve</button>
            <button type="button" class="btn btn-danger" onClick=${() => resume(run, "rejected")}>Reject</button>
          </div>
        <//>`)}
      </section>`}
    `}
  <//>`;
}

function CallCard({ item, busy, onAct }) {
  const label = item.conversationTitle || item.conversationId;
  const sourceName = useSourceName();
  return html`<article class="approval-card" aria-label=${`${item.toolName} in ${label}`} data-pending=${item.pendingId}>
    <div class="approval-head">
      <strong class="mono">${item.toolName}</strong>
      <span class=${`severity sev-${item.maxSeverity}`}>${item.maxSeverity}</span>
      <span class="muted">in <a href=${`#/chat/${encodeURIComponent(item.conversationId)}`}>${label}</a>
        ${item.source && item.source !== "web" ? ` (${sourceName(item.source)})` : ""}</span>
    </div>
    ${item.reason && html`<p class="approval-reason">${item.reason}</p>`}
    <div class="muted small">Arguments</div>
    <pre>${pretty(item.arguments)}</pre>
    <p class="muted small">Asked ${when(item.createTime)} · expires ${when(item.expiresAt)}</p>
    ${busy ? html`<p class="approval-decision" role="status">${busy}</p>` : html`<div class="actions">
      <button type="button" class="btn btn-primary" onClick=${() => onAct(item, "approve")}>Approve</button>
      <button type="button" class="btn btn-danger" onClick=${() => onAct(item, "deny")}>Deny</button>
      ${item.maxSeverity !== "critical" && html`<button type="button" class="btn" onClick=${() => onAct(item, "always")}
        title=${`Approve, and choose where and how long ${item.toolName} runs without asking`}>Always allow…</button>`}
    </div>`}
  </article>`;
}
