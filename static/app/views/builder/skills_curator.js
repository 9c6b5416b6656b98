// Skills → Curator (state, dry run with the planned archive/merge list, apply mode, snapshots and restore)
// and Routines (mined recurring requests: promote, dismiss, reopen).
import { get, post, seg } from "../../api.js";
import { html, useState } from "../../ui.js";
import {
  Badge, Empty, Toggle, confirmDialog, formDialog, useAction, useLoad, when,
} from "../../components/index.js";

export function CuratorTab() {
  const status = useLoad(() => get("/skills/curator/status"), [], { toastErrors: true });
  const reports = useLoad(() => get("/skills/curator/reports"), [], { toastErrors: true });
  const snaps = useLoad(() => get("/skills/curator/snapshots"), [], { toastErrors: true });
  const [report, setReport] = useState(null);
  const [busy, run] = useAction();
  const st = status.data;
  const reloadAll = () => { status.reload(); reports.reload(); snaps.reload(); };
  const set = (path, body, msg) => run(() => post(`/skills/curator/${path}`, body), msg).then(reloadAll);
  const dryRun = () => run(() => post("/skills/curator/dry-run"), "Dry run finished").then((r) => { if (r) { setReport(r); reloadAll(); } });
  const open = (id) => run(() => get(`/skills/curator/reports/${seg(id)}`)).then((r) => r && setReport(r));
  const snapshot = async () => {
    const v = await formDialog({ title: "Capture a restore point", submit: "Capture", fields: [{ name: "reason", label: "Reason (optional)" }] });
    if (v) set("snapshots", { reason: v.reason || null }, "Restore point captured");
  };
  const restore = async (s) => {
    if (!(await confirmDialog({ title: "Restore skills", message: `Restore the skill library to ${when(s.createTime)} (${s.skillCount} skills)? Later skills are archived.`, submit: "Restore" }))) return;
    set(`snapshots/${seg(s.id)}/restore`, undefined, "Skill library restored");
  };
  return html`<div class="cols">
    <section class="panel curator-state" aria-label="Curator state">
      <h3>State</h3>
      ${st ? html`<dl class="kv">
        <dt>Mode</dt><dd><${Badge} kind=${st.active ? "warn" : ""}>${st.active ? "applying (archives for real)" : "preview only"}</></dd>
        <dt>Schedule</dt><dd>${st.paused ? "paused" : `every ${st.intervalHours} h`}</dd>
        <dt>Last run</dt><dd>${when(st.lastRunAt) || "never"}</dd>
        <dt>Next run</dt><dd>${when(st.nextRunAt) || "—"}</dd>
        <dt>Unused after</dt><dd>${st.unusedDays} days</dd>
        <dt>Managed</dt><dd>${st.counts.managed} (${st.counts.unmanaged} not managed)</dd>
      </dl>
      <div class="row">
        <span class="row">Apply changes <${Toggle} label="Curator applies changes" checked=${st.active} disabled=${busy}
          onChange=${(v) => set("activate", { active: v }, v ? "Curator now applies its plan" : "Curator only previews")} /></span>
        <span class="row">Merge duplicates <${Toggle} label="Merge near-duplicates" checked=${st.consolidate} disabled=${busy}
          onChange=${(v) => set("consolidate", { enabled: v }, "Saved")} /></span>
      </div>
      <div class="row">
        <button class="btn btn-primary" disabled=${busy} onClick=${dryRun}>Dry run now</button>
        ${st.paused ? html`<button class="btn" onClick=${() => set("resume", undefined, "Resumed")}>Resume schedule</button>`
          : html`<button class="btn" onClick=${() => set("pause", undefined, "Paused")}>Pause schedule</button>`}
      </div>` : html`<p class="muted">Loading…</p>`}
    </section>
    <section class="panel curator-plan" aria-label="Curator plan">
      <h3>${report ? `Report ${when(report.startedAt)}` : "Planned changes"}</h3>
      ${report ? html`<p class="muted">${report.dryRun ? "Dry run: nothing changed." : "Applied."}
        ${report.summary.archive} to archive, ${report.summary.merge} to merge, ${report.summary.keep} kept.</p>
        ${report.actions?.filter((a) => a.action !== "keep").length ? html`<ul class="list plan-list">
          ${report.actions.filter((a) => a.action !== "keep").map((a) => html`<li key=${a.skillId}>
            <span class="item-main"><span class="item-title">${a.skillName}</span><small class="muted">${(a.reasons || []).join("; ")}</small></span>
            <span class="row"><${Badge} kind="warn">${a.action}${a.mergeInto ? ` → ${a.mergeInto.name}` : ""}</><small>${a.outcome}</small></span></li>`)}</ul>`
          : html`<${Empty}>Nothing to archive or merge.</>`}`
        : html`<${Empty}>Run a dry run to see what the curator would archive or merge.</>`}
      <h3>Reports</h3>
      <ul class="list">${(reports.data || []).slice(0, 10).map((r) => html`<li key=${r.id}>
        <button class="link" onClick=${() => open(r.id)}>${when(r.startedAt)}</button>
        <small class="muted">${r.trigger} · ${r.summary.proposed} proposed · ${r.summary.applied} applied</small></li>`)}</ul>
    </section>
    <section class="panel" aria-label="Restore points">
      <h3>Restore points</h3>
      <button class="btn" disabled=${busy} onClick=${snapshot}>Capture restore point</button>
      ${(snaps.data || []).length ? html`<ul class="list snapshot-list">${snaps.data.map((s) => html`<li key=${s.id}>
        <span class="item-main"><span class="item-title">${when(s.createTime)}</span><small class="muted">${s.reason || s.trigger} · ${s.skillCount} skills</small></span>
        <button class="btn btn-small" onClick=${() => restore(s)}>Restore</button></li>`)}</ul>` : html`<${Empty}>No restore points yet.</>`}
    </section>
  </div>`;
}

