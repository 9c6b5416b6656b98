// Provider extras: sign in to the two OAuth vendors (vendor_b's device code shown and polled), each agent's
// preferred provider order (drag or move buttons), and the default embedding model.
import { del, get, post, put, seg } from "../api.js";
import { html, useEffect, useRef, useState } from "../ui.js";
import { Field, PageFrame, Panel, toast, toastError, useLoad, useSession, when } from "../components/index.js";

export default function Providers() {
  const session = useSession();
  return html`<${PageFrame} title="Provider settings" subtitle="Vendor sign-in, the order agents try providers in, and embeddings">
    ${session.isGlobalAdmin && html`<div class="two-col"><${VendorB} /><${VendorA} /></div>`}
    <${Preferences} />
    ${session.isGlobalAdmin && html`<${Embedding} />`}
  <//>`;
}

function StatusLine({ s }) {
  if (!s) return null;
  return html`<p>
    <span class=${`pill ${s.connected ? "ok" : "bad"}`}>${s.connected ? "connected" : "not connected"}</span>
    ${s.expiresAt && html` <span class="muted">token ${s.expired ? "expired" : "expires"} ${when(s.expiresAt)}</span>`}
    ${s.lastError && html`<br /><span class="form-error">${s.lastError}</span>`}
  </p>`;
}

/** The vendor's provider name from its status answer (the id until the status is in). */
const vendorName = (status, id) => status?.providerName || id;

function VendorB() {
  const state = useLoad(() => get("/oauth/vendor_b/status"), []);
  const [device, setDevice] = useState(null); // {sessionId, userCode, verificationUri, interval, status}
  const [paste, setPaste] = useState({ url: "", authorize: null, error: "" });
  const timer = useRef(0);
  useEffect(() => () => clearTimeout(timer.current), []);

  const poll = (session, delay) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(async () => {
      try {
        const r = await post("/oauth/vendor_b/device/poll", { sessionId: session.sessionId });
        if (r.status === "PENDING") {
          poll(session, Math.max(1, r.retryAfterSeconds || r.interval || session.interval) * 1000);
          return;
        }
        setDevice({ ...session, status: r.status, message: r.message });
        if (r.status === "SUCCESS") toast(`${vendorName(state.data, "vendor_b")} connected`, "ok");
        state.reload(true);
      } catch (err) { setDevice({ ...session, status: "FAILED", message: err.message }); }
    }, delay);
  };
  const start = async () => {
    try {
      const d = await post("/oauth/vendor_b/device/start");
      const session = { ...d, status: "PENDING" };
      setDevice(session);
      poll(session, Math.max(1, d.interval) * 1000);
    } catch (err) { toastError(err); }
  };
  const cancel = async () => {
    clearTimeout(timer.current);
    try { await post("/oauth/vendor_b/device/cancel", { sessionId: device.sessionId }); } catch (err) { toastError(err); }
    setDevice(null);
  };
  const authorize = async () => {
    try { setPaste({ ...paste, authorize: await get("/oauth/vendor_b/authorize"), error: "" }); } catch (err) { toastError(err); }
  };
  const finishPaste = async (e) => {
    e.preventDefault();
    try {
      await post("/oauth/vendor_b/callback-paste", { callbackUrl: paste.url.trim() });
      toast(`${vendorName(state.data, "vendor_b")} connected`, "ok");
      setPaste({ url: "", authorize: null, error: "" });
      state.reload(true);
    } catch (err) { setPaste({ ...paste, error: err.message }); }
  };
  const disconnect = async () => {
    try { await del("/oauth/vendor_b/revoke"); toast(`${vendorName(state.data, "vendor_b")} disconnected`, "ok"); } catch (err) { toastError(err); }
    state.reload(true);
  };
  const s = state.data;
  return html`<${Panel} title=${`Sign in to ${vendorName(s, "vendor_b")}`} id="vendor-b">
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    <${StatusLine} s=${s} />
    ${s && !s.configured && html`<p class="muted">Not configured on this server (oauth_vendor_b_* settings in the config file).</p>`}
    ${s?.configured && !device && html`<div class="actions start">
      <button type="button" class="btn btn-primary" onClick=${start}>Connect with a device code</button>
      <button type="button" class="btn" onClick=${authorize}>Sign in in the browser</button>
      ${s.connected && html`<button type="button" class="btn btn-danger" onClick=${disconnect}>Disconnect</button>`}
    </div>`}
    ${device && html`<div class="device-box" role="region" aria-label="Device sign-in">
      ${device.status === "PENDING" ? html`
        <p>Open <a href=${device.verificationUriComplete || device.verificationUri} target="_blank" rel="noopener noreferrer">${device.verificationUri}</a> and enter the code:</p>
        <p class="user-code" aria-label="User code">${device.userCode}</p>
        <p class="muted" role="status">Waiting for you to approve… (checking every ${device.interval} s)</p>
        <div class="actions start"><button type="button" class="btn" onClick=${cancel}>Cancel</button></div>`
      : html`<p role="status" class=${device.status === "SUCCESS" ? "" : "form-error"}>${
        { SUCCESS: "Connected.", DENIED: "The sign-in was denied.", EXPIRED: "The code expired; start again." }[device.status]
        || `Sign-in failed: ${device.message || device.status}`}</p>
        <div class="actions start"><button type="button" class="btn" onClick=${() => setDevice(null)}>Done</button></div>`}
    </div>`}
    ${paste.authorize && html`<form class="stack" onSubmit=${finishPaste}>
      <p><a href=${paste.authorize.authorizeUrl} target="_blank" rel="noopener noreferrer">Open the vendor's sign-in page</a>
        ${paste.authorize.mode === "LOCAL" ? " — this server listens for the redirect and finishes by itself." : ""}</p>
      ${paste.authorize.mode !== "LOCAL" && html`<${Field} label="Callback URL" hint="after signing in, paste the address the browser ended on" error=${paste.error}>
        <input value=${paste.url} onInput=${(e) => setPaste({ ...paste, url: e.currentTarget.value, error: "" })} />
      <//>
      <div class="actions start"><button type="submit" class="btn btn-primary">Finish sign-in</button></div>`}
    </form>`}
  <//>`;
}

