// The chat page: conversation list, agent and model pickers, messages, streaming answers. The state and the
// actions live in chat/controller.js; this draws them (Preact) whenever they change.
import { html, useEffect, useLayoutEffect, useReducer, useRef } from "../ui.js";
import { Icon, toastError } from "../components/index.js";
import { ChatController } from "../chat/controller.js";
import { MessageItems } from "../chat/history.js";
import { ConversationSidebar, iconText } from "../chat/list.js";
import { MicButton, TalkBar } from "../chat/talk.js";
import { Composer } from "../chat/composer.js";

export default function ChatPage({ args = [] }) {
  const [, redraw] = useReducer((n) => n + 1, 0);
  const ref = useRef(null);
  if (!ref.current) ref.current = { chat: new ChatController(redraw), ready: null };
  const { chat } = ref.current;
  useEffect(() => {
    ref.current.ready = chat.init().catch(toastError);
    return () => chat.destroy();
  }, []);
  const key = args.join("/");
  useEffect(() => {
    ref.current.ready.then(() => chat.update(args)).catch(toastError);
  }, [key]);
  const messages = useRef(null);
  const height = useRef(0);
  useLayoutEffect(() => { // keep the newest message in view (or the reader's place when older ones came in)
    const el = messages.current;
    const wanted = chat.scrollWanted;
    chat.scrollWanted = null;
    if (el && wanted === "keep") el.scrollTop += el.scrollHeight - height.current;
    else if (el && (wanted === "force" || (wanted === "near" && el.scrollHeight - el.scrollTop - el.clientHeight < 160))) el.scrollTop = el.scrollHeight;
    if (el) height.current = el.scrollHeight;
  });
  const ctx = {
    actions: chat.actions, latest: chat.latestTurn(), editing: chat.editing, canEdit: (item) => chat.canEdit(item),
    onEdit: (item) => chat.edit(item), onCancelEdit: () => chat.cancelEdit(), onResend: (item, text) => chat.resend(text, item.id),
    onEarlier: (item) => chat.earlier(item), onShow: () => chat.changed(),
  };
  const toggleList = () => { chat.showList = !chat.showList; redraw(); };
  return html`<div class=${"chat-layout" + (chat.showList ? " show-list" : "")}
      onKeyDown=${(e) => { if (e.key === "Escape" && chat.showList) { chat.showList = false; redraw(); } }}>
    <${ConversationSidebar} list=${chat.list} />
    <section class="chat-pane">
      <header class="chat-head">
        <button type="button" class="icon-btn sidebar-toggle" aria-label="Conversations" aria-controls="conv-sidebar" onClick=${toggleList}><${Icon} name="menu" size=${20} /></button>
        <h1 class="chat-title">${chat.title}</h1>
        <div class="pickers"><${Pickers} chat=${chat} /></div>
      </header>
      <div class="messages" role="log" aria-label="Messages" ref=${messages}>
        ${chat.loadError ? html`<p class="error">${chat.loadError}</p>`
          : chat.items.length ? html`<${MessageItems} items=${chat.items} ctx=${ctx} />`
          : chat.isNew && chat.ready ? html`<${EmptyChat} hasAgents=${chat.agents.length > 0} />` : null}
      </div>
      <${TalkBar} talk=${chat.talk} />
      <${Composer} running=${Boolean(chat.running)} onSend=${(text, files) => chat.send(text, files)} onStop=${() => chat.stop()}
        tools=${html`<${MicButton} talk=${chat.talk} />`} boxRef=${chat.box} />
    </section>
  </div>`;
}

function Pickers({ chat }) {
  const agents = chat.agentOptions();
  return html`
    <select class="agent-picker" aria-label="Agent" disabled=${chat.agentLocked} value=${chat.agentId} onChange=${(e) => chat.pickAgent(e.currentTarget.value)}>
      ${agents.length ? agents.map((a) => html`<option value=${a.id}>${iconText(a.icon)} ${a.name}</option>`) : html`<option value="">No agents</option>`}
    </select>
    <select class="model-picker" aria-label="Model" value=${chat.modelValue} onChange=${(e) => chat.changeModel(e.currentTarget.value)}>
      <option value="">Default model</option>
      ${chat.models.map((m, i) => html`<option value=${String(i)}>${m.displayName || m.modelName} · ${m.providerId}${m.label ? ` (${m.label})` : ""}</option>`)}
    </select>`;
}

function EmptyChat({ hasAgents }) {
  return html`<div class="empty-chat">
    <p class="empty-title">${hasAgents ? "Start a conversation" : "No agents yet"}</p>
    ${hasAgents ? html`<p>Pick an agent above and send a message.</p>` : html`<p>Create one on the <a href="#/agents">Agents</a> page.</p>`}
  </div>`;
}
