// Channels by type: create with a preflight check, toggle, health; the webhook URL and signing secret to
// paste into the platform; QR pairing as an image that follows its status; the webchat embed snippet and
// a live preview (the same widget the snippet frames).
import { del, get, post, put, seg } from "../../api.js";
import { html, useEffect, useRef, useState } from "../../ui.js";
import {
  Badge, Empty, Field, Head, Toggle, confirmDialog, page, toast, useAction, useLoad, useSession, when,
} from "../../components/index.js";
import { mountWebchat } from "../../../webchat/widget.js";

const TYPES = ["webchat", "im_a", "im_b", "im_c", "im_d", "im_e", "im_f", "im_g", "im_h"];
const TYPE_LABEL = { webchat: "Webchat (embed on a site)" };
const HEALTH_KIND = { healthy: "ok", unhealthy: "bad" };
// Messaging platforms by type (GET /channels/platforms): name, the settings each asks for, setup help.
let platforms = {};
const loadPlatforms = () => get("/channels/platforms").then((list) => { platforms = Object.fromEntries(list.map((p) => [p.channelType, p])); return platforms; });
const labelOf = (type) => TYPE_LABEL[type] || platforms[type]?.label || type;

function ChannelsPage({ args }) {
  const admin = useSession().can("admin");
  const channels = useLoad(() => loadPlatforms().then(() => get("/channels")), [], { toastErrors: true });
  const list = channels.data || [];
  const selected = args[0];
  const byType = {};
  for (const c of list) (byType[c.channelType] ||= []).push(c);
  return html`
    <${Head} title="Channels" subtitle="Where people reach your agents: messaging platforms over signed webhooks, or the webchat widget on a site." />
    <div class="split">
      <div class="stack">
        ${admin ? html`<${NewChannel} onCreated=${(c) => { channels.reload(); location.hash = `#/channels/${c.id}`; sessionStorage.setItem(`ap.secret.${c.id}`, c.secret || ""); }} />` : null}
        <section class="panel" aria-label="Channel list">
          ${list.length ? Object.entries(byType).map(([type, items]) => html`<div key=${type}>
            <h3>${labelOf(type)}</h3>
            <ul class="list channel-list">${items.map((c) => html`<li key=${c.id} data-channel=${c.name} class=${c.id === selected ? "selected" : ""}>
              <span class="item-main"><a class="item-title" href=${`#/channels/${c.id}`}>${c.name}</a>
                <small class="muted">${c.health || "not checked"}${c.lastInboundAt ? ` · last message ${when(c.lastInboundAt)}` : ""}</small></span>
              <${Toggle} label=${`Enable ${c.name}`} checked=${c.enabled} onChange=${(v) => put(`/channels/${seg(c.id)}/toggle`, { enabled: v }).then(channels.reload, (e) => toast(e.message, "error"))} /></li>`)}</ul></div>`)
            : html`<${Empty}>${channels.loading ? "Loading…" : "No channels yet."}</>`}
        </section>
      </div>
      ${selected ? html`<${ChannelDetail} key=${selected} id=${selected} onChange=${channels.reload} />`
        : html`<section class="panel"><p class="muted">Pick a channel for its webhook URL, secret, pairing or embed snippet.</p></section>`}
    </div>`;
}

function NewChannel({ onCreated }) {
  const agents = useLoad(() => get("/agents"), [], { toastErrors: true });
  const [type, setType] = useState("webchat");
  const [check, setCheck] = useState(null);
  const [busy, run] = useAction();
  const body = (form) => {
    const el = form.elements;
    const settings = {};
    const platform = platforms[type];
    if (type === "webchat") {
      if (el.title.value) settings.title = el.title.value;
      if (el.welcome.value) settings.welcomeMessage = el.welcome.value;
    } else if (platform) {
      for (const f of platform.fields) if (el[`f_${f.key}`].value) settings[f.key] = el[`f_${f.key}`].value;
      const out = { name: el.name.value, channelType: type, agentId: el.agentId.value, settings };
      if (el.secret?.value) out.secret = el.secret.value;
      return out;
    } else if (el.gateway.value) settings.gatewayUrl = el.gateway.value;
    return { name: el.name.value, channelType: type, agentId: el.agentId.value, replyUrl: type === "webchat" ? null : el.replyUrl.value || null, settings };
  };
  const preflight = (e) => {
    const form = e.currentTarget.form;
    if (!form.reportValidity()) return;
    run(() => post("/channels/preflight", body(form))).then((r) => r && setCheck(r));
  };
  const create = (e) => {
    e.preventDefault();
    run(() => post("/channels", body(e.currentTarget)), "Channel created").then((c) => { if (c) { e.target.reset(); setCheck(null); onCreated(c); } });
  };
  return html`<form class="panel" aria-label="New channel" onSubmit=${create}>
    <h3>New channel</h3>
    <${Field} label="Name"><input name="name" required maxlength="100" /></>
    <${Field} label="Type"><select name="type" value=${type} onChange=${(e) => { setType(e.currentTarget.value); setCheck(null); }}>
      ${TYPES.map((t) => html`<option value=${t}>${labelOf(t)}</option>`)}</select></>
    <${Field} label="Agent"><select name="agentId" required>${(agents.data || []).map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select></>
    ${type === "webchat" ? html`
      <${Field} label="Title"><input name="title" placeholder="Ask us anything" /></>
      <${Field} label="Welcome message"><input name="welcome" placeholder="Hi! How can I help?" /></>`
    : platforms[type] ? html`
      <p class="muted platform-help">${platforms[type].help}</p>
      ${platforms[type].secretLabel ? html`<${Field} label=${platforms[type].secretLabel}><input name="secret" type="password" autocomplete="off" minlength="16" placeholder="empty: one is generated" /></>` : null}
      ${platforms[type].fields.map((f) => html`<${Field} label=${f.label}>${f.choices?.length
        ? html`<select name=${`f_${f.key}`} title=${f.help}>${f.choices.map((v) => html`<option value=${v} selected=${v === f.default}>${v}</option>`)}</select>`
        : html`<input name=${`f_${f.key}`} type=${f.secret ? "password" : "text"} autocomplete="off" required=${f.required} placeholder=${f.default || ""} title=${f.help} />`}</>`)}`
    : html`
      <${Field} label="Reply URL (where answers are posted)"><input name="replyUrl" type="url" required placeholder="https://gateway.example/reply" /></>
      <${Field} label="Gateway URL (for QR pairing, optional)"><input name="gateway" type="url" /></>`}
    ${check ? html`<ul class="diag preflight">${check.valid ? html`<li class="ok">Preflight passed: the agent, type and reply URL are fine.</li>`
      : check.problems.map((p) => html`<li class="error">${p}</li>`)}</ul>` : null}
    <div class="row"><button type="button" class="btn" disabled=${busy} onClick=${preflight}>Check</button>
      <button class="btn btn-primary" disabled=${busy}>Create channel</button></div>
  </form>`;
}

function ChannelDetail({ id, onChange }) {
  const channel = useLoad(() => get(`/channels/${seg(id)}`), [id], { toastErrors: true });
  const [secret, setSecret] = useState(() => sessionStorage.getItem(`ap.secret.${id}`) || "");
  const [health, setHealth] = useState(null);
  const [busy, run] = useAction();
  useEffect(() => { sessionStorage.removeItem(`ap.secret.${id}`); }, [id]);
  const c = channel.data;
  if (!c) return html`<section class="panel"><p class="muted">${channel.loading ? "Loading…" : "Not found."}</p></section>`;
  const rotate = async () => {
    if (!(await confirmDialog({ title: "New signing secret", message: "The platform must be given the new secret; messages signed with the old one are refused.", submit: "Rotate" }))) return;
    const bytes = crypto.getRandomValues(new Uint8Array(24));
    const value = btoa(String.fromCharCode(...bytes)).replace(/[+/=]/g, (ch) => ({ "+": "-", "/": "_", "=": "" }[ch]));
    if (await run(() => put(`/channels/${seg(id)}`, { secret: value }), "Secret replaced") !== undefined) setSecret(value);
  };
  const remove = async () => {
    if (!(await confirmDialog({ title: "Delete channel", message: `Delete “${c.name}”?` }))) return;
    if (await run(() => del(`/channels/${seg(id)}`), "Deleted") !== undefined) { location.hash = "#/channels"; onChange(); }
  };
  return html`<section class="panel channel-detail" aria-label=${`Channel ${c.name}`}>
    <div class="card-head"><h2 class="grow">${c.name}</h2><${Badge}>${labelOf(c.channelType)}</>
      <${Badge} kind=${HEALTH_KIND[c.health] || ""}>${c.health || "not checked"}</></div>
    <div class="row">
      <button class="btn" disabled=${busy} onClick=${() => run(() => get(`/channels/${seg(id)}/health`)).then((h) => { if (h) { setHealth(h); channel.reload(); onChange(); } })}>Check health</button>
      <button class="btn btn-danger" onClick=${remove}>Delete</button></div>
    ${health ? html`<p class="status-line health-result" role="status">${health.healthy ? "Healthy" : "Unhealthy"}: ${health.message} (${health.latencyMs} ms)</p>` : null}
    ${c.channelType === "webchat" ? html`<${Webchat} channel=${c} />` : platforms[c.channelType] ? html`<${PlatformSetup} channel=${c} secret=${secret} onRotate=${rotate} onPaired=${channel.reload} />` : html`
      <h3>Webhook</h3>
      <dl class="kv">
        <dt>Webhook URL</dt><dd><code class="webhook-url">${location.origin}${c.webhookUrl}</code></dd>
        <dt>Channel id</dt><dd><code>${c.id}</code></dd>
        <dt>Signing secret</dt><dd>${secret ? html`<code class="secret-value new-secret">${secret}</code><br /><small class="muted">Shown once: copy it into the platform now.</small>`
          : html`<span class="muted">${c.secretSet ? "set (write-only)" : "none"}</span>`}</dd>
        <dt>Reply URL</dt><dd>${c.replyUrl || "—"}</dd>
      </dl>
      <p class="muted">The platform posts <code>{channelId, messageId, sender: {id}, text}</code> signed with HMAC-SHA256 of <code>timestamp.body</code> in <code>X-Signature</code>.</p>
      <div class="row"><button class="btn btn-small" onClick=${rotate}>New signing secret</button></div>
      <${Pairing} channel=${c} onPaired=${channel.reload} />`}
  </section>`;
}

function PlatformSetup({ channel, secret, onRotate, onPaired }) {
  const p = platforms[channel.channelType];
  return html`<h3>Connect ${p.label}</h3>
    <p class="muted platform-help">${p.help}</p>
    <dl class="kv">
      ${LOGIN_BY_QR.includes(channel.channelType) ? null : html`<dt>Webhook URL</dt><dd><code class="webhook-url">${location.origin}${channel.webhookUrl}</code></dd>`}
      ${p.secretLabel ? html`<dt>${p.secretLabel}</dt><dd>${secret ? html`<code class="secret-value new-secret">${secret}</code><br /><small class="muted">Shown once: give it to ${p.label} now.</small>`
        : html`<span class="muted">${channel.secretSet ? "set (write-only)" : "none"}</span>`}</dd>` : null}
      ${p.fields.map((f) => html`<dt>${f.label}</dt><dd>${f.secret ? html`<span class="muted">${(channel.secretSettingsSet || []).includes(f.key) ? "set (write-only)" : "not set"}</span>`
        : html`<code>${channel.settings?.[f.key] || f.default || "—"}</code>`}</dd>`)}
    </dl>
    ${p.secretLabel ? html`<div class="row"><button class="btn btn-small" onClick=${onRotate}>New secret</button></div>` : null}
    ${LOGIN_BY_QR.includes(channel.channelType) ? html`<${Pairing} channel=${channel} onPaired=${onPaired} login=${true} />` : null}`;
}

// Platforms whose bot account logs in by scanning a QR code from the platform itself (WeChat's iLink login).
const LOGIN_BY_QR = ["im_g"];

function Pairing({ channel, onPaired, login = false }) {
  const [session, setSession] = useState(null);
  const [busy, run] = useAction();
  const done = (s) => ["confirmed", "expired", "failed"].includes(s?.status);
  useEffect(() => {
    if (!session || done(session)) return undefined;
    const t = setTimeout(async () => {
      try {
        const s = await get(`/channels/qrcode/${seg(channel.channelType)}/status`, { sessionId: session.sessionId });
        setSession({ ...session, ...s });
        if (s.status === "confirmed") { toast(login ? "Logged in" : "Paired", "ok"); onPaired(); }
      } catch (err) {
        setSession({ ...session, status: "failed", error: err.message });
      }
    }, 1500);
    return () => clearTimeout(t);
  }, [session]);
  const begin = () => run(() => post(`/channels/qrcode/${seg(channel.channelType)}/begin`, { channelId: channel.id })).then((s) => s && setSession(s));
  const ready = login || channel.settings?.gatewayUrl;  // a platform login needs no pairing gateway
  return html`<div class="pairing"><h3>${login ? "Log in" : "QR pairing"}</h3>
    ${channel.paired ? html`<p class="status-line paired-as">${login ? "Logged in" : "Paired"}${channel.pairedAccountId ? ` as ${channel.pairedAccountId}` : ""}.</p>` : null}
    ${ready ? null : html`<p class="muted">Pairing needs the channel's gateway URL (settings.gatewayUrl).</p>`}
    <button class="btn" disabled=${busy || !ready} onClick=${begin}>${session ? "New QR code" : login ? "Log in with a QR code" : "Pair with a QR code"}</button>
    ${session ? html`<div class="qr-box">
      ${session.qrcodeImage && !done(session) ? html`<img src=${session.qrcodeImage} alt="QR code to scan with the messaging app" />` : null}
      <p role="status" class="pairing-status">Status: <strong>${session.status}</strong>${session.error ? ` — ${session.error}` : ""}
        ${session.expiresAt && !done(session) ? html`<br /><small class="muted">Expires ${when(session.expiresAt)}</small>` : null}</p>
    </div>` : null}
  </div>`;
}

function Webchat({ channel }) {
  const preview = useRef(null);
  const [key, setKey] = useState(0);
  const src = `${location.origin}/webchat?token=${encodeURIComponent(channel.publicToken)}`;
  const snippet = `<iframe src="${src}" title="${(channel.settings?.title || channel.name).replace(/"/g, "&quot;")}" style="width:380px;height:560px;border:0" loading="lazy"></iframe>`;
  useEffect(() => {
    if (preview.current) mountWebchat(preview.current, { token: channel.publicToken, sessionId: `preview-${channel.id}-${key}` });
  }, [channel.publicToken, key]);
  useEffect(() => {
    if (!document.querySelector("link[data-webchat-css]")) {
      const link = document.createElement("link");
      link.rel = "stylesheet";
      link.href = "/static/webchat/widget.css";
      link.dataset.webchatCss = "1";
      document.head.appendChild(link);
    }
  }, []);
  const copy = async () => {
    try { await navigator.clipboard.writeText(snippet); toast("Snippet copied", "ok"); } catch { toast("Select the snippet and copy it", "error"); }
  };
  return html`<div class="webchat">
    <h3>Embed snippet</h3>
    <${Field} label="Paste this into your page" wide><textarea class="editor-area snippet" readonly rows="3" value=${snippet}></textarea></>
    <div class="row"><button class="btn btn-small" onClick=${copy}>Copy snippet</button><a class="btn btn-small" href=${src} target="_blank" rel="noopener">Open the chat page</a></div>
    <h3>Live preview</h3>
    <p class="muted">This is the widget the snippet shows, talking to the channel's agent now.</p>
    <div class="webchat-preview" ref=${preview} aria-label="Webchat preview"></div>
    <button class="btn btn-small" onClick=${() => setKey(key + 1)}>Start a new preview conversation</button>
  </div>`;
}

export default page(ChannelsPage);
