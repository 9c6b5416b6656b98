// The conversation sidebar: search, new chat, pin, rename, delete. `Conversations` holds the list (the chat page
// reads it to title a conversation); `ConversationSidebar` draws it.
import { get, put, del, seg } from "../api.js";
import { html } from "../ui.js";
import { Icon, confirmDialog, formDialog, toastError } from "../components/index.js";

export class Conversations {
  /** onChange(): redraw; onDeleted(id): a conversation was deleted. */
  constructor({ onChange, onDeleted }) {
    this.onChange = onChange;
    this.onDeleted = onDeleted;
    this.activeId = null;
    this.keyword = "";
    this.records = [];
    this.loaded = false;
    this.timer = 0;
  }

  /** Reload the list (keeps the search keyword). */
  async refresh() {
    try {
      const page = await get("/conversations/page", { page: 1, size: 100, keyword: this.keyword.trim() });
      const rows = page?.records || [];
      // Pinned first, then most recent, keeping the server's order otherwise.
      this.records = rows.map((r, i) => [r, i])
        .sort((a, b) => (Number(b[0].pinned) - Number(a[0].pinned)) || a[1] - b[1])
        .map(([r]) => r);
      this.loaded = true;
      this.onChange();
    } catch (err) {
      toastError(err);
    }
  }

  search(keyword) {
    this.keyword = keyword;
    this.onChange();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 250);
  }

  find(id) {
    return this.records.find((r) => r.conversationId === id) || null;
  }

  setActive(id) {
    this.activeId = id;
    this.onChange();
  }

  async pin(c, pinned) {
    try {
      await put(`/conversations/${seg(c.conversationId)}/pin`, { pinned });
      await this.refresh();
    } catch (err) { toastError(err); }
  }

  async rename(c) {
    const values = await formDialog({ title: "Rename conversation", fields: [{ name: "title", label: "Title", value: c.title || "", required: true }], submit: "Rename" });
    if (!values || !values.title.trim()) return;
    try {
      await put(`/conversations/${seg(c.conversationId)}/title`, { title: values.title.trim() });
      await this.refresh();
      document.dispatchEvent(new CustomEvent("conversation-renamed", { detail: { id: c.conversationId, title: values.title.trim() } }));
    } catch (err) { toastError(err); }
  }

  async remove(c) {
    if (!(await confirmDialog({ title: "Delete conversation", message: `Delete “${c.title || "Untitled"}” and its messages?`, submit: "Delete" }))) return;
    try {
      await del(`/conversations/${seg(c.conversationId)}`);
      await this.refresh();
      this.onDeleted?.(c.conversationId);
    } catch (err) { toastError(err); }
  }
}

export function ConversationSidebar({ list }) {
  const items = list.records.length
    ? list.records.map((c) => html`<${Item} key=${c.conversationId} c=${c} list=${list} />`)
    : list.loaded ? html`<li class="empty">${list.keyword ? "No matches" : "No conversations yet"}</li>` : null;
  return html`<aside class="conv-sidebar" id="conv-sidebar">
    <div class="conv-tools">
      <a class="btn btn-primary new-chat" href="#/chat" title="New chat (Ctrl+Shift+O)" aria-keyshortcuts="Control+Shift+O Meta+Shift+O"><${Icon} name="plus" size=${16} />New chat</a>
      <input type="search" class="conv-search" placeholder="Search conversations" aria-label="Search conversations"
        value=${list.keyword} onInput=${(e) => list.search(e.currentTarget.value)} />
    </div>
    <ul class="conv-list" aria-label="Conversations">${items}</ul>
  </aside>`;
}

function Item({ c, list }) {
  const pinned = Number(c.pinned) === 1 || c.pinned === true;
  const id = c.conversationId;
  const title = c.title || "conversation";
  return html`<li class=${"conv-item" + (id === list.activeId ? " active" : "") + (pinned ? " pinned" : "")} data-id=${id}>
    <a class="conv-link" href=${`#/chat/${encodeURIComponent(id)}`}>
      <span class="conv-icon" aria-hidden="true">${iconText(c.agentIcon)}</span>
      <span class="conv-main">
        <span class="conv-title">${c.title || "Untitled"}</span>
        <span class="conv-sub">${[c.agentName, shortTime(c.lastActiveTime)].filter(Boolean).join(" · ")}</span>
      </span>
      ${pinned && html`<span class="pin-mark" title="Pinned"><${Icon} name="pin" size=${14} /></span>`}
      ${c.streamStatus === "running" && html`<span class="running-dot" title="Answering"></span>`}
    </a>
    <span class="conv-actions">
      <button type="button" class="icon-btn" title=${pinned ? "Unpin" : "Pin"} aria-label=${`${pinned ? "Unpin" : "Pin"} ${title}`} onClick=${() => list.pin(c, !pinned)}><${Icon} name=${pinned ? "unpin" : "pin"} size=${15} /></button>
      <button type="button" class="icon-btn" title="Rename" aria-label=${`Rename ${title}`} onClick=${() => list.rename(c)}><${Icon} name="edit" size=${15} /></button>
      <button type="button" class="icon-btn" title="Delete" aria-label=${`Delete ${title}`} onClick=${() => list.remove(c)}><${Icon} name="trash" size=${15} /></button>
    </span>
  </li>`;
}

/** Agent icons are emoji or URLs; only short text is shown, never a remote image. */
export function iconText(icon) {
  if (!icon || /^(https?:|data:|\/)/.test(icon)) return "🤖";
  return Array.from(icon).slice(0, 2).join("");
}

/** An ISO time for the list: the time today, else the day. */
function shortTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const now = new Date();
  return d.toDateString() === now.toDateString()
    ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.toLocaleDateString([], { month: "short", day: "numeric" });
}
