// Agents: list, create, edit (prompt, model, type, tools, thinking level, icon), delete, templates.
import { del, get, post, put, seg } from "../api.js";
import { confirmAction, field, h, mount, showError, toast } from "../dom.js";
import { iconText } from "../chat/list.js";

const THINKING = ["", "off", "low", "medium", "high", "max"];
const BLANK = { name: "", description: "", icon: "🤖", agentType: "react", systemPrompt: "You are a helpful assistant.", modelName: "", maxIterations: 10, defaultThinkingLevel: "", enabled: true, tags: "", toolsDisabled: false };

function toolName(t) {
  return typeof t === "string" ? t : t?.name || t?.toolName || "";
}

export class AgentsView {
  constructor() {
    this.agents = [];
    this.models = [];
    this.tools = [];
    this.list = h("div", { class: "card-grid", "aria-label": "Agents" });
    this.templates = h("div", { class: "template-row" });
    this.editor = h("section", { class: "panel editor", hidden: true, "aria-label": "Agent editor" });
    this.el = h("div", { class: "page-inner" },
      h("div", { class: "page-head" },
        h("h1", { text: "Agents" }),
        h("button", { type: "button", class: "btn btn-primary new-agent", text: "+ New agent", onclick: () => this.edit(null) })),
      this.editor,
      this.list,
      h("h2", { class: "section-title", text: "Templates" }),
      this.templates);
    this.setupHost = h("div", { class: "agent-setup-host" });
    this.el.append(this.setupHost);
  }

  /** #/agents/<id>/<tab>: one agent's whole setup in tabs (skills, tools, KBs, memory, channels, cron). */
  async update(args = []) {
    const id = args[0];
    const seq = (this.setupSeq = (this.setupSeq || 0) + 1);
    this.el.classList.toggle("show-setup", Boolean(id));
    const [{ AgentSetup }, { html, render }] = await Promise.all([import("./builder/agent_setup.js"), import("../ui.js")]);
    if (seq !== this.setupSeq) return;
    render(id ? html`<${AgentSetup} id=${id} tab=${args[1]} />` : null, this.setupHost);
    if (!id && this.shownSetup) await this.refresh();
    this.shownSetup = Boolean(id);
  }

  destroy() {
    import("../ui.js").then(({ render }) => render(null, this.setupHost));
  }

  async init() {
    const [models, tools, templates] = await Promise.all([
      get("/models/enabled").catch(() => []),
      get("/tools/available").catch(() => []),
      get("/templates").catch(() => []),
    ]);
    this.models = (models || []).filter((m) => !m.modelType || m.modelType === "chat");
    this.tools = (Array.isArray(tools) ? tools : []).filter((t) => toolName(t));
    this.renderTemplates(Array.isArray(templates) ? templates : []);
    await this.refresh();
  }

  async refresh() {
    try {
      this.agents = await get("/agents") || [];
    } catch (err) {
      showError(err);
      return;
    }
    if (!this.agents.length) {
      mount(this.list, h("p", { class: "muted", text: "No agents yet. Create one or start from a template." }));
      return;
    }
    mount(this.list, this.agents.map((a) => h("article", { class: "card agent-card", dataset: { id: a.id } },
      h("div", { class: "card-head" },
        h("span", { class: "agent-icon", "aria-hidden": "true", text: iconText(a.icon) }),
        h("h3", { class: "agent-name", text: a.name }),
        a.enabled === false ? h("span", { class: "badge", text: "disabled" }) : null),
      h("p", { class: "muted clamp", text: a.description || a.systemPrompt || "" }),
      h("div", { class: "card-meta", text: [a.agentType === "plan_execute" ? "Plan-Execute" : "ReAct", a.modelName || "default model"].join(" · ") }),
      h("div", { class: "actions" },
        h("a", { class: "btn", href: "#/chat", text: "Chat", onclick: () => localStorage.setItem("ap.lastAgent", a.id) }),
        h("a", { class: "btn", href: `#/agents/${a.id}`, text: "Setup", "aria-label": `Setup of ${a.name}` }),
        h("button", { type: "button", class: "btn", text: "Edit", "aria-label": `Edit ${a.name}`, onclick: () => this.edit(a) }),
        h("button", { type: "button", class: "btn btn-danger", text: "Delete", "aria-label": `Delete ${a.name}`, onclick: () => this.remove(a) })))));
  }

  renderTemplates(templates) {
    if (!templates.length) {
      mount(this.templates, h("p", { class: "muted", text: "No templates available." }));
      return;
    }
    mount(this.templates, templates.map((t) => h("div", { class: "card template-card" },
      h("div", { class: "card-head" }, h("span", { class: "agent-icon", "aria-hidden": "true", text: iconText(t.icon) }), h("h3", { text: t.name })),
      h("p", { class: "muted clamp", text: t.description || "" }),
      h("button", { type: "button", class: "btn", text: "Use template", "aria-label": `Use template ${t.name}`, onclick: () => this.apply(t) }))));
  }

  async apply(template) {
    try {
      const agent = await post(`/templates/${seg(template.id)}/apply`, {});
      toast(`Created ${agent?.name || template.name}`);
      await this.refresh();
    } catch (err) { showError(err); }
  }

