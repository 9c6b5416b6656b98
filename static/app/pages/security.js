// Security: guard rules (create, edit, enable, export, import with a preview), the guard and file-guard
// configs, approval grants (revoke), and the security events (activity feed, approvals, tool calls), filterable.
import { del, get, post, put, seg } from "../api.js";
import { html, useState } from "../ui.js";
import {
  Check, Dialog, Field, PageFrame, Pager, Panel, Table, confirmDialog, fieldErrors, toast, toastError, useLoad, useSession, when,
} from "../components/index.js";

const SEVERITIES = ["low", "medium", "high", "critical"];
const DECISIONS = ["allow", "ask", "deny"];
const TABS = [["rules", "Rules"], ["config", "Configuration"], ["grants", "Grants"], ["events", "Events"]];

export default function Security({ args }) {
  const tab = TABS.some(([id]) => id === args[0]) ? args[0] : "rules";
  return html`<${PageFrame} title="Security" subtitle="What tools may do, who allowed what, and what happened" wide>
    <div class="tabs" role="tablist" aria-label="Security sections">
      ${TABS.map(([id, label]) => html`<a role="tab" href=${`#/security/${id}`} aria-selected=${id === tab ? "true" : "false"}
        class=${id === tab ? "tab active" : "tab"}>${label}</a>`)}
    </div>
    <div role="tabpanel" aria-label=${TABS.find(([id]) => id === tab)[1]}>
      ${tab === "rules" && html`<${Rules} />`}
      ${tab === "config" && html`<${Config} />`}
      ${tab === "grants" && html`<${Grants} />`}
      ${tab === "events" && html`<${Events} />`}
    </div>
  <//>`;
}

// ---- rules ------------------------------------------------------------------------------------

function patternsText(p) {
  return Object.entries(p || {}).map(([k, v]) => `${k}=${v}`).join("\n");
}

function parsePatterns(text) {
  const out = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf("=");
    if (at < 1) throw Object.assign(new Error(`argumentPatterns: "${line}" is not argument=regex`), { field: "argumentPatterns" });
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

function Rules() {
  const session = useSession();
  const write = session.isGlobalAdmin;
  const state = useLoad(() => get("/security/guard/rules"), []);
  const [editing, setEditing] = useState(null); // null | {} (new) | rule
  const [importing, setImporting] = useState(false);
  const toggle = async (r, enabled) => {
    try {
      await put(`/security/guard/rules/${seg(r.ruleId)}/toggle`, { enabled });
      toast(`${r.name} ${enabled ? "enabled" : "disabled"}`, "ok");
    } catch (err) { toastError(err); }
    state.reload(true);
  };
  const remove = async (r) => {
    if (!await confirmDialog({ title: `Delete rule ${r.name}?`, message: "Tools it governed fall back to the other rules and the defaults." })) return;
    try { await del(`/security/guard/rules/${seg(r.ruleId)}`); toast(`Deleted ${r.name}`, "ok"); } catch (err) { toastError(err); }
    state.reload(true);
  };
  const exportRules = async () => {
    try {
      const doc = await get("/security/guard/rules/export");
      const url = URL.createObjectURL(new Blob([JSON.stringify(doc, null, 2)], { type: "application/json" }));
      const a = Object.assign(document.createElement("a"), { href: url, download: "guard-rules.json" });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 1000);
    } catch (err) { toastError(err); }
  };
  return html`<${Panel} title="Guard rules" id="guard-rules" actions=${html`<div class="row-actions">
      <button type="button" class="btn" onClick=${exportRules}>Export</button>
      ${write && html`<button type="button" class="btn" onClick=${() => setImporting(true)}>Import…</button>
        <button type="button" class="btn btn-primary" onClick=${() => setEditing({})}>+ New rule</button>`}
    </div>`}>
    <p class="muted">The first matching rule decides: allow, ask for approval, or deny. Critical calls always ask or deny.</p>
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    ${state.data && html`<${Table} label="Rules" rows=${state.data} rowKey=${(r) => r.ruleId}
      columns=${[
        { key: "name", label: "Rule", render: (r) => html`<strong>${r.name}</strong><br /><code class="small">${r.ruleId}</code>` },
        { key: "toolName", label: "Tool", render: (r) => html`<code>${r.toolName}</code>` },
        { key: "argumentPatterns", label: "When arguments match", render: (r) => patternsText(r.argumentPatterns) || "any" },
        { key: "severity", label: "Severity", render: (r) => html`<span class=${`severity sev-${r.severity}`}>${r.severity}</span>` },
        { key: "decision", label: "Decision", render: (r) => html`<span class=${`pill ${r.decision === "deny" ? "bad" : r.decision === "ask" ? "warn" : "ok"}`}>${r.decision}</span>` },
        { key: "enabled", label: "Enabled", render: (r) => (write
          ? html`<input type="checkbox" checked=${r.enabled} aria-label=${`Enabled: ${r.name}`} onChange=${(e) => toggle(r, e.currentTarget.checked)} />`
          : (r.enabled ? "yes" : "no")) },
        { key: "actions", label: "", render: (r) => (write && !r.builtin ? html`<div class="row-actions">
            <button type="button" class="btn btn-small" aria-label=${`Edit ${r.name}`} onClick=${() => setEditing(r)}>Edit</button>
            <button type="button" class="btn btn-small btn-danger" aria-label=${`Delete ${r.name}`} onClick=${() => remove(r)}>Delete</button>
          </div>` : r.builtin ? html`<span class="badge">built-in</span>` : "") },
      ]} />`}
    ${editing && html`<${RuleDialog} rule=${editing} onClose=${(saved) => { setEditing(null); if (saved) state.reload(true); }} />`}
    ${importing && html`<${ImportDialog} onClose=${(done) => { setImporting(false); if (done) state.reload(true); }} />`}
  <//>`;
}

