// Models: providers (enable, disable, configure, test), OpenAI-compatible servers, discovery, default.
import { get, post, put, seg } from "../api.js";
import { html, useState } from "../ui.js";
import { Dialog, Field, PageFrame, formDialog, toast, toastError, useLoad, useSession } from "../components/index.js";

function slug(text) {
  return text.toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[^a-z0-9]+|-+$/g, "").slice(0, 60) || "server";
}

export default function Models() {
  const session = useSession();
  return html`<${PageFrame} title="Models">
    ${session.isGlobalAdmin ? html`<${Manage} />` : html`<${ReadOnly} />`}
  <//>`;
}

/** What a member or viewer sees: the enabled models, no controls (every change is a global admin's). */
function ReadOnly() {
  const state = useLoad(() => get("/models/enabled").catch(() => []), []);
  return html`<div class="provider-list"><section class="panel">
    <h2>Available models</h2>
    <p class="muted">Only global admins can change providers.</p>
    <ul class="plain">${(state.data || []).map((m) => html`<li key=${m.id}>
      <code>${m.displayName || m.modelName}</code> · ${m.providerId}${m.isDefault && html`<span class="badge">default</span>`}
    </li>`)}</ul>
  </section></div>`;
}

function Manage() {
  const catalog = useLoad(() => get("/models/catalog"), [], { toastErrors: true });
  // The discovery dialog's state: {providerId, models, chosen: Set of model names}, or null while closed.
  const [found, setFound] = useState(null);
  const refresh = () => catalog.reload(true);

  async function discover(providerId) {
    let answer;
    try { answer = await post(`/models/${seg(providerId)}/discover`); } catch (err) { toastError(err); return; }
    const fresh = answer?.newModels || [];
    if (!fresh.length) {
      toast(answer?.totalDiscovered ? "Every model is already added" : "The server lists no models");
      return;
    }
    // Embedding models start unticked: most people add a server for chat.
    setFound({ providerId, models: fresh, chosen: new Set(fresh.filter((m) => m.modelType !== "embedding").map((m) => m.modelName)) });
  }

  const list = catalog.data || [];
  // The user's own servers and what is enabled come first; the presets nobody turned on wait folded below.
  const inUse = list.filter((p) => p.enabled || p.isCustom);
  const presets = list.filter((p) => !(p.enabled || p.isCustom));
  const card = (p) => html`<${ProviderCard} key=${p.id} p=${p} refresh=${refresh} discover=${discover} />`;
  return html`
    <${AddServer} refresh=${refresh} discover=${discover} />
    <div class="provider-list">
      ${inUse.map(card)}
      ${presets.length > 0 && html`<details class="panel presets">
        <summary>More providers you can enable (${presets.length}): ${presets.map((p) => p.name).join(", ")}</summary>
        ${presets.map(card)}
      </details>`}
    </div>
    ${found && html`<${DiscoverDialog} found=${found} setFound=${setFound} refresh=${refresh} />`}`;
}

function AddServer({ refresh, discover }) {
  const [busy, setBusy] = useState(false);
  async function submit(e) {
    e.preventDefault();
    const form = e.currentTarget;
    const el = form.elements;
    const name = el.name.value.trim();
    setBusy(true);
    try {
      const provider = await post("/models/custom-providers", {
        providerId: slug(name), name, baseUrl: el.baseUrl.value.trim(), apiKey: el.apiKey.value || undefined, protocol: el.protocol.value,
      });
      form.reset();
      toast(`Added ${name}`);
      await refresh();
      await discover(provider?.id || slug(name));
    } catch (err) {
      toastError(err);
    } finally {
      setBusy(false);
    }
  }
  return html`<form class="panel add-provider" onSubmit=${submit}>
    <h2>Add a model server</h2>
    <p class="muted">Ollama (its own API: context length, keep-alive), or any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, LM Studio, OpenRouter and others.</p>
    <div class="form-grid">
      <${Field} label="Name"><input name="name" required placeholder="My server" /><//>
      <${Field} label="Protocol"><select name="protocol">
        <option value="openai">OpenAI-compatible (…/v1)</option>
        <option value="ollama">Ollama (http://host:11434)</option>
      </select><//>
      <${Field} label="Base URL"><input name="baseUrl" type="url" required placeholder="http://192.168.1.10:11434/v1" /><//>
      <${Field} label="API key (optional)"><input name="apiKey" type="password" autocomplete="off" /><//>
    </div>
    <div class="actions"><button type="submit" name="add" class="btn btn-primary" disabled=${busy}>Add and discover models</button></div>
  </form>`;
}

