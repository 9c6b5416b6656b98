// Tools, MCP and ACP: built-in tools with their guard severity and enabled state; MCP servers (add stdio or
// HTTP, test, see the tools, enable per agent); ACP endpoints (add, test, delegating agents); plugins.
import { del, get, post, put, seg } from "../../api.js";
import { html, useState } from "../../ui.js";
import {
  Badge, Empty, Field, Head, Tabs, Toggle, boundNames, confirmDialog, formValues, page, useAction, useLoad, useSession, when,
} from "../../components/index.js";

const TABS = [["builtin", "Built-in tools"], ["mcp", "MCP servers"], ["acp", "ACP agents"], ["plugins", "Plugins"]];

function ToolsPage({ args }) {
  const tab = TABS.some(([k]) => k === args[0]) ? args[0] : "builtin";
  return html`
    <${Head} title="Tools" />
    <${Tabs} base="tools" tabs=${TABS} current=${tab} />
    ${tab === "builtin" ? html`<${BuiltinTools} />` : null}
    ${tab === "mcp" ? html`<${McpServers} selected=${args[1]} />` : null}
    ${tab === "acp" ? html`<${AcpEndpoints} />` : null}
    ${tab === "plugins" ? html`<${Plugins} />` : null}`;
}

/** "a=b" lines <-> an object; "******" values keep what is stored. */
const toLines = (obj) => Object.entries(obj || {}).map(([k, v]) => `${k}=${v}`).join("\n");
function fromLines(text) {
  const out = {};
  for (const line of (text || "").split("\n")) {
    const i = line.indexOf("=");
    if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}
const argList = (text) => (text || "").split("\n").map((a) => a.trim()).filter(Boolean);

function BuiltinTools() {
  const tools = useLoad(() => get("/tools"), [], { toastErrors: true });
  const admin = useSession().can("admin");
  const rules = useLoad(() => (admin ? get("/security/guard/rules") : Promise.resolve([])), [admin], { toastErrors: true });
  const [, run] = useAction();
  const severity = {};
  for (const r of rules.data || []) if (r.enabled && r.toolName && !severity[r.toolName]) severity[r.toolName] = r;
  const list = (tools.data || []).filter((t) => t.source !== "mcp");
  return html`<section class="panel" aria-label="Built-in tools">
    <div class="table-wrap"><table class="data-table tool-table">
      <thead><tr><th>Tool</th><th>Source</th><th>Guard</th><th>Tier</th><th>Enabled</th></tr></thead>
      <tbody>${list.map((t) => html`<tr key=${t.id} data-tool=${t.name}>
        <td><code>${t.name}</code><br /><small class="muted">${t.description}</small></td>
        <td>${t.source}</td>
        <td>${severity[t.name] ? html`<span class=${`severity sev-${severity[t.name].severity}`}>${severity[t.name].severity}</span>
          <small class="muted"> ${severity[t.name].decision}</small>` : html`<small class="muted">default</small>`}</td>
        <td><select aria-label=${`Tier of ${t.name}`} value=${t.disclosureTier}
          onChange=${(e) => run(() => put(`/tools/${seg(t.id)}/disclosure-tier`, { tier: e.currentTarget.value }), "Saved")}>
          <option value="core">core</option><option value="extension">extension</option></select></td>
        <td><${Toggle} label=${`Enable ${t.name}`} checked=${t.enabled && t.workspaceEnabled !== false} disabled=${t.workspaceEnabled === false}
          onChange=${(v) => run(() => put(`/tools/${seg(t.id)}/toggle`, { enabled: v }), v ? "Enabled" : "Disabled").then(tools.reload)} />
          ${t.workspaceEnabled === false ? html`<br /><small class="muted host-off">Not enabled in this workspace (host tool <code>${t.hostTool}</code>; a global admin enables it)</small>` : ""}</td>
      </tr>`)}</tbody></table></div>
  </section>`;
}

function McpServers({ selected }) {
  const servers = useLoad(() => get("/mcp/servers"), [], { toastErrors: true });
  const [adding, setAdding] = useState(false);
  const [transport, setTransport] = useState("stdio");
  const [busy, run] = useAction();
  const add = (e) => {
    e.preventDefault();
    const v = formValues(e.currentTarget);
    const body = { name: v.name, description: v.description, transport };
    if (transport === "stdio") Object.assign(body, { command: v.command, args: argList(v.args), env: fromLines(v.env) });
    else Object.assign(body, { url: v.url, headers: fromLines(v.headers) });
    run(() => post("/mcp/servers", body), (s) => `Added ${s.name}: ${s.status}`)
      .then((s) => { if (s) { setAdding(false); servers.reload(); location.hash = `#/tools/mcp/${s.id}`; } });
  };
  const list = servers.data || [];
  return html`<div class="split">
    <section class="panel" aria-label="MCP servers">
      <div class="row"><h3 class="grow">Servers</h3>
        <button class="btn btn-small" onClick=${() => run(() => post("/mcp/servers/refresh"), "Reconnected").then(servers.reload)}>Refresh all</button>
        <button class="btn btn-primary btn-small" onClick=${() => setAdding(!adding)}>+ Add server</button></div>
      ${adding ? html`<form class="stack mcp-form" aria-label="Add an MCP server" onSubmit=${add}>
        <${Field} label="Name (slug)"><input name="name" required pattern="[a-z0-9][a-z0-9_-]*" /></>
        <${Field} label="Description"><input name="description" /></>
        <${Field} label="Transport"><select name="transport" value=${transport} onChange=${(e) => setTransport(e.currentTarget.value)}>
          <option value="stdio">stdio</option><option value="streamable_http">Streamable HTTP</option><option value="sse">SSE</option></select></>
        ${transport === "stdio" ? html`
          <${Field} label="Command"><input name="command" required /></>
          <${Field} label="Arguments (one per line)"><textarea name="args" rows="3"></textarea></>
          <${Field} label="Environment (NAME=value per line; write-only)"><textarea name="env" rows="2"></textarea></>`
        : html`<${Field} label="URL"><input name="url" type="url" required /></>
          <${Field} label="Headers (Name=value per line; write-only)"><textarea name="headers" rows="2"></textarea></>`}
        <div class="row"><button class="btn btn-primary" disabled=${busy}>${busy ? "Connecting…" : "Add and connect"}</button>
          <button type="button" class="btn" onClick=${() => setAdding(false)}>Cancel</button></div>
      </form>` : null}
      ${list.length ? html`<ul class="list server-list">${list.map((s) => html`<li key=${s.id} data-server=${s.name} class=${s.id === selected ? "selected" : ""}>
        <span class="item-main"><a class="item-title" href=${`#/tools/mcp/${s.id}`}>${s.name}</a>
          <small class="muted">${s.transport} · ${s.toolCount} tools${s.error ? ` · ${s.error}` : ""}</small></span>
        <span class="row"><${Badge} kind=${s.status === "connected" ? "ok" : s.status === "error" ? "bad" : ""}>${s.status}</>
          <${Toggle} label=${`Enable ${s.name}`} checked=${s.enabled}
            onChange=${(v) => run(() => put(`/mcp/servers/${seg(s.id)}/toggle`, { enabled: v })).then(servers.reload)} /></span></li>`)}</ul>`
        : html`<${Empty}>No MCP servers yet.</>`}
    </section>
    ${selected ? html`<${McpDetail} key=${selected} id=${selected} onChange=${servers.reload} />`
      : html`<section class="panel"><p class="muted">Pick a server to test it, see its tools and choose the agents that use them.</p></section>`}
  </div>`;
}

function McpDetail({ id, onChange }) {
  const server = useLoad(() => get(`/mcp/servers/${seg(id)}`), [id], { toastErrors: true });
  const tools = useLoad(() => get(`/mcp/servers/${seg(id)}/tools`), [id], { toastErrors: true });
  const [test, setTest] = useState(null);
  const [busy, run] = useAction();
  const s = server.data;
  if (!s) return html`<section class="panel"><p class="muted">${server.loading ? "Loading…" : "Not found."}</p></section>`;
  const names = (tools.data || []).filter((t) => t.registered).map((t) => t.toolName);
  const remove = async () => {
    if (!(await confirmDialog({ title: "Delete MCP server", message: `Delete “${s.name}” and its tools?` }))) return;
    if (await run(() => del(`/mcp/servers/${seg(id)}`), "Deleted") !== undefined) { location.hash = "#/tools/mcp"; onChange(); }
  };
  return html`<section class="panel mcp-detail" aria-label=${`MCP server ${s.name}`}>
    <div class="card-head"><h2>${s.name}</h2><${Badge} kind=${s.status === "connected" ? "ok" : "bad"}>${s.status}</></div>
    <dl class="kv">
      <dt>Transport</dt><dd>${s.transport}</dd>
      ${s.transport === "stdio" ? html`<dt>Command</dt><dd><code>${[s.command, ...s.args].join(" ")}</code></dd>` : html`<dt>URL</dt><dd>${s.url}</dd>`}
      <dt>Server</dt><dd>${s.serverInfo ? `${s.serverInfo.name} ${s.serverInfo.version}` : "—"}</dd>
      <dt>Connected</dt><dd>${when(s.lastConnectedTime) || "never"}</dd>
    </dl>
    ${s.error ? html`<p class="error">${s.error}</p>` : null}
    <div class="row">
      <button class="btn" disabled=${busy} onClick=${() => run(() => post(`/mcp/servers/${seg(id)}/test`)).then((r) => { if (r) { setTest(r); tools.reload(); server.reload(); } })}>${busy ? "Testing…" : "Test connection"}</button>
      <button class="btn btn-danger" onClick=${remove}>Delete</button>
    </div>
    ${test ? html`<p class=${test.success ? "status-line test-result ok" : "status-line test-result error"} role="status">${test.message}${test.latencyMs != null ? ` (${test.latencyMs} ms)` : ""}</p>` : null}
    <h3>Tools</h3>
    ${(tools.data || []).length ? html`<ul class="list mcp-tools">${tools.data.map((t) => html`<li key=${t.name} data-tool=${t.name}>
      <span class="item-main"><code class="item-title">${t.name}</code><small class="muted">${t.description}</small></span>
      <small class="muted">${t.toolName}</small></li>`)}</ul>` : html`<${Empty}>No tools discovered.</>`}
    <${AgentBinding} toolNames=${names} label="Agents that use these tools" />
  </section>`;
}

/** Per-agent switches that bind (all of) `toolNames` to an agent through PUT /agents/{id}/tools. */
export function AgentBinding({ toolNames, label }) {
  const agents = useLoad(async () => {
    const list = await get("/agents") || [];
    return Promise.all(list.map(async (a) => ({ ...a, tools: boundNames(await get(`/agents/${seg(a.id)}/tools`)) })));
  }, [], { toastErrors: true });
  const [, run] = useAction();
  if (!toolNames.length) return null;
  const set = (a, on) => {
    const rest = a.tools.filter((t) => !toolNames.includes(t));
    return run(() => put(`/agents/${seg(a.id)}/tools`, { toolNames: on ? [...rest, ...toolNames] : rest }), on ? `Enabled for ${a.name}` : `Removed from ${a.name}`)
      .then(agents.reload);
  };
  const list = agents.data || [];
  return html`<div class="agent-binding"><h3>${label}</h3>
    ${list.length ? html`<ul class="list">${list.map((a) => html`<li key=${a.id}><span>${a.name}</span>
      <${Toggle} label=${`Use in ${a.name}`} checked=${toolNames.every((t) => a.tools.includes(t))} onChange=${(v) => set(a, v)} /></li>`)}</ul>`
      : html`<${Empty}>No agents yet.</>`}</div>`;
}

function AcpEndpoints() {
  const list = useLoad(() => get("/acp/endpoints"), [], { toastErrors: true });
  const available = useLoad(() => get("/tools/available").catch(() => []), [], { toastErrors: true });
  const [results, setResults] = useState({});
  const [adding, setAdding] = useState(false);
  const [busy, run] = useAction();
  // Agents delegate through the `acp_delegate` tool (listed once the server offers it).
  const delegate = (available.data || []).map((t) => (typeof t === "string" ? t : t.name || t.toolName)).filter((n) => n === "acp_delegate");
  const add = (e) => {
    e.preventDefault();
    const v = formValues(e.currentTarget);
    run(() => post("/acp/endpoints", { name: v.name, displayName: v.displayName, command: v.command, args: argList(v.args), env: fromLines(v.env), cwd: v.cwd }), "Endpoint added")
      .then((r) => { if (r) { setAdding(false); list.reload(); } });
  };
  const test = (ep) => run(() => post(`/acp/endpoints/${seg(ep.id)}/test`)).then((r) => { if (r) { setResults({ ...results, [ep.id]: r }); list.reload(); } });
  return html`<div class="stack">
    <section class="panel" aria-label="ACP endpoints">
      <div class="row"><h3 class="grow">Coding agents over ACP</h3><button class="btn btn-primary btn-small" onClick=${() => setAdding(!adding)}>+ Add endpoint</button></div>
      ${adding ? html`<form class="stack" aria-label="Add an ACP endpoint" onSubmit=${add}>
        <${Field} label="Name (slug)"><input name="name" required /></>
        <${Field} label="Display name"><input name="displayName" /></>
        <${Field} label="Command"><input name="command" required /></>
        <${Field} label="Arguments (one per line)"><textarea name="args" rows="2"></textarea></>
        <${Field} label="Environment (NAME=value per line; write-only)"><textarea name="env" rows="2"></textarea></>
        <${Field} label="Working folder (under the data dir's acp/)"><input name="cwd" /></>
        <div class="row"><button class="btn btn-primary" disabled=${busy}>Add</button><button type="button" class="btn" onClick=${() => setAdding(false)}>Cancel</button></div>
      </form>` : null}
      <ul class="list acp-list">${(list.data || []).map((ep) => html`<li key=${ep.id} data-endpoint=${ep.name}>
        <span class="item-main"><span class="item-title">${ep.displayName || ep.name}${ep.builtin ? html` <${Badge}>built-in</>` : null}</span>
          <small class="muted"><code>${[ep.command, ...ep.args].join(" ")}</code></small>
          ${results[ep.id] || ep.lastTest ? html`<small class="test-result">${(results[ep.id] || ep.lastTest).message || JSON.stringify(results[ep.id] || ep.lastTest)}</small>` : null}</span>
        <span class="row"><button class="btn btn-small" disabled=${busy} onClick=${() => test(ep)}>Test</button>
          <${Toggle} label=${`Enable ${ep.name}`} checked=${ep.enabled} onChange=${(v) => run(() => put(`/acp/endpoints/${seg(ep.id)}/toggle`, { enabled: v })).then(list.reload)} />
          ${ep.builtin ? null : html`<button class="btn btn-small btn-danger" onClick=${async () => { if (await confirmDialog({ title: "Delete endpoint", message: `Delete ${ep.name}?` })) run(() => del(`/acp/endpoints/${seg(ep.id)}`), "Deleted").then(list.reload); }}>Delete</button>`}</span>
      </li>`)}</ul>
    </section>
    <section class="panel">
      ${delegate.length ? html`<${AgentBinding} toolNames=${delegate} label="Agents that may delegate to these endpoints" />`
        : html`<p class="muted">No delegation tool is available yet: agents delegate to ACP endpoints through a tool, listed here once the server offers one.</p>`}
    </section>
  </div>`;
}

function Plugins() {
  const list = useLoad(() => get("/plugins"), [], { toastErrors: true });
  const [, run] = useAction();
  return html`<div class="cols">${(list.data || []).map((p) => html`<section class="panel plugin" key=${p.name} data-plugin=${p.name} aria-label=${`Plugin ${p.name}`}>
    <div class="card-head"><h3 class="grow">${p.name} <small class="muted">${p.version}</small></h3>
      <${Toggle} label=${`Enable plugin ${p.name}`} checked=${p.enabled}
        onChange=${(v) => run(() => post(`/plugins/${seg(p.name)}/${v ? "enable" : "disable"}`), v ? "Enabled" : "Disabled").then(list.reload)} /></div>
    <p class="muted">${p.description}</p>
    ${Object.keys(p.configSchema || {}).length ? html`<${PluginSettings} plugin=${p} onSaved=${list.reload} />` : html`<p class="muted">No settings.</p>`}
    ${p.tools?.length ? html`<small class="muted">Tools: ${p.tools.map((t) => t.name || t).join(", ")}</small>` : null}
  </section>`)}</div>`;
}

/** A plugin's settings form. What the user typed is kept until it is saved: a reload of the list
 * (after a toggle, say) re-renders the form with the stored values and must not reset the inputs. */
function PluginSettings({ plugin: p, onSaved }) {
  const [draft, setDraft] = useState({});
  const [, run] = useAction();
  const edit = (k, value) => setDraft((d) => ({ ...d, [k]: value }));
  const save = (e) => {
    e.preventDefault();
    const v = formValues(e.currentTarget);
    const config = {};
    for (const [k, rule] of Object.entries(p.configSchema || {})) {
      const raw = v[k];
      if (raw === undefined) continue;
      if (rule.type === "integer" || rule.type === "number") config[k] = raw === "" ? undefined : Number(raw);
      else if (rule.type === "boolean") config[k] = !!raw;
      else config[k] = raw;
    }
    run(() => put(`/plugins/${seg(p.name)}/config`, config), "Settings saved").then((r) => { if (r !== undefined) { setDraft({}); onSaved(); } });
  };
  return html`<form class="stack" onSubmit=${save}>
    ${Object.entries(p.configSchema).map(([k, rule]) => html`<${Field} key=${k} label=${rule.writeOnly ? `${k} (write-only)` : k}>
      ${rule.type === "boolean" ? html`<input type="checkbox" name=${k} checked=${draft[k] ?? !!p.config[k]} onChange=${(e) => edit(k, e.currentTarget.checked)} />`
        : html`<input name=${k} type=${rule.writeOnly ? "password" : rule.type === "integer" || rule.type === "number" ? "number" : "text"}
          min=${rule.minimum} max=${rule.maximum} value=${draft[k] ?? p.config[k] ?? ""} onInput=${(e) => edit(k, e.currentTarget.value)} autocomplete="off" />`}</>`)}
    <button class="btn btn-small">Save settings</button></form>`;
}

export default page(ToolsPage);