function RuleDialog({ rule, onClose }) {
  const isNew = !rule.ruleId;
  const [v, setV] = useState({
    name: rule.name || "", toolName: rule.toolName || "", patterns: patternsText(rule.argumentPatterns),
    severity: rule.severity || "high", decision: rule.decision || "ask", description: rule.description || "", enabled: rule.enabled ?? true,
  });
  const [errors, setErrors] = useState({});
  const set = (k) => (e) => { setV({ ...v, [k]: e.currentTarget.value }); setErrors({}); };
  const save = async (e) => {
    e.preventDefault();
    try {
      const body = { name: v.name.trim(), toolName: v.toolName.trim(), argumentPatterns: parsePatterns(v.patterns),
        severity: v.severity, decision: v.decision, description: v.description, enabled: v.enabled };
      if (isNew) await post("/security/guard/rules", body);
      else await put(`/security/guard/rules/${seg(rule.ruleId)}`, body);
      toast(isNew ? `Created rule ${body.name}` : `Saved rule ${body.name}`, "ok");
      onClose(true);
    } catch (err) {
      setErrors(err.field ? { [err.field]: err.message.replace(/^[^:]+: /, "") }
        : fieldErrors(err, ["name", "toolName", "argumentPatterns", "severity", "decision", "description"]));
    }
  };
  return html`<${Dialog} title=${isNew ? "New guard rule" : `Edit ${rule.name}`} onClose=${() => onClose(false)}>
    <form class="stack" onSubmit=${save} novalidate>
      ${errors._ && html`<p class="form-error" role="alert">${errors._}</p>`}
      <${Field} label="Name" error=${errors.name}><input value=${v.name} onInput=${set("name")} /><//>
      <${Field} label="Tool" hint="a tool name such as shell_exec, or * for every tool" error=${errors.toolName}>
        <input value=${v.toolName} onInput=${set("toolName")} class="mono" />
      <//>
      <${Field} label="Argument patterns" hint="one per line: argument=regular expression; empty matches any call" error=${errors.argumentPatterns}>
        <textarea rows="3" class="mono" value=${v.patterns} onInput=${set("patterns")}></textarea>
      <//>
      <div class="form-grid">
        <${Field} label="Severity" error=${errors.severity}>
          <select value=${v.severity} onChange=${set("severity")}>${SEVERITIES.map((s) => html`<option value=${s}>${s}</option>`)}</select>
        <//>
        <${Field} label="Decision" error=${errors.decision}>
          <select value=${v.decision} onChange=${set("decision")}>${DECISIONS.map((s) => html`<option value=${s}>${s}</option>`)}</select>
        <//>
      </div>
      <${Field} label="Description" error=${errors.description}><input value=${v.description} onInput=${set("description")} /><//>
      <${Check} label="Enabled" checked=${v.enabled} onChange=${(enabled) => setV({ ...v, enabled })} />
      <div class="actions">
        <button type="button" class="btn" onClick=${() => onClose(false)}>Cancel</button>
        <button type="submit" class="btn btn-primary">${isNew ? "Create rule" : "Save rule"}</button>
      </div>
    </form>
  <//>`;
}