export function RoutinesTab() {
  const list = useLoad(() => get("/skills/routines"), [], { toastErrors: true });
  const [busy, run] = useAction();
  const act = (fn, msg) => run(fn, msg).then(list.reload);
  const promote = async (c) => {
    const v = await formDialog({ title: "Promote to a skill", submit: "Promote", fields: [{ name: "name", label: "Skill name (optional)" }] });
    if (v) act(() => post(`/skills/routines/${seg(c.id)}/promote`, { name: v.name || null }), (r) => `Drafted skill ${r.skill.name}`);
  };
  const items = list.data || [];
  return html`<section class="panel" aria-label="Routines">
    <div class="row"><p class="muted grow">Requests you make again and again; promote one to draft a skill for it.</p>
      <button class="btn btn-primary" disabled=${busy} onClick=${() => act(() => post("/skills/routines/mine"), (r) => `Scanned ${r.scannedMessages} messages`)}>Mine now</button></div>
    ${items.length ? html`<ul class="list routine-list">${items.map((c) => html`<li key=${c.id}>
      <span class="item-main"><span class="item-title">${c.pattern}</span>
        <small class="muted">${c.occurrences}× on ${c.distinctDays} days · last ${when(c.lastSeen)}${c.ready ? " · ready" : ""}</small></span>
      <span class="row"><${Badge} kind=${c.status === "promoted" ? "ok" : ""}>${c.status}</>
        ${c.status === "open" ? html`<button class="btn btn-small btn-primary" onClick=${() => promote(c)}>Promote</button>
          <button class="btn btn-small" onClick=${() => act(() => post(`/skills/routines/${seg(c.id)}/dismiss`), "Dismissed")}>Dismiss</button>` : null}
        ${c.status === "dismissed" ? html`<button class="btn btn-small" onClick=${() => act(() => post(`/skills/routines/${seg(c.id)}/reopen`), "Reopened")}>Reopen</button>` : null}
        ${c.skillId ? html`<a class="btn btn-small" href=${`#/skills/installed/${c.skillId}`}>Open skill</a>` : null}</span></li>`)}</ul>`
      : html`<${Empty}>No recurring requests found yet.</>`}
  </section>`;
}