function VendorA() {
  const state = useLoad(() => get("/oauth/vendor_a/status"), []);
  const reload = async () => {
    try {
      const r = await post("/oauth/vendor_a/reload");
      toast(r.connected ? `${vendorName(r, "vendor_a")}: credentials loaded` : `${vendorName(r, "vendor_a")}: ${r.lastError || "no credentials"}`, r.connected ? "ok" : "error");
    } catch (err) { toastError(err); }
    state.reload(true);
  };
  const s = state.data;
  return html`<${Panel} title=${`${vendorName(s, "vendor_a")}: credentials on this machine`} id="vendor-a">
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    <${StatusLine} s=${s} />
    ${s && html`<p class="muted">Read from the credential file of the vendor's own tool on this machine${s.path ? html`: <code>${s.path}</code>` : ""}.</p>`}
    <div class="actions start"><button type="button" class="btn" onClick=${reload}>Reload credentials</button></div>
  <//>`;
}

function Preferences() {
  const session = useSession();
  const write = session.can("member");
  const [agentId, setAgentId] = useState("");
  const agents = useLoad(() => get("/agents"), [session.workspace]);
  const providers = useLoad(() => get("/models/enabled"), []);
  const current = agentId || agents.data?.[0]?.id || "";
  const prefs = useLoad(() => (current ? get(`/agents/${seg(current)}/provider-preferences`) : Promise.resolve(null)), [current]);
  const [order, setOrder] = useState(null);
  const [dragging, setDragging] = useState(null);
  useEffect(() => { setOrder(null); }, [current, prefs.data]);

  const known = [...new Set((providers.data || []).map((m) => m.providerId))];
  // rows [{providerId, sortOrder}] (the compat shape) or {providerIds} (the earlier one)
  const saved = Array.isArray(prefs.data)
    ? [...prefs.data].sort((a, b) => (a.sortOrder ?? 0) - (b.sortOrder ?? 0)).map((r) => r.providerId)
    : prefs.data?.providerIds || [];
  const list = order || [...saved.filter((p) => known.includes(p)), ...known.filter((p) => !saved.includes(p))];
  const move = (from, to) => {
    if (to < 0 || to >= list.length || from === to) return;
    const next = [...list];
    const [item] = next.splice(from, 1);
    next.splice(to, 0, item);
    setOrder(next);
  };
  const save = async () => {
    try {
      await put(`/agents/${seg(current)}/provider-preferences`, { providerIds: list });
      toast("Provider order saved", "ok");
      prefs.reload(true);
    } catch (err) { toastError(err); }
  };
  if (agents.data && !agents.data.length) return html`<${Panel} title="Provider order"><p class="muted">No agents yet.</p><//>`;
  return html`<${Panel} title="Provider order" id="provider-order">
    <p class="muted">After its own model, an agent tries these providers from the top; drag to reorder (or use the arrows).</p>
    <${Field} label="Agent">
      <select value=${current} onChange=${(e) => setAgentId(e.currentTarget.value)}>
        ${(agents.data || []).map((a) => html`<option value=${a.id}>${a.name}</option>`)}
      </select>
    <//>
    <ol class="order-list" aria-label="Provider order">
      ${list.map((p, i) => html`<li key=${p} draggable=${write ? "true" : "false"} data-provider=${p}
          class=${dragging === i ? "dragging" : ""}
          onDragStart=${(e) => { setDragging(i); e.dataTransfer.effectAllowed = "move"; e.dataTransfer.setData("text/plain", String(i)); }}
          onDragOver=${(e) => e.preventDefault()}
          onDrop=${(e) => { e.preventDefault(); move(Number(e.dataTransfer.getData("text/plain")), i); setDragging(null); }}
          onDragEnd=${() => setDragging(null)}>
        <span class="grip" aria-hidden="true">⋮⋮</span><span class="grow">${i + 1}. ${p}</span>
        ${write && html`<button type="button" class="icon-btn" aria-label=${`Move ${p} up`} disabled=${i === 0} onClick=${() => move(i, i - 1)}>↑</button>
          <button type="button" class="icon-btn" aria-label=${`Move ${p} down`} disabled=${i === list.length - 1} onClick=${() => move(i, i + 1)}>↓</button>`}
      </li>`)}
    </ol>
    ${write && html`<div class="actions start"><button type="button" class="btn btn-primary" disabled=${!order} onClick=${save}>Save order</button></div>`}
  <//>`;
}

