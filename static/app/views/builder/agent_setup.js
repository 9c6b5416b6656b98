// Agent detail: one agent's whole setup on one screen, in tabs: skills, tools, knowledge bases, memory,
// channels and cron jobs (mounted by the Agents page at #/agents/<id>/<tab>).
import { del, get, post, put, seg } from "../../api.js";
import { html } from "../../ui.js";
import {
  Badge, Empty, Toggle, boundNames, rows, useAction, useLoad, when,
} from "../../components/index.js";
import { Facts } from "./memory.js";
import { AgentFiles } from "./data.js";

const TABS = [["skills", "Skills"], ["tools", "Tools"], ["knowledge", "Knowledge bases"], ["memory", "Memory"],
  ["files", "Files"], ["channels", "Channels"], ["cron", "Cron jobs"]];

export function AgentSetup({ id, tab }) {
  const agent = useLoad(() => get(`/agents/${seg(id)}`), [id], { toastErrors: true });
  const current = TABS.some(([k]) => k === tab) ? tab : "skills";
  const a = agent.data;
  if (!a) return html`<p class="muted">${agent.loading ? "Loading…" : "Agent not found."}</p>`;
  return html`<div class="build-page agent-setup" aria-label=${`Setup of ${a.name}`}>
    <div class="page-head"><div><h1>${a.icon || ""} ${a.name}</h1><p class="muted page-sub">${a.description || a.agentType}</p></div>
      <div class="page-actions"><a class="btn" href="#/agents">All agents</a><a class="btn" href="#/chat" onClick=${() => localStorage.setItem("ap.lastAgent", a.id)}>Chat</a></div></div>
    <nav class="tabs" aria-label="Agent setup">${TABS.map(([k, label]) => html`<a class="tab" href=${`#/agents/${a.id}/${k}`} aria-current=${k === current ? "page" : undefined}>${label}</a>`)}</nav>
    ${current === "skills" ? html`<${SkillsTab} id=${id} />` : null}
    ${current === "tools" ? html`<${ToolsTab} id=${id} />` : null}
    ${current === "knowledge" ? html`<${KnowledgeTab} id=${id} />` : null}
    ${current === "memory" ? html`<${Facts} agentId=${id} />` : null}
    ${current === "files" ? html`<${AgentFiles} agentId=${id} />` : null}
    ${current === "channels" ? html`<${ChannelsTab} id=${id} />` : null}
    ${current === "cron" ? html`<${CronTab} id=${id} />` : null}
  </div>`;
}