function ProviderCard({ p, refresh, discover }) {
  const models = p.models || [];
  const verb = p.enabled ? "Disable" : "Enable";
  const act = (fn, done) => async () => {
    try {
      const result = await fn();
      if (done) toast(typeof done === "function" ? done(result) : done);
      await refresh();
    } catch (err) { toastError(err); }
  };
  async function test() {
    toast(`Testing ${p.name}…`);
    try {
      const r = await post(`/models/${seg(p.id)}/test-connection`);
      if (r?.success === false) toast(`${p.name}: ${r.message || "failed"}`, "error");
      else toast(`${p.name}: connection OK`, "ok");
    } catch (err) { toastError(err); }
  }
  return html`<section class=${"panel provider" + (p.enabled ? "" : " disabled")} data-provider=${p.id}>
    <div class="card-head">
      <h2 class="provider-name">${p.name}</h2>
      <span class="badge">${p.protocol}</span>
      ${p.enabled ? html`<span class="badge ok">enabled</span>` : html`<span class="badge">disabled</span>`}
      <span class="grow"></span>
      <button type="button" class="btn" aria-label=${`${verb} ${p.name}`}
        onClick=${act(() => post(`/models/${seg(p.id)}/${p.enabled ? "disable" : "enable"}`))}>${verb}</button>
    </div>
    ${p.baseUrl && html`<div class="muted mono">${p.baseUrl}</div>`}
    ${models.length ? html`<table class="models-table">
      <thead><tr><th>Model</th><th>Type</th><th></th></tr></thead>
      <tbody>${models.map((m) => html`<tr key=${m.id} data-model=${m.modelName}>
        <td><code>${m.displayName || m.modelName}</code>${m.label && html`<small class="muted"> ${m.label}</small>`}</td>
        <td>${m.modelType}</td>
        <td class="right">${m.isDefault
          ? html`<span class="badge ok">default</span>`
          : m.modelType === "chat" && p.enabled && html`<button type="button" class="btn btn-small" aria-label=${`Make ${m.modelName} the default`}
              onClick=${act(() => post(`/models/${seg(m.id)}/default`), `${m.displayName || m.modelName} is now the default`)}>Set default</button>`}</td>
      </tr>`)}</tbody>
    </table>` : html`<p class="muted">No models added yet.</p>`}
    <div class="actions">
      <button type="button" class="btn" onClick=${test}>Test connection</button>
      ${p.protocol !== "local" && html`<button type="button" class="btn" onClick=${() => discover(p.id)}>Discover models</button>`}
      ${p.protocol !== "local" && html`<button type="button" class="btn" onClick=${() => configure(p, refresh)}>Configure</button>`}
    </div>
  </section>`;
}

async function configure(p, refresh) {
  const values = await formDialog({
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
    await refresh();
  } catch (err) { toastError(err); }
}

/** The server's models not yet added, each a checkbox; "Add selected" adds the ticked ones. */
function DiscoverDialog({ found, setFound, refresh }) {
  const [busy, setBusy] = useState(false);
  const close = () => setFound(null);
  const toggle = (name, on) => {
    const chosen = new Set(found.chosen);
    if (on) chosen.add(name); else chosen.delete(name);
    setFound({ ...found, chosen });
  };
  async function submit(e) {
    e.preventDefault();
    const names = found.models.map((m) => m.modelName).filter((n) => found.chosen.has(n));
    if (!names.length) { close(); return; }
    setBusy(true);
    try {
      const added = await post(`/models/${seg(found.providerId)}/discover/apply`, { modelNames: names });
      toast(`Added ${added?.length ?? names.length} model(s)`);
      close();
      await refresh();
    } catch (err) {
      toastError(err);
      setBusy(false);
    }
  }
  return html`<${Dialog} title="Add discovered models" onClose=${close}>
    <form method="dialog" class="stack" onSubmit=${submit}>
      <div class="discover-list">${found.models.map((m) => html`<label class="check" key=${m.modelName}>
        <input type="checkbox" checked=${found.chosen.has(m.modelName)} onChange=${(e) => toggle(m.modelName, e.currentTarget.checked)} />
        <code>${m.modelName}</code><span class="muted"> ${m.modelType || "chat"}</span>
      </label>`)}</div>
      <div class="actions">
        <button type="button" class="btn" onClick=${close}>Cancel</button>
        <button type="submit" class="btn btn-primary" disabled=${busy}>Add selected</button>
      </div>
    </form>
  <//>`;
}