function ImportDialog({ onClose }) {
  const [text, setText] = useState("");
  const [plan, setPlan] = useState(null);
  const [error, setError] = useState("");
  const parsed = () => {
    try { return JSON.parse(text); } catch (err) { throw new Error(`Not JSON: ${err.message}`); }
  };
  const preview = async () => {
    setPlan(null);
    try {
      setPlan(await post("/security/guard/rules/import?dryRun=true", parsed()));
      setError("");
    } catch (err) { setError(err.message); }
  };
  const apply = async () => {
    try {
      const r = await post("/security/guard/rules/import", parsed());
      toast(`Imported: ${r.created} created, ${r.updated} updated`, "ok");
      onClose(true);
    } catch (err) { setError(err.message); }
  };
  const readFile = async (e) => {
    const file = e.currentTarget.files?.[0];
    if (file) { setText(await file.text()); setPlan(null); setError(""); }
  };
  return html`<${Dialog} title="Import guard rules" onClose=${() => onClose(false)} class="wide-dialog">
    <div class="stack">
      <p class="muted">An export from this or another server, or a JSON list of rules. Rules are matched by ruleId: new ones are created, known ones updated; built-in rules only take their enabled state. Nothing is written unless every rule is valid.</p>
      <${Field} label="Rules file"><input type="file" accept="application/json,.json" onChange=${readFile} /><//>
      <${Field} label="Rules JSON" error=${error}>
        <textarea rows="8" class="mono" value=${text} onInput=${(e) => { setText(e.currentTarget.value); setPlan(null); setError(""); }}></textarea>
      <//>
      ${plan && html`<div aria-label="Import preview" role="region">
        <p><strong>${plan.created} to create, ${plan.updated} to update.</strong></p>
        <${Table} label="Planned changes" rows=${plan.rules} rowKey=${(r) => r.ruleId}
          columns=${[
            { key: "action", label: "Change", render: (r) => html`<span class=${`pill ${r.action === "create" ? "ok" : "warn"}`}>${r.action}</span>` },
            { key: "ruleId", label: "Rule", render: (r) => html`<code>${r.ruleId}</code>${r.builtin ? " (built-in: enabled only)" : ""}` },
            { key: "toolName", label: "Tool" },
            { key: "decision", label: "Decision", render: (r) => `${r.decision} (${r.severity})` },
            { key: "enabled", label: "Enabled" },
          ]} />
      </div>`}
      <div class="actions">
        <button type="button" class="btn" onClick=${() => onClose(false)}>Cancel</button>
        <button type="button" class="btn" disabled=${!text.trim()} onClick=${preview}>Preview</button>
        <button type="button" class="btn btn-primary" disabled=${!plan} onClick=${apply}>Import ${plan ? plan.total : ""} rules</button>
      </div>
    </div>
  <//>`;
}

// ---- configs ----------------------------------------------------------------------------------