  async remove(agent) {
    if (!(await confirmAction("Delete agent", `Delete the agent “${agent.name}”?`))) return;
    try {
      await del(`/agents/${seg(agent.id)}`);
      toast("Agent deleted");
      this.editor.hidden = true;
      await this.refresh();
    } catch (err) { showError(err); }
  }

  async edit(agent) {
    const a = { ...BLANK, ...(agent || {}) };
    let bound = [];
    if (agent) {
      try { bound = ((await get(`/agents/${seg(agent.id)}/tools`)) || []).map((row) => row.toolName); } catch { bound = []; }
    }
    const f = (name, label, input) => field(label, input);
    const key = (provider, name) => JSON.stringify([provider || "", name || ""]);
    const current = a.modelName ? key(a.modelProvider, a.modelName) : "";
    const modelOptions = [h("option", { value: "", text: "Global default" }),
      ...this.models.map((m) => h("option", { value: key(m.providerId, m.modelName), text: `${m.displayName || m.modelName} · ${m.providerId}${m.label ? ` (${m.label})` : ""}` }))];
    if (current && !this.models.some((m) => key(m.providerId, m.modelName) === current)) {
      modelOptions.push(h("option", { value: current, text: a.modelName }));
    }
    const known = new Set(this.tools.map(toolName));
    const extra = bound.filter((t) => !known.has(t));
    const form = h("form", { class: "agent-form", onsubmit: (e) => { e.preventDefault(); this.save(agent, form); } },
      h("h2", { text: agent ? `Edit ${a.name}` : "New agent" }),
      h("div", { class: "form-grid" },
        f("name", "Name", h("input", { name: "name", value: a.name, required: true, maxlength: 100 })),
        f("icon", "Icon (emoji)", h("input", { name: "icon", value: a.icon || "", maxlength: 16 })),
        f("agentType", "Type", h("select", { name: "agentType" },
          h("option", { value: "react", text: "ReAct (tools in a loop)", selected: a.agentType === "react" }),
          h("option", { value: "plan_execute", text: "Plan-Execute", selected: a.agentType === "plan_execute" }))),
        f("model", "Model", h("select", { name: "model", value: current }, modelOptions)),
        f("defaultThinkingLevel", "Thinking level", h("select", { name: "defaultThinkingLevel" },
          THINKING.map((t) => h("option", { value: t, text: t || "Model default", selected: (a.defaultThinkingLevel || "") === t })))),
        f("maxIterations", "Max iterations", h("input", { name: "maxIterations", type: "number", min: 1, max: 100, value: a.maxIterations ?? 10 }))),
      f("description", "Description", h("input", { name: "description", value: a.description || "" })),
      f("systemPrompt", "System prompt", h("textarea", { name: "systemPrompt", rows: 6, value: a.systemPrompt || "" })),
      f("tags", "Tags (comma-separated)", h("input", { name: "tags", value: a.tags || "" })),
      h("fieldset", { class: "tools" },
        h("legend", { text: "Tools" }),
        this.tools.length
          ? this.tools.map((t) => h("label", { class: "check" },
            h("input", { type: "checkbox", name: "tool", value: toolName(t), checked: bound.includes(toolName(t)) }),
            h("code", { text: toolName(t) }),
            t.description ? h("span", { class: "muted", text: ` ${t.description}` }) : null))
          : null,
        f("moreTools", this.tools.length ? "Other tool names (comma-separated)" : "Tool names (comma-separated)",
          h("input", { name: "moreTools", value: extra.join(", "), placeholder: "get_current_time, read_file" }))),
      h("label", { class: "check" }, h("input", { type: "checkbox", name: "enabled", checked: a.enabled !== false }), " Enabled"),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "btn", text: "Cancel", onclick: () => { this.editor.hidden = true; } }),
        h("button", { type: "submit", class: "btn btn-primary", name: "save", text: agent ? "Save" : "Create agent" })));
    mount(this.editor, form);
    this.editor.hidden = false;
    form.elements.name.focus();
    this.editor.scrollIntoView({ block: "start" });
  }

  async save(agent, form) {
    const el = form.elements;
    const body = {
      name: el.name.value.trim(), icon: el.icon.value.trim(), agentType: el.agentType.value,
      modelProvider: null, modelName: "", defaultThinkingLevel: el.defaultThinkingLevel.value || null,
      maxIterations: Number(el.maxIterations.value) || 10, description: el.description.value,
      systemPrompt: el.systemPrompt.value, tags: el.tags.value, enabled: el.enabled.checked,
    };
    if (el.model.value) [body.modelProvider, body.modelName] = JSON.parse(el.model.value);
    body.modelProvider = body.modelProvider || null;
    const tools = [
      ...Array.from(form.querySelectorAll("input[name=tool]:checked"), (c) => c.value),
      ...el.moreTools.value.split(",").map((t) => t.trim()).filter(Boolean),
    ];
    el.save.disabled = true;
    try {
      const saved = agent ? await put(`/agents/${seg(agent.id)}`, body) : await post("/agents", body);
      const id = saved?.id || agent?.id;
      if (id && (agent || tools.length)) await put(`/agents/${seg(id)}/tools`, { toolNames: [...new Set(tools)] });
      toast(agent ? "Agent saved" : "Agent created");
      this.editor.hidden = true;
      await this.refresh();
    } catch (err) {
      showError(err);
    } finally {
      el.save.disabled = false;
    }
  }
}
