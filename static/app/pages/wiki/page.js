// One wiki page: rendered Markdown with clickable [[wikilinks]], backlinks, citations opening their
// source chunk, and an editor.
import { get, post, put, seg } from "../../api.js";
import { renderMarkdown } from "../../markdown.js";
import { html, useEffect, useRef, useState } from "../../ui.js";
import { Dialog, PageFrame, Panel, toast, toastError, useLoad } from "../../components/index.js";
import { pageHref } from "./links.js";

const KB = "/wiki/knowledge-bases";
const WIKILINK = /\[\[([^\[\]|\n]{1,200})(?:\|([^\[\]\n]{0,200}))?\]\]/g;

/** Markdown with each [[target|label]] turned into a console link (broken ones marked). */
export function linkWikilinks(markdown, kbId, links) {
  const bySlugText = new Map((links || []).map((l) => [l.target, l]));
  return String(markdown || "").replace(WIKILINK, (_, target, label) => {
    const known = bySlugText.get(target.trim());
    const slug = known ? known.slug : target.trim().toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "-").replace(/^-+|-+$/g, "");
    const text = (label || target).replace(/[\[\]]/g, "");
    return known && !known.exists ? `[${text}](${pageHref(kbId, slug)} "missing page")` : `[${text}](${pageHref(kbId, slug)})`;
  });
}

export function Markdown({ text, kbId, links }) {
  const ref = useRef(null);
  useEffect(() => {
    if (!ref.current) return;
    renderMarkdown(ref.current, linkWikilinks(text, kbId, links));
    for (const a of ref.current.querySelectorAll('a[href^="#/wiki/"]')) {
      a.removeAttribute("target");  // links inside the console stay in this tab
      a.removeAttribute("rel");
      a.classList.add("wikilink");
      if (a.getAttribute("title") === "missing page") a.classList.add("missing");
    }
  }, [text, kbId, links]);
  return html`<div class="md wiki-markdown" ref=${ref}></div>`;
}

export function WikiPage({ kbId, slug }) {
  const state = useLoad(async () => {
    const page = await get(`${KB}/${seg(kbId)}/pages/${seg(slug)}`);
    const [backlinks, citations] = await Promise.all([
      get(`${KB}/${seg(kbId)}/pages/${seg(slug)}/backlinks`),
      get(`/wiki/kb/${seg(kbId)}/pages/${seg(page.id)}/citations`),
    ]);
    return { page, backlinks, citations };
  }, [kbId, slug]);
  const [editing, setEditing] = useState(false);
  const [chunk, setChunk] = useState(null);
  const d = state.data;
  const actions = d && html`<a class="btn" href=${`#/wiki/${seg(kbId)}`}>Knowledge base</a>
    <button type="button" class="btn" onClick=${() => setEditing(!editing)}>${editing ? "Cancel" : "Edit"}</button>`;
  return html`<${PageFrame} title=${d ? d.page.title : slug} wide state=${state} actions=${actions}
      subtitle=${d && `${d.page.pageType} · version ${d.page.version}${d.page.archived ? " · archived" : ""}`}>
    ${() => html`
      ${d.page.pendingChange && html`<${PendingChange} kbId=${kbId} page=${d.page} onDone=${() => state.reload(true)} />`}
      ${editing ? html`<${Editor} kbId=${kbId} page=${d.page} onSaved=${() => { setEditing(false); state.reload(true); }} />`
               : html`<${Panel}><${Markdown} text=${d.page.markdown} kbId=${kbId} links=${d.page.links} /><//>`}
      <div class="two-col">
        <${Panel} title="Backlinks" id="wiki-backlinks">
          ${d.backlinks.length ? html`<ul class="plain">${d.backlinks.map((p) => html`<li key=${p.id}><a href=${pageHref(kbId, p.slug)}>${p.title}</a></li>`)}</ul>`
                               : html`<p class="muted">No page links here.</p>`}
        <//>
        <${Panel} title="Citations" id="wiki-citations">
          ${d.citations.length ? html`<ul class="plain">${d.citations.map((c) => html`<li key=${c.chunkId}>
              <button type="button" class="link-button" onClick=${() => setChunk(c)}>${c.rawTitle}, part ${c.position + 1}</button></li>`)}</ul>`
                               : html`<p class="muted">No citations.</p>`}
        <//>
      </div>
      ${chunk && html`<${Dialog} title=${`${chunk.rawTitle}, part ${chunk.position + 1}`} onClose=${() => setChunk(null)}>
        <pre class="chunk-text">${chunk.text}</pre>
      <//>`}`}
  <//>`;
}

/** A re-sync's version of a page a person edited (or its archiving), waiting to be accepted or dismissed. */
function PendingChange({ kbId, page, onDone }) {
  const change = page.pendingChange;
  const [busy, setBusy] = useState(false);
  async function decide(what) {
    setBusy(true);
    try {
      await post(`${KB}/${seg(kbId)}/pages/${seg(page.slug)}/pending-change/${what}`);
      toast(what === "accept" ? "Change applied" : "Change dismissed");
      onDone();
    } catch (err) { toastError(err); } finally { setBusy(false); }
  }
  const title = change.action === "archive" ? "Its source no longer writes this page" : "Its source has a new version of this page";
  return html`<${Panel} title=${title} id="wiki-pending-change">
    <p class="muted">You edited this page by hand, so the sync kept your text. ${change.action === "archive"
      ? "Accept to archive the page, or dismiss to keep it." : "Accept to replace your text with the new version, or dismiss to keep yours."}</p>
    ${change.action === "update" && html`<${Markdown} text=${change.markdown} kbId=${kbId} links=${[]} />`}
    <div class="actions start">
      <button type="button" class="btn btn-primary" disabled=${busy} onClick=${() => decide("accept")}>Accept</button>
      <button type="button" class="btn" disabled=${busy} onClick=${() => decide("dismiss")}>Dismiss</button>
    </div>
  <//>`;
}

function Editor({ kbId, page, onSaved }) {
  const [markdown, setMarkdown] = useState(page.markdown);
  const [title, setTitle] = useState(page.title);
  const [busy, setBusy] = useState(false);
  async function save(e) {
    e.preventDefault();
    setBusy(true);
    try {
      await put(`${KB}/${seg(kbId)}/pages/${seg(page.slug)}`, { markdown, title: title.trim() || undefined });
      toast("Page saved");
      onSaved();
    } catch (err) { toastError(err); } finally { setBusy(false); }
  }
  return html`<${Panel} title="Edit page">
    <form class="stack" onSubmit=${save}>
      <label>Title <input name="page-title" value=${title} onInput=${(e) => setTitle(e.currentTarget.value)} /></label>
      <label>Markdown <textarea name="page-markdown" rows="16" value=${markdown} onInput=${(e) => setMarkdown(e.currentTarget.value)}></textarea></label>
      <div><button type="submit" class="btn btn-primary" disabled=${busy}>Save</button></div>
    </form>
  <//>`;
}