function Config() {
  const session = useSession();
  const write = session.isGlobalAdmin;
  const state = useLoad(async () => {
    const [guard, files] = await Promise.all([get("/security/guard/config"), get("/security/guard/config/file-guard")]);
    return { guard, files, patterns: files.patterns.join("\n") };
  }, []);
  const [errors, setErrors] = useState({});
  const d = state.data;
  const saveGuard = async (e) => {
    e.preventDefault();
    try {
      await put("/security/guard/config", { enabled: d.guard.enabled, defaultDecisions: d.guard.defaultDecisions });
      toast("Guard configuration saved", "ok");
      setErrors({});
      state.reload(true);
    } catch (err) { setErrors(fieldErrors(err, ["defaultDecisions", "enabled"])); }
  };
  const saveFiles = async (e) => {
    e.preventDefault();
    try {
      const patterns = d.patterns.split("\n").map((p) => p.trim()).filter(Boolean);
      await put("/security/guard/config/file-guard", { enabled: d.files.enabled, patterns });
      toast("File guard saved", "ok");
      setErrors({});
      state.reload(true);
    } catch (err) { setErrors(fieldErrors(err, ["patterns", "enabled"])); }
  };
  if (state.error && !d) return html`<p class="form-error" role="alert">${state.error.message}</p>`;
  if (!d) return html`<p class="loading" role="status">Loading…</p>`;
  const upd = (fn) => state.setData((x) => { const y = structuredClone(x); fn(y); return y; });
  return html`<div class="two-col">
    <${Panel} title="Tool guard" id="guard-config">
      <form class="stack" onSubmit=${saveGuard}>
        <${Check} label="Check tool calls against the guard's rules" hint="When off, every tool call runs without asking." checked=${d.guard.enabled} disabled=${!write}
          onChange=${(v) => upd((y) => { y.guard.enabled = v; })} />
        <p class="muted">When no rule matches, a call of each severity is:</p>
        ${errors.defaultDecisions && html`<p class="field-error" role="alert">${errors.defaultDecisions}</p>`}
        <div class="form-grid">
          ${SEVERITIES.map((s) => html`<${Field} label=${`Default for ${s}`}>
            <select value=${d.guard.defaultDecisions[s]} disabled=${!write}
              onChange=${(e) => { const value = e.currentTarget.value; upd((y) => { y.guard.defaultDecisions[s] = value; }); }}>
              ${DECISIONS.filter((x) => s !== "critical" || x !== "allow").map((x) => html`<option value=${x}>${x}</option>`)}
            </select>
          <//>`)}
        </div>
        ${write && html`<div class="actions"><button type="submit" class="btn btn-primary">Save guard</button></div>`}
      </form>
    <//>
    <${Panel} title="File guard" id="file-guard">
      <form class="stack" onSubmit=${saveFiles}>
        <${Check} label="File guard enabled" checked=${d.files.enabled} disabled=${!write} onChange=${(v) => upd((y) => { y.files.enabled = v; })} />
        <${Field} label="Protected paths" hint="globs, one per line (** spans folders); file tools never read, write or list them" error=${errors.patterns}>
          <textarea rows="6" class="mono" value=${d.patterns} disabled=${!write} onInput=${(e) => { const value = e.currentTarget.value; upd((y) => { y.patterns = value; }); }}></textarea>
        <//>
        ${write && html`<div class="actions"><button type="submit" class="btn btn-primary">Save file guard</button></div>`}
      </form>
    <//>
  </div>`;
}

// ---- grants -----------------------------------------------------------------------------------

function Grants() {
  const [page, setPage] = useState(1);
  const [active, setActive] = useState("true");
  const state = useLoad(() => get("/approval/grants", { page, size: 20, active }), [page, active]);
  const revoke = async (g) => {
    if (!await confirmDialog({ title: "Revoke this grant?", submit: "Revoke", message: `${g.toolName || "Any tool"} will ask for approval again.` })) return;
    try { await del(`/approval/grants/${seg(g.id)}`); toast("Grant revoked", "ok"); } catch (err) { toastError(err); }
    state.reload(true);
  };
  return html`<${Panel} title="Approval grants" id="grants">
    <div class="filters">
      <${Field} label="Show">
        <select value=${active} onChange=${(e) => { setActive(e.currentTarget.value); setPage(1); }}>
          <option value="true">active grants</option><option value="false">revoked or expired</option><option value="">all</option>
        </select>
      <//>
    </div>
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    ${state.data && html`<${Table} label="Grants" rows=${state.data.records} empty="No grants."
      columns=${[
        { key: "toolName", label: "Tool", render: (g) => html`<code>${g.toolName || "any"}</code>${g.ruleId ? ` (rule ${g.ruleId})` : ""}` },
        { key: "scope", label: "Scope", render: (g) => `${g.scopeType.toLowerCase()} ${g.scopeName || g.scopeId}` },
        { key: "maxSeverity", label: "Up to", render: (g) => html`<span class=${`severity sev-${g.maxSeverity}`}>${g.maxSeverity}</span>` },
        { key: "grantKind", label: "Kind", render: (g) => (g.grantKind === "UNTIL_TIMESTAMP" ? `until ${when(g.expireAt)}` : g.grantKind.toLowerCase().replace(/_/g, " ")) },
        { key: "note", label: "Note" },
        { key: "createTime", label: "Created", render: (g) => when(g.createTime) },
        { key: "actions", label: "", render: (g) => (g.active
          ? html`<button type="button" class="btn btn-small btn-danger" aria-label=${`Revoke grant ${g.id}`} onClick=${() => revoke(g)}>Revoke</button>`
          : html`<span class="pill">${g.revoked ? "revoked" : "expired"}</span>`) },
      ]} />
      <${Pager} page=${state.data.current} size=${state.data.size} total=${state.data.total} onPage=${setPage} />`}
  <//>`;
}

