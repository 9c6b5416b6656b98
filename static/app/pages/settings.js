// Settings (global admin): system settings and language, feature flags with what each gates, the multimodal
// sidecar, the embedded model's status and where the data lives. Errors from the API land next to their field.
import { get, post, put, seg } from "../api.js";
import { NAV } from "../nav.js";
import { flagsChanged } from "../shell.js";
import { html, useMemo, useState } from "../ui.js";
import { Check, Field, PageFrame, Panel, Table, fieldErrors, toast, toastError, useLoad } from "../components/index.js";

const LANGUAGES = [["en-US", "English"], ["zh-CN", "中文 (简体)"]];

/** What each flag gates on the server, beyond the console pages that name it in nav.js. */
const GATES = {
  talk_mode: "the talk WebSocket (voice conversations)",
  wiki: "knowledge bases and the wiki tools",
  dreaming: "the nightly memory consolidation loop",
  workflows: "workflow editing and runs; workflow steps in the approvals inbox",
  channels: "external messaging channels (webhooks, bots)",
  skills_curator: "the autonomous skill curator",
  team_runs: "multi-agent team runs",
};

export default function Settings() {
  const state = useLoad(async () => {
    const [settings, language, flags, catalog, info] = await Promise.all([
      get("/settings"), get("/settings/language"), get("/feature-flags"), get("/models/catalog"), get("/system/info"),
    ]);
    return { settings, language: language.language, flags, catalog, info };
  }, []);
  return html`<${PageFrame} title="Settings" subtitle="Server-wide settings; they apply to every workspace" state=${state}>
    ${(d) => html`
      <${General} settings=${d.settings} language=${d.language} onSaved=${() => state.reload(true)} />
      <${Flags} flags=${d.flags} onSaved=${() => state.reload(true)} />
      <${Sidecar} sidecar=${d.settings.sidecar} catalog=${d.catalog} onSaved=${() => state.reload(true)} />
      <${SystemInfo} info=${d.info} />
    `}
  <//>`;
}

function General({ settings, language, onSaved }) {
  const [v, setV] = useState({
    siteName: settings.siteName || "", timezone: settings.timezone || "UTC", welcomeMessage: settings.welcomeMessage || "", language,
  });
  const [errors, setErrors] = useState({});
  const zones = useMemo(() => (Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : []), []);
  const set = (k) => (e) => { setV({ ...v, [k]: e.currentTarget.value }); setErrors({ ...errors, [k]: undefined }); };
  const save = async (e) => {
    e.preventDefault();
    try {
      await put("/settings", { siteName: v.siteName, timezone: v.timezone.trim(), welcomeMessage: v.welcomeMessage });
      if (v.language !== language) await put("/settings/language", { language: v.language });
      toast("Settings saved", "ok");
      setErrors({});
      onSaved();
    } catch (err) { setErrors(fieldErrors(err, ["siteName", "timezone", "welcomeMessage", "language"])); }
  };
  return html`<${Panel} title="General" id="general">
    <form class="stack" onSubmit=${save} novalidate>
      ${errors._ && html`<p class="form-error" role="alert">${errors._}</p>`}
      <div class="form-grid">
        <${Field} label="Site name" error=${errors.siteName}><input value=${v.siteName} maxlength="2000" onInput=${set("siteName")} /><//>
        <${Field} label="Time zone" hint="IANA name, e.g. Europe/Berlin; cron schedules use it" error=${errors.timezone}>
          <input value=${v.timezone} list="tz-list" onInput=${set("timezone")} autocomplete="off" />
        <//>
        <${Field} label="Language" error=${errors.language}>
          <select value=${v.language} onChange=${set("language")}>${LANGUAGES.map(([id, label]) => html`<option value=${id}>${label}</option>`)}</select>
        <//>
      </div>
      <datalist id="tz-list">${zones.map((z) => html`<option value=${z} />`)}</datalist>
      <${Field} label="Welcome message" hint="shown to new users" error=${errors.welcomeMessage}>
        <textarea rows="2" value=${v.welcomeMessage} onInput=${set("welcomeMessage")}></textarea>
      <//>
      <div class="actions"><button type="submit" class="btn btn-primary">Save settings</button></div>
    </form>
  <//>`;
}

function Flags({ flags, onSaved }) {
  const toggle = async (f, enabled) => {
    try {
      await put(`/feature-flags/${seg(f.key)}`, { enabled });
      toast(`${f.description || f.key} ${enabled ? "on" : "off"}`, "ok");
      flagsChanged();
    } catch (err) { toastError(err); }
    onSaved();
  };
  return html`<${Panel} title="Feature flags" id="flags">
    <${Table} label="Feature flags" rows=${flags} rowKey=${(f) => f.key}
      columns=${[
        { key: "key", label: "Feature", render: (f) => html`<strong>${f.description || f.key}</strong><br /><code class="small">${f.key}</code>` },
        { key: "gates", label: "Switches off", render: (f) => {
          const pages = NAV.filter((p) => p.flag === f.key).map((p) => p.label);
          return html`${GATES[f.key] || "—"}${pages.length ? html`<br /><span class="muted small">console: ${pages.join(", ")}</span>` : ""}`;
        } },
        { key: "enabled", label: "On", render: (f) => html`<input type="checkbox" checked=${f.enabled}
            aria-label=${`Feature ${f.key}`} onChange=${(e) => toggle(f, e.currentTarget.checked)} />` },
      ]} />
  <//>`;
}

