// Agents: list, create, edit (prompt, model, type, tools, thinking level, icon), delete, templates; #/agents/<id>/<tab>
// shows one agent's whole setup instead (builder/agent_setup.js).
import { del, get, post, put, seg } from "../api.js";
import { html, useEffect, useRef, useState } from "../ui.js";
import { Field, Head, confirmDialog, toast, toastError, useLoad } from "../components/index.js";
import { iconText } from "../chat/list.js";

const THINKING = ["", "off", "low", "medium", "high", "max"];
const BLANK = { name: "", description: "", icon: "🤖", agentType: "react", systemPrompt: "You are a helpful assistant.", modelName: "", maxIterations: 10, defaultThinkingLevel: "", enabled: true, tags: "", toolsDisabled: false };

function toolName(t) {
  return typeof t === "string" ? t : t?.name || t?.toolName || "";
}

/** A model choice as one select value: the provider and the model name. */
const modelKey = (provider, name) => JSON.stringify([provider || "", name || ""]);

export default function Agents({ args = [] }) {
  const id = args[0];
  if (id) return html`<${Setup} id=${decodeURIComponent(id)} tab=${args[1]} />`;
  return html`<${AgentList} />`;
}

/** One agent's setup in tabs; the module loads on demand (it pulls in the builder pages it shows). */
function Setup({ id, tab }) {
  const [AgentSetup, setAgentSetup] = useState(null);
  useEffect(() => {
    let live = true;
    import("./builder/agent_setup.js").then((m) => { if (live) setAgentSetup(() => m.AgentSetup); }, toastError);
    return () => { live = false; };
  }, []);
  return html`<div class="page-inner"><div class="agent-setup-host">
    ${AgentSetup && html`<${AgentSetup} id=${id} tab=${tab} />`}
  </div></div>`;
}

function AgentList() {
  // What the editor offers: chat models and the tools there are; a failed side list leaves its choices empty.
  const choices = useLoad(async () => {
    const [models, tools, templates] = await Promise.all([
      get("/models/enabled").catch(() => []),
      get("/tools/available").catch(() => []),
      get("/templates").catch(() => []),
    ]);
    return {
      models: (models || []).filter((m) => !m.modelType || m.modelType === "chat"),
      tools: (Array.isArray(tools) ? tools : []).filter((t) => toolName(t)),
      templates: Array.isArray(templates) ? templates : [],
    };
  }, []);
  const agents = useLoad(() => get("/agents").then((a) => a || []), [], { toastErrors: true });
  // The open editor: {agent (null for a new one), bound (tool names)}, or null while closed.
  const [editing, setEditing] = useState(null);
  const refresh = () => agents.reload(true);

  async function edit(agent) {
    let bound = [];
    if (agent) {
      try { bound = ((await get(`/agents/${seg(agent.id)}/tools`)) || []).map((row) => row.toolName); } catch { bound = []; }
    }
    setEditing({ agent, bound, seq: (editing?.seq || 0) + 1 });
  }

  async function remove(agent) {
    if (!(await confirmDialog({ title: "Delete agent", message: `Delete the agent “${agent.name}”?` }))) return;
    try {
      await del(`/agents/${seg(agent.id)}`);
      toast("Agent deleted");
      setEditing(null);
      await refresh();
    } catch (err) { toastError(err); }
  }

  async function apply(template) {
    try {
      const agent = await post(`/templates/${seg(template.id)}/apply`, {});
      toast(`Created ${agent?.name || template.name}`);
      await refresh();
    } catch (err) { toastError(err); }
  }

  const list = agents.data;
  const templates = choices.data?.templates;
  return html`<div class="page-inner">
    <${Head} title="Agents">
      <button type="button" class="btn btn-primary new-agent" onClick=${() => edit(null)}>+ New agent</button>
    <//>
    ${editing && choices.data && html`<${Editor} key=${editing.seq} agent=${editing.agent} bound=${editing.bound}
      models=${choices.data?.models || []} tools=${choices.data?.tools || []}
      close=${() => setEditing(null)} saved=${() => { setEditing(null); return refresh(); }} />`}
    <div class="card-grid" aria-label="Agents">
      ${list && !list.length && html`<p class="muted">No agents yet. Create one or start from a template.</p>`}
      ${(list || []).map((a) => html`<${AgentCard} key=${a.id} a=${a} edit=${edit} remove=${remove} />`)}
    </div>
    <h2 class="section-title">Templates</h2>
    <div class="template-row">
      ${templates && !templates.length && html`<p class="muted">No templates available.</p>`}
      ${(templates || []).map((t) => html`<div class="card template-card" key=${t.id}>
        <div class="card-head"><span class="agent-icon" aria-hidden="true">${iconText(t.icon)}</span><h3>${t.name}</h3></div>
        <p class="muted clamp">${t.description || ""}</p>
        <button type="button" class="btn" aria-label=${`Use template ${t.name}`} onClick=${() => apply(t)}>Use template</button>
      </div>`)}
    </div>
  </div>`;
}