function SkillsTab({ id }) {
  const skills = useLoad(() => get("/skills", { size: 100 }), [], { toastErrors: true });
  const bound = useLoad(() => get(`/agents/${seg(id)}/skills`), [id], { toastErrors: true });
  const [, run] = useAction();
  const ids = boundNames(bound.data, "skillId");
  const set = (s, on) => run(() => (on ? post(`/agents/${seg(id)}/skills/${seg(s.id)}`) : del(`/agents/${seg(id)}/skills/${seg(s.id)}`)),
    on ? `Bound ${s.name}` : `Unbound ${s.name}`).then(bound.reload);
  return html`<section class="panel" aria-label="Skills of the agent">
    ${rows(skills.data).length ? html`<ul class="list">${rows(skills.data).map((s) => html`<li key=${s.id} data-skill=${s.name}>
      <span class="item-main"><a class="item-title" href=${`#/skills/installed/${s.id}`}>${s.displayName}</a><small class="muted">${s.description}</small></span>
      <span class="row">${s.enabled ? null : html`<${Badge}>disabled</>`}<${Toggle} label=${`Bind ${s.name}`} checked=${ids.includes(s.id)} onChange=${(v) => set(s, v)} /></span></li>`)}</ul>`
      : html`<${Empty}>${skills.loading ? "Loading…" : "No skills yet."}</>`}
  </section>`;
}

const toolName = (t) => (typeof t === "string" ? t : t?.name || t?.toolName || "");

function ToolsTab({ id }) {
  const available = useLoad(() => get("/tools/available"), [], { toastErrors: true });
  const bound = useLoad(() => get(`/agents/${seg(id)}/tools`), [id], { toastErrors: true });
  const [, run] = useAction();
  const names = boundNames(bound.data);
  const set = (name, on) => run(() => put(`/agents/${seg(id)}/tools`, { toolNames: on ? [...names, name] : names.filter((n) => n !== name) }),
    on ? `Added ${name}` : `Removed ${name}`).then(bound.reload);
  const list = (available.data || []).filter((t) => toolName(t));
  return html`<section class="panel" aria-label="Tools of the agent">
    ${list.length ? html`<ul class="list">${list.map((t) => html`<li key=${toolName(t)} data-tool=${toolName(t)}>
      <span class="item-main"><code class="item-title">${toolName(t)}</code><small class="muted">${t.description || ""}</small></span>
      <${Toggle} label=${`Use ${toolName(t)}`} checked=${names.includes(toolName(t))} onChange=${(v) => set(toolName(t), v)} /></li>`)}</ul>`
      : html`<${Empty}>${available.loading ? "Loading…" : "No tools available."}</>`}
  </section>`;
}

function KnowledgeTab({ id }) {
  const kbs = useLoad(() => get("/wiki/knowledge-bases"), [], { toastErrors: true });
  const [, run] = useAction();
  const set = (kb, on) => run(() => put(`/wiki/knowledge-bases/${seg(kb.id)}`, { agentIds: on ? [...kb.agentIds, id] : kb.agentIds.filter((a) => a !== id) }),
    on ? `Bound ${kb.name}` : `Unbound ${kb.name}`).then(kbs.reload);
  const list = rows(kbs.data);
  return html`<section class="panel" aria-label="Knowledge bases of the agent">
    ${list.length ? html`<ul class="list">${list.map((kb) => html`<li key=${kb.id} data-kb=${kb.name}>
      <span class="item-main"><span class="item-title">${kb.name}</span><small class="muted">${kb.pageCount} pages · ${kb.rawCount} materials</small></span>
      <${Toggle} label=${`Bind ${kb.name}`} checked=${kb.agentIds.includes(id)} onChange=${(v) => set(kb, v)} /></li>`)}</ul>`
      : html`<${Empty}>${kbs.loading ? "Loading…" : "No knowledge bases in this workspace."}</>`}
  </section>`;
}

function ChannelsTab({ id }) {
  const channels = useLoad(() => get("/channels"), [], { toastErrors: true });
  const list = (channels.data || []).filter((c) => c.agentId === id);
  return html`<section class="panel" aria-label="Channels of the agent">
    ${list.length ? html`<ul class="list">${list.map((c) => html`<li key=${c.id}>
      <span class="item-main"><a class="item-title" href=${`#/channels/${c.id}`}>${c.name}</a><small class="muted">${c.channelType} · ${c.health || "not checked"}</small></span>
      <${Badge} kind=${c.enabled ? "ok" : ""}>${c.enabled ? "enabled" : "disabled"}</></li>`)}</ul>`
      : html`<${Empty}>${channels.loading ? "Loading…" : html`No channels answer with this agent. <a href="#/channels">Add one</a>.`}</>`}
  </section>`;
}

function CronTab({ id }) {
  const jobs = useLoad(() => get("/cron-jobs"), [], { toastErrors: true });
  const [, run] = useAction();
  const list = (jobs.data || []).filter((j) => j.agentId === id);
  return html`<section class="panel" aria-label="Cron jobs of the agent">
    ${list.length ? html`<ul class="list">${list.map((j) => html`<li key=${j.id}>
      <span class="item-main"><a class="item-title" href=${`#/automation/cron/${j.id}`}>${j.name}</a>
        <small class="muted"><code>${j.cronExpression}</code> ${j.timezone} · next ${when(j.nextFireTime, j.timezone)}</small></span>
      <${Toggle} label=${`Enable ${j.name}`} checked=${j.enabled} onChange=${(v) => run(() => put(`/cron-jobs/${seg(j.id)}/toggle`, { enabled: v })).then(jobs.reload)} /></li>`)}</ul>`
      : html`<${Empty}>${jobs.loading ? "Loading…" : html`No cron jobs for this agent. <a href="#/automation/cron">Schedule one</a>.`}</>`}
  </section>`;
}
