// Render stored messages (MessageVO) as user bubbles and assistant turns.
import { h } from "../dom.js";
import { authImage } from "./attachments.js";
import { Turn } from "./turn.js";

/** A user message bubble; text and image parts, never HTML. */
export function userBubble({ text, parts, id }) {
  const images = (parts || []).filter((p) => p && p.type === "image" && p.url);
  const partText = (parts || []).filter((p) => p && p.type === "text").map((p) => p.text).join("\n");
  return h("div", { class: "msg user", dataset: { id: id || "" } },
    h("div", { class: "bubble" },
      images.length ? h("div", { class: "msg-images" }, images.map((p) => authImage(p.url, p.name || "attachment"))) : null,
      h("div", { class: "msg-text", text: text || partText || "" })));
}

/** An empty assistant container for a Turn. */
export function assistantBox() {
  return h("div", { class: "msg assistant" });
}

function toolCallsOf(message) {
  const calls = message?.metadata?.toolCalls;
  return Array.isArray(calls) ? calls : [];
}

/** Convert one stored assistant turn (assistant and tool messages) into Turn frames. */
function framesFor(messages) {
  const frames = [];
  for (const m of messages) {
    if (m.role === "assistant") {
      const thinking = m.metadata?.thinking || m.metadata?.reasoning;
      if (thinking) frames.push({ event: "thinking_delta", data: { delta: String(thinking) } });
      if (m.content) frames.push({ event: "content_delta", data: { delta: m.content } });
      for (const c of toolCallsOf(m)) {
        const name = c.toolName || c.name || c.function?.name;
        const args = c.arguments ?? c.function?.arguments ?? "";
        const id = c.toolCallId || c.id;
        frames.push({ event: "tool_call_started", data: { toolCallId: id, toolName: name, arguments: args } });
        if (c.result !== undefined) {
          frames.push({ event: "tool_call_completed", data: { toolCallId: id, toolName: name, result: c.result, success: c.success !== false } });
        }
      }
    } else if (m.role === "tool") {
      const meta = m.metadata || {};
      frames.push({ event: "tool_call_completed", data: {
        toolCallId: meta.toolCallId || m.toolCallId, toolName: m.toolName || meta.toolName,
        result: m.content, success: !(meta.success === false || m.status === "failed"),
      } });
    }
  }
  const last = messages[messages.length - 1];
  const status = last?.status && last.status !== "streaming" ? last.status : "completed";
  const model = [...messages].reverse().find((m) => m.runtimeModel)?.runtimeModel;
  const sum = (key) => messages.reduce((n, m) => n + (Number(m[key]) || 0), 0);
  frames.push({ event: "done", data: { status, runtimeModel: model, promptTokens: sum("promptTokens"), completionTokens: sum("completionTokens") } });
  return frames;
}

/**
 * Render messages into `list`. Returns the Turn objects keyed by the index of their user message.
 * onDecision is used by approval cards restored later.
 */
export function renderHistory(list, messages, { onDecision } = {}) {
  let group = [];
  const flush = () => {
    if (!group.length) return;
    const box = assistantBox();
    list.append(box);
    const turn = new Turn(box, { onDecision });
    framesFor(group).forEach((f) => turn.apply(f));
    turn.flush();
    group = [];
  };
  for (const m of messages) {
    if (m.role === "user") {
      flush();
      list.append(userBubble({ text: m.content, parts: m.contentParts, id: m.id }));
    } else if (m.role === "assistant" || m.role === "tool") {
      group.push(m);
    }
  }
  flush();
}
