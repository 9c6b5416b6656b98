// Models: providers (enable, disable, configure, test), OpenAI-compatible servers, discovery, default.
import { get, post, put, seg, session } from "../api.js";
import { field, h, mount, modal, showError, toast } from "../dom.js";

function slug(text) {
  return text.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[^a-z0-9]+|-+$/g, "").slice(0, 60) || "server";
}

export class ModelsView {
  constructor() {
    this.providers = h("div", { class: "provider-list" });
    this.addForm = this.buildAddForm();
    this.el = h("div", { class: "page-inner" },
      h("div", { class: "page-head" }, h("h1", { text: "Models" })),
      session.isAdmin ? this.addForm : null,
      this.providers);
  }

  async init() {
    await this.refresh();
  }

  async refresh() {
    if (!session.isAdmin) return this.renderReadOnly();
    let catalog;
    try { catalog = await get("/models/catalog"); } catch (err) { showError(err); return; }
    // The user's own servers and what is enabled come first; the presets nobody turned on wait folded below.
    const inUse = (catalog || []).filter((p) => p.enabled || p.isCustom);
    const presets = (catalog || []).filter((p) => !(p.enabled || p.isCustom));
    mount(this.providers,
      inUse.map((p) => this.providerCard(p)),
      presets.length ? h("details", { class: "panel presets" },
        h("summary", { text: `More providers you can enable (${presets.length}): ${presets.map((p) => p.name).join(", ")}` }),
        presets.map((p) => this.providerCard(p))) : null);
  }

  async renderReadOnly() {
    const models = await get("/models/enabled").catch(() => []);
    mount(this.providers, h("section", { class: "panel" },
      h("h2", { text: "Available models" }),
      h("p", { class: "muted", text: "Only global admins can change providers." }),
      h("ul", { class: "plain" }, (models || []).map((m) => h("li", {},
        h("code", { text: m.displayName || m.modelName }), ` · ${m.providerId}`, m.isDefault ? h("span", { class: "badge", text: "default" }) : null)))));
  }

  buildAddForm() {
    const form = h("form", { class: "panel add-provider", onsubmit: (e) => { e.preventDefault(); this.addServer(form); } },
      h("h2", { text: "Add a model server" }),
      h("p", { class: "muted", text: "Ollama (its own API: context length, keep-alive), or any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, LM Studio, OpenRouter and others." }),
      h("div", { class: "form-grid" },
        field("Name", h("input", { name: "name", required: true, placeholder: "My server" })),
        field("Protocol", h("select", { name: "protocol" },
          h("option", { value: "openai", text: "OpenAI-compatible (…/v1)" }),
          h("option", { value: "ollama", text: "Ollama (http://host:11434)" }))),
        field("Base URL", h("input", { name: "baseUrl", type: "url", required: true, placeholder: "http://192.168.1.10:11434/v1" })),
        field("API key (optional)", h("input", { name: "apiKey", type: "password", autocomplete: "off" }))),
      h("div", { class: "actions" }, h("button", { type: "submit", name: "add", class: "btn btn-primary", text: "Add and discover models" })));
    return form;
  }

  async addServer(form) {
    const el = form.elements;
    const name = el.name.value.trim();
    el.add.disabled = true;
    try {
      const provider = await post("/models/custom-providers", {
        providerId: slug(name), name, baseUrl: el.baseUrl.value.trim(), apiKey: el.apiKey.value || undefined, protocol: el.protocol.value,
      });
      form.reset();
      toast(`Added ${name}`);
      await this.refresh();
      await this.discover(provider?.id || slug(name));
    } catch (err) {
      showError(err);
    } finally {
      el.add.disabled = false;
    }
  }