function Sidecar({ sidecar, catalog, onSaved }) {
  const [v, setV] = useState({ enabled: !!sidecar?.enabled, provider: sidecar?.provider || "", modelName: sidecar?.modelName || "" });
  const [errors, setErrors] = useState({});
  const providers = (catalog || []).filter((p) => p.enabled);
  const models = (providers.find((p) => p.id === v.provider)?.models || []).filter((m) => m.modelType !== "embedding");
  const save = async (e) => {
    e.preventDefault();
    try {
      await put("/settings/sidecar", { enabled: v.enabled, provider: v.provider || null, modelName: v.modelName || null });
      toast("Sidecar saved", "ok");
      setErrors({});
      onSaved();
    } catch (err) { setErrors(fieldErrors(err, ["enabled", "provider", "modelName"])); }
  };
  return html`<${Panel} title="Multimodal sidecar" id="sidecar">
    <p class="muted">A vision model that describes images for chat models that only read text.</p>
    <form class="stack" onSubmit=${save} novalidate>
      ${errors._ && html`<p class="form-error" role="alert">${errors._}</p>`}
      <${Check} label="Use a sidecar for images" checked=${v.enabled} onChange=${(enabled) => { setV({ ...v, enabled }); setErrors({}); }} />
      <div class="form-grid">
        <${Field} label="Sidecar provider" error=${errors.provider}>
          <select value=${v.provider} onChange=${(e) => { setV({ ...v, provider: e.currentTarget.value, modelName: "" }); setErrors({}); }}>
            <option value="">none</option>
            ${providers.map((p) => html`<option value=${p.id}>${p.name}</option>`)}
          </select>
        <//>
        <${Field} label="Sidecar model" error=${errors.modelName}>
          <select value=${v.modelName} onChange=${(e) => { setV({ ...v, modelName: e.currentTarget.value }); setErrors({}); }}>
            <option value="">none</option>
            ${models.map((m) => html`<option value=${m.modelName}>${m.displayName || m.modelName}${(m.modalities || "").includes("image") ? " (vision)" : ""}${m.label ? ` (${m.label})` : ""}</option>`)}
          </select>
        <//>
      </div>
      <div class="actions"><button type="submit" class="btn btn-primary">Save sidecar</button></div>
    </form>
  <//>`;
}

function SystemInfo({ info }) {
  const m = info.localModel;
  const [probe, setProbe] = useState(null);
  const test = async () => {
    setProbe("Testing…");
    try {
      const r = await post("/llm/provider-pool/local/reprobe");
      setProbe(r.probe?.success ? "The embedded model answered." : `The embedded model did not answer: ${r.probe?.message || r.lastError || "unknown error"}`);
    } catch (err) { setProbe(err.message); }
  };
  const yes = (b) => html`<span class=${`pill ${b ? "ok" : "bad"}`}>${b ? "yes" : "no"}</span>`;
  return html`<div class="two-col">
    <${Panel} title="Embedded model" id="local-model">
      <dl class="detail-list">
        <dt>Runtime (llama-cpp) installed</dt><dd>${yes(m.runtimeInstalled)}</dd>
        <dt>Chat model file</dt><dd>${m.chatModelPath ? html`<code>${m.chatModelPath}</code>` : "none found"} ${yes(m.chatModelFound)}</dd>
        <dt>Loaded in memory</dt><dd>${m.chatModelLoaded ? "yes" : "not yet (loads on first use)"}</dd>
        <dt>Embedding model</dt><dd>${m.embeddingModelPath ? html`<code>${m.embeddingModelPath}</code>` : "none found"} ${yes(m.embeddingModelFound)}</dd>
      </dl>
      <div class="actions"><button type="button" class="btn" onClick=${test}>Test the embedded model</button></div>
      ${probe && html`<p role="status">${probe}</p>`}
    <//>
    <${Panel} title="Data directory" id="paths">
      <dl class="detail-list">
        <dt>Version</dt><dd>${info.version}</dd>
        <dt>Data directory</dt><dd><code>${info.dataDir}</code></dd>
        <dt>Database</dt><dd><code>${info.databasePath}</code></dd>
        ${info.folders.map((f) => html`<dt>${f.name}/</dt><dd><code>${f.path}</code></dd>`)}
      </dl>
    <//>
  </div>`;
}
