// The conversation sidebar: search, new chat, pin, rename, delete.
import { get, put, del, seg } from "../api.js";
import { h, mount, modal, confirmAction, shortTime, showError } from "../dom.js";
import { icon } from "../icons.js";

export class ConversationList {
  constructor({ onDeleted }) {
    this.onDeleted = onDeleted;
    this.activeId = null;
    this.keyword = "";
    this.records = [];
    this.timer = 0;
    this.search = h("input", {
      type: "search", class: "conv-search", placeholder: "Search conversations", "aria-label": "Search conversations",
      oninput: () => { clearTimeout(this.timer); this.timer = setTimeout(() => this.refresh(), 250); },
    });
    this.list = h("ul", { class: "conv-list", "aria-label": "Conversations" });
    this.el = h("aside", { class: "conv-sidebar", id: "conv-sidebar" },
      h("div", { class: "conv-tools" },
        h("a", { class: "btn btn-primary new-chat", href: "#/chat", title: "New chat (Ctrl+Shift+O)", "aria-keyshortcuts": "Control+Shift+O Meta+Shift+O" }, icon("plus", 16), "New chat"),
        this.search),
      this.list);
  }

  /** Reload the list (keeps the search keyword). */
  async refresh() {
    const keyword = this.search.value.trim();
    try {
      const page = await get("/conversations/page", { page: 1, size: 100, keyword });
      const rows = page?.records || [];
      // Pinned first, then most recent, keeping the server's order otherwise.
      this.records = rows.map((r, i) => [r, i])
        .sort((a, b) => (Number(b[0].pinned) - Number(a[0].pinned)) || a[1] - b[1])
        .map(([r]) => r);
      this.render();
    } catch (err) {
      showError(err);
    }
  }

  find(id) {
    return this.records.find((r) => r.conversationId === id) || null;
  }

  setActive(id) {
    this.activeId = id;
    for (const li of this.list.children) li.classList.toggle("active", li.dataset.id === id);
  }

  render() {
    if (!this.records.length) {
      mount(this.list, h("li", { class: "empty", text: this.search.value ? "No matches" : "No conversations yet" }));
      return;
    }
    mount(this.list, this.records.map((c) => this.item(c)));
  }

  item(c) {
    const pinned = Number(c.pinned) === 1 || c.pinned === true;
    const id = c.conversationId;
    return h("li", { class: "conv-item" + (id === this.activeId ? " active" : "") + (pinned ? " pinned" : ""), dataset: { id } },
      h("a", { class: "conv-link", href: `#/chat/${encodeURIComponent(id)}` },
        h("span", { class: "conv-icon", "aria-hidden": "true", text: iconText(c.agentIcon) }),
        h("span", { class: "conv-main" },
          h("span", { class: "conv-title", text: c.title || "Untitled" }),
          h("span", { class: "conv-sub", text: [c.agentName, shortTime(c.lastActiveTime)].filter(Boolean).join(" · ") })),
        pinned ? h("span", { class: "pin-mark", title: "Pinned" }, icon("pin", 14)) : null,
        c.streamStatus === "running" ? h("span", { class: "running-dot", title: "Answering" }) : null),
      h("span", { class: "conv-actions" },
        h("button", { type: "button", class: "icon-btn", title: pinned ? "Unpin" : "Pin", "aria-label": `${pinned ? "Unpin" : "Pin"} ${c.title || "conversation"}`, onclick: () => this.pin(c, !pinned) }, icon(pinned ? "unpin" : "pin", 15)),
        h("button", { type: "button", class: "icon-btn", title: "Rename", "aria-label": `Rename ${c.title || "conversation"}`, onclick: () => this.rename(c) }, icon("edit", 15)),
        h("button", { type: "button", class: "icon-btn", title: "Delete", "aria-label": `Delete ${c.title || "conversation"}`, onclick: () => this.remove(c) }, icon("trash", 15))));
  }

  async pin(c, pinned) {
    try {
      await put(`/conversations/${seg(c.conversationId)}/pin`, { pinned });
      await this.refresh();
    } catch (err) { showError(err); }
  }

  async rename(c) {
    const values = await modal({ title: "Rename conversation", fields: [{ name: "title", label: "Title", value: c.title || "", required: true }], submit: "Rename" });
    if (!values || !values.title.trim()) return;
    try {
      await put(`/conversations/${seg(c.conversationId)}/title`, { title: values.title.trim() });
      await this.refresh();
      document.dispatchEvent(new CustomEvent("conversation-renamed", { detail: { id: c.conversationId, title: values.title.trim() } }));
    } catch (err) { showError(err); }
  }

  async remove(c) {
    if (!(await confirmAction("Delete conversation", `Delete “${c.title || "Untitled"}” and its messages?`))) return;
    try {
      await del(`/conversations/${seg(c.conversationId)}`);
      await this.refresh();
      this.onDeleted?.(c.conversationId);
    } catch (err) { showError(err); }
  }
}

/** Agent icons are emoji or URLs; only short text is shown, never a remote image. */
export function iconText(icon) {
  if (!icon || /^(https?:|data:|\/)/.test(icon)) return "🤖";
  return Array.from(icon).slice(0, 2).join("");
}