  providerCard(p) {
    const chat = (p.models || []);
    return h("section", { class: "panel provider" + (p.enabled ? "" : " disabled"), dataset: { provider: p.id } },
      h("div", { class: "card-head" },
        h("h2", { class: "provider-name", text: p.name }),
        h("span", { class: "badge", text: p.protocol }),
        p.enabled ? h("span", { class: "badge ok", text: "enabled" }) : h("span", { class: "badge", text: "disabled" }),
        h("span", { class: "grow" }),
        h("button", { type: "button", class: "btn", text: p.enabled ? "Disable" : "Enable", "aria-label": `${p.enabled ? "Disable" : "Enable"} ${p.name}`, onclick: () => this.toggle(p) })),
      p.baseUrl ? h("div", { class: "muted mono", text: p.baseUrl }) : null,
      chat.length
        ? h("table", { class: "models-table" },
          h("thead", {}, h("tr", {}, h("th", { text: "Model" }), h("th", { text: "Type" }), h("th", { text: "" }))),
          h("tbody", {}, chat.map((m) => h("tr", { dataset: { model: m.modelName } },
            h("td", {}, h("code", { text: m.displayName || m.modelName }), m.label ? h("small", { class: "muted", text: ` ${m.label}` }) : null),
            h("td", { text: m.modelType }),
            h("td", { class: "right" }, m.isDefault
              ? h("span", { class: "badge ok", text: "default" })
              : m.modelType === "chat" && p.enabled ? h("button", { type: "button", class: "btn btn-small", text: "Set default", "aria-label": `Make ${m.modelName} the default`, onclick: () => this.makeDefault(m) }) : null)))))
        : h("p", { class: "muted", text: "No models added yet." }),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "btn", text: "Test connection", onclick: () => this.test(p) }),
        p.protocol !== "local" ? h("button", { type: "button", class: "btn", text: "Discover models", onclick: () => this.discover(p.id) }) : null,
        p.protocol !== "local" ? h("button", { type: "button", class: "btn", text: "Configure", onclick: () => this.configure(p) }) : null));
  }

  async toggle(p) {
    try {
      await post(`/models/${seg(p.id)}/${p.enabled ? "disable" : "enable"}`);
      await this.refresh();
    } catch (err) { showError(err); }
  }

  async makeDefault(m) {
    try {
      await post(`/models/${seg(m.id)}/default`);
      toast(`${m.displayName || m.modelName} is now the default`);
      await this.refresh();
    } catch (err) { showError(err); }
  }

  async test(p) {
    toast(`Testing ${p.name}…`);
    try {
      const r = await post(`/models/${seg(p.id)}/test-connection`);
      if (r?.success === false) toast(`${p.name}: ${r.message || "failed"}`, "error");
      else toast(`${p.name}: connection OK`, "ok");
    } catch (err) { showError(err); }
  }

  async configure(p) {
    const values = await modal({
      title: `Configure ${p.name}`, submit: "Save",
      fields: [
        { name: "name", label: "Name", value: p.name },
        { name: "baseUrl", label: "Base URL", value: p.baseUrl || "" },
        { name: "apiKey", label: "API key (leave empty to keep)", type: "password", value: "" },
        // Ollama's own settings: how long a model stays loaded, and the context length asked for
        ...(p.protocol === "ollama" ? [
          { name: "keepAlive", label: "Keep loaded (5m, 1h, -1 = always; empty: Ollama's default)", value: p.keepAlive ?? "" },
          { name: "numCtx", label: "Context length (num_ctx; empty: the server default)", type: "number", value: p.numCtx ?? "" },
        ] : []),
      ],
    });
    if (!values) return;
    const body = { name: values.name.trim() || p.name, baseUrl: values.baseUrl.trim() };
    if (values.apiKey) body.apiKey = values.apiKey;
    if (p.protocol === "ollama") {
      body.keepAlive = values.keepAlive.trim() || null;
      body.numCtx = values.numCtx.trim() ? Number(values.numCtx) : null;
    }
    try {
      await put(`/models/${seg(p.id)}/config`, body);
      toast("Saved");
      await this.refresh();
    } catch (err) { showError(err); }
  }

  /** List the server's models and add the chosen ones. */
  async discover(providerId) {
    let found;
    try { found = await post(`/models/${seg(providerId)}/discover`); } catch (err) { showError(err); return; }
    const fresh = found?.newModels || [];
    if (!fresh.length) {
      toast(found?.totalDiscovered ? "Every model is already added" : "The server lists no models");
      return;
    }
    const boxes = fresh.map((m) => h("label", { class: "check" },
      h("input", { type: "checkbox", value: m.modelName, checked: m.modelType !== "embedding" }),
      h("code", { text: m.modelName }), h("span", { class: "muted", text: ` ${m.modelType || "chat"}` })));
    const result = await modal({ title: "Add discovered models", body: h("div", { class: "discover-list" }, boxes), submit: "Add selected" });
    if (!result) return;
    const names = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
    if (!names.length) return;
    try {
      const added = await post(`/models/${seg(providerId)}/discover/apply`, { modelNames: names });
      toast(`Added ${added?.length ?? names.length} model(s)`);
      await this.refresh();
    } catch (err) { showError(err); }
  }
}