// ---- events -----------------------------------------------------------------------------------

const FEEDS = {
  feed: { label: "Activity feed", path: "/activity/feed" },
  approvals: { label: "Approval records", path: "/security/approvals" },
  calls: { label: "Tool calls", path: "/security/audit/logs" },
};

function Events() {
  const [source, setSource] = useState("feed");
  const [draft, setDraft] = useState({ kind: "", status: "", toolName: "", decision: "", success: "" });
  const [filters, setFilters] = useState(draft);
  const [page, setPage] = useState(1);
  const query = { page, size: 20 };
  if (source === "feed") query.kind = filters.kind;
  if (source === "approvals") query.status = filters.status;
  if (source === "calls") Object.assign(query, { toolName: filters.toolName.trim(), decision: filters.decision, success: filters.success });
  const state = useLoad(() => get(FEEDS[source].path, query), [source, page, filters]);
  const set = (k) => (e) => setDraft({ ...draft, [k]: e.currentTarget.value });
  const apply = (e) => { e.preventDefault(); setPage(1); setFilters(draft); };
  const columns = {
    feed: [
      { key: "time", label: "Time", render: (r) => when(r.time) },
      { key: "kind", label: "Kind", render: (r) => r.kind.replace("_", " ") },
      { key: "summary", label: "What happened" },
    ],
    approvals: [
      { key: "createTime", label: "Asked", render: (r) => when(r.createTime) },
      { key: "toolName", label: "Tool", render: (r) => html`<code>${r.toolName}</code>` },
      { key: "maxSeverity", label: "Severity", render: (r) => html`<span class=${`severity sev-${r.maxSeverity}`}>${r.maxSeverity}</span>` },
      { key: "status", label: "Status" },
      { key: "conversationId", label: "Conversation" },
      { key: "reason", label: "Reason" },
    ],
    calls: [
      { key: "createTime", label: "Time", render: (r) => when(r.createTime) },
      { key: "toolName", label: "Tool", render: (r) => html`<code>${r.toolName}</code>` },
      { key: "decision", label: "Decision" },
      { key: "severity", label: "Severity" },
      { key: "success", label: "Result", render: (r) => html`<span class=${`pill ${r.success ? "ok" : "bad"}`}>${r.success ? "ok" : "failed"}</span>` },
      { key: "durationMs", label: "ms", class: "num" },
    ],
  }[source];
  return html`<${Panel} title="Security events" id="events">
    <form class="filters" onSubmit=${apply} aria-label="Filter security events">
      <${Field} label="Source">
        <select value=${source} onChange=${(e) => { setSource(e.currentTarget.value); setPage(1); }}>
          ${Object.entries(FEEDS).map(([id, f]) => html`<option value=${id}>${f.label}</option>`)}
        </select>
      <//>
      ${source === "feed" && html`<${Field} label="Kind">
        <select value=${draft.kind} onChange=${set("kind")}>
          <option value="">everything</option><option value="audit">audit events</option><option value="approval">approval decisions</option><option value="tool_call">tool calls</option>
        </select><//>`}
      ${source === "approvals" && html`<${Field} label="Status">
        <select value=${draft.status} onChange=${set("status")}>
          ${["", "pending", "approved", "denied", "expired"].map((s) => html`<option value=${s}>${s || "any"}</option>`)}
        </select><//>`}
      ${source === "calls" && html`
        <${Field} label="Tool name"><input value=${draft.toolName} onInput=${set("toolName")} /><//>
        <${Field} label="Decision"><select value=${draft.decision} onChange=${set("decision")}>
          ${["", ...DECISIONS].map((s) => html`<option value=${s}>${s || "any"}</option>`)}</select><//>
        <${Field} label="Result"><select value=${draft.success} onChange=${set("success")}>
          <option value="">any</option><option value="true">succeeded</option><option value="false">failed</option></select><//>`}
      <div class="filter-actions"><button type="submit" class="btn btn-primary">Filter</button></div>
    </form>
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    ${state.data && html`<${Table} label=${FEEDS[source].label} rows=${state.data.records} empty="Nothing recorded here yet."
      rowKey=${(r) => `${r.kind || source}-${r.id}`} columns=${columns} />
      <${Pager} page=${state.data.current} size=${state.data.size} total=${state.data.total} onPage=${setPage} />`}
  <//>`;
}