function Embedding() {
  const state = useLoad(async () => {
    const [models, current] = await Promise.all([get("/models/by-type", { type: "embedding" }), get("/models/embedding/default")]);
    return { models, current };
  }, []);
  const [result, setResult] = useState(null);
  const choose = async (modelId) => {
    try {
      await post("/models/embedding/default", { modelId });
      toast("Default embedding model saved", "ok");
    } catch (err) { toastError(err); }
    state.reload(true);
  };
  const test = async () => {
    setResult("Testing…");
    try {
      const r = await post(`/models/embedding/${seg(state.data.current)}/test`, { text: "hello from the console" });
      setResult(r.success ? `OK: ${r.message || ""} (${r.latencyMs} ms)` : `Failed: ${r.message}`);
    } catch (err) { setResult(err.message); }
  };
  const d = state.data;
  return html`<${Panel} title="Embedding model" id="embedding">
    <p class="muted">Used for memory search and knowledge bases.</p>
    ${state.error && html`<p class="form-error" role="alert">${state.error.message}</p>`}
    ${d && (d.models.length ? html`<div class="inline-form">
      <${Field} label="Default embedding model">
        <select value=${d.current || ""} onChange=${(e) => choose(e.currentTarget.value)}>
          ${!d.current && html`<option value="">none</option>`}
          ${d.models.map((m) => html`<option value=${m.id}>${m.displayName || m.modelName} · ${m.providerId}${m.label ? ` (${m.label})` : ""}</option>`)}
        </select>
      <//>
      <button type="button" class="btn" disabled=${!d.current} onClick=${test}>Test</button>
    </div>
    ${result && html`<p role="status">${result}</p>`}` : html`<p class="muted">No embedding model is enabled.</p>`)}
  <//>`;
}