function AgentCard({ a, edit, remove }) {
  return html`<article class="card agent-card" data-id=${a.id}>
    <div class="card-head">
      <span class="agent-icon" aria-hidden="true">${iconText(a.icon)}</span>
      <h3 class="agent-name">${a.name}</h3>
      ${a.enabled === false && html`<span class="badge">disabled</span>`}
    </div>
    <p class="muted clamp">${a.description || a.systemPrompt || ""}</p>
    <div class="card-meta">${[a.agentType === "plan_execute" ? "Plan-Execute" : "ReAct", a.modelName || "default model"].join(" · ")}</div>
    <div class="actions">
      <a class="btn" href="#/chat" onClick=${() => localStorage.setItem("ap.lastAgent", a.id)}>Chat</a>
      <a class="btn" href=${`#/agents/${a.id}`} aria-label=${`Setup of ${a.name}`}>Setup</a>
      <button type="button" class="btn" aria-label=${`Edit ${a.name}`} onClick=${() => edit(a)}>Edit</button>
      <button type="button" class="btn btn-danger" aria-label=${`Delete ${a.name}`} onClick=${() => remove(a)}>Delete</button>
    </div>
  </article>`;
}

/** The create/edit form: every field is state, so a re-render (busy, a reload behind it) never loses typing. */
function Editor({ agent, bound, models, tools, close, saved }) {
  const start = { ...BLANK, ...(agent || {}) };
  const known = new Set(tools.map(toolName));
  const [v, setV] = useState({
    ...start,
    icon: start.icon || "",
    model: start.modelName ? modelKey(start.modelProvider, start.modelName) : "",
    defaultThinkingLevel: start.defaultThinkingLevel || "",
    maxIterations: String(start.maxIterations ?? 10),
    description: start.description || "", systemPrompt: start.systemPrompt || "", tags: start.tags || "",
    enabled: start.enabled !== false,
    tools: new Set(bound.filter((t) => known.has(t))),
    moreTools: bound.filter((t) => !known.has(t)).join(", "),
  });
  const [busy, setBusy] = useState(false);
  const box = useRef(null);
  useEffect(() => {
    box.current?.querySelector("input[name=name]")?.focus();
    box.current?.scrollIntoView({ block: "start" });
  }, []);
  const set = (name) => (e) => { const value = e.currentTarget.value; setV((s) => ({ ...s, [name]: value })); };
  const tick = (name, on) => setV((s) => {
    const next = new Set(s.tools);
    if (on) next.add(name); else next.delete(name);
    return { ...s, tools: next };
  });
  // A model the agent names that is not enabled any more stays choosable, so saving does not drop it unasked.
  const options = models.map((m) => ({ value: modelKey(m.providerId, m.modelName), label: `${m.displayName || m.modelName} · ${m.providerId}${m.label ? ` (${m.label})` : ""}` }));
  if (v.model && !options.some((o) => o.value === v.model)) options.push({ value: v.model, label: start.modelName });

  async function submit(e) {
    e.preventDefault();
    const body = {
      name: v.name.trim(), icon: v.icon.trim(), agentType: v.agentType,
      modelProvider: null, modelName: "", defaultThinkingLevel: v.defaultThinkingLevel || null,
      maxIterations: Number(v.maxIterations) || 10, description: v.description,
      systemPrompt: v.systemPrompt, tags: v.tags, enabled: v.enabled,
    };
    if (v.model) [body.modelProvider, body.modelName] = JSON.parse(v.model);
    body.modelProvider = body.modelProvider || null;
    const names = [...tools.map(toolName).filter((t) => v.tools.has(t)), ...v.moreTools.split(",").map((t) => t.trim()).filter(Boolean)];
    setBusy(true);
    try {
      const result = agent ? await put(`/agents/${seg(agent.id)}`, body) : await post("/agents", body);
      const id = result?.id || agent?.id;
      if (id && (agent || names.length)) await put(`/agents/${seg(id)}/tools`, { toolNames: [...new Set(names)] });
      toast(agent ? "Agent saved" : "Agent created");
      await saved();
    } catch (err) {
      toastError(err);
      setBusy(false);
    }
  }

  return html`<section class="panel editor" aria-label="Agent editor" ref=${box}>
    <form class="agent-form" onSubmit=${submit}>
      <h2>${agent ? `Edit ${start.name}` : "New agent"}</h2>
      <div class="form-grid">
        <${Field} label="Name"><input name="name" value=${v.name} onInput=${set("name")} required maxlength="100" /><//>
        <${Field} label="Icon (emoji)"><input name="icon" value=${v.icon} onInput=${set("icon")} maxlength="16" /><//>
        <${Field} label="Type"><select name="agentType" value=${v.agentType} onChange=${set("agentType")}>
          <option value="react">ReAct (tools in a loop)</option>
          <option value="plan_execute">Plan-Execute</option>
        </select><//>
        <${Field} label="Model"><select name="model" value=${v.model} onChange=${set("model")}>
          <option value="">Global default</option>
          ${options.map((o) => html`<option key=${o.value} value=${o.value}>${o.label}</option>`)}
        </select><//>
        <${Field} label="Thinking level"><select name="defaultThinkingLevel" value=${v.defaultThinkingLevel} onChange=${set("defaultThinkingLevel")}>
          ${THINKING.map((t) => html`<option key=${t} value=${t}>${t || "Model default"}</option>`)}
        </select><//>
        <${Field} label="Max iterations"><input name="maxIterations" type="number" min="1" max="100" value=${v.maxIterations} onInput=${set("maxIterations")} /><//>
      </div>
      <${Field} label="Description"><input name="description" value=${v.description} onInput=${set("description")} /><//>
      <${Field} label="System prompt"><textarea name="systemPrompt" rows="6" value=${v.systemPrompt} onInput=${set("systemPrompt")}></textarea><//>
      <${Field} label="Tags (comma-separated)"><input name="tags" value=${v.tags} onInput=${set("tags")} /><//>
      <fieldset class="tools">
        <legend>Tools</legend>
        ${tools.map((t) => html`<label class="check" key=${toolName(t)}>
          <input type="checkbox" name="tool" value=${toolName(t)} checked=${v.tools.has(toolName(t))} onChange=${(e) => tick(toolName(t), e.currentTarget.checked)} />
          <code>${toolName(t)}</code>${t.description && html`<span class="muted"> ${t.description}</span>`}
        </label>`)}
        <${Field} label=${tools.length ? "Other tool names (comma-separated)" : "Tool names (comma-separated)"}>
          <input name="moreTools" value=${v.moreTools} onInput=${set("moreTools")} placeholder="get_current_time, read_file" />
        <//>
      </fieldset>
      <label class="check"><input type="checkbox" name="enabled" checked=${v.enabled} onChange=${(e) => { const on = e.currentTarget.checked; setV((s) => ({ ...s, enabled: on })); }} /> Enabled</label>
      <div class="actions">
        <button type="button" class="btn" onClick=${close}>Cancel</button>
        <button type="submit" class="btn btn-primary" name="save" disabled=${busy}>${agent ? "Save" : "Create agent"}</button>
      </div>
    </form>
  </section>`;
}
