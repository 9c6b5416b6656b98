// Parse a text/event-stream body read from fetch() into {id, event, data} frames.

/** Yield frames as they arrive; `data` is parsed JSON when it parses. */
export async function* readSse(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = nextBoundary(buffer)) !== null) {
        const frame = parseFrame(buffer.slice(0, cut.start));
        buffer = buffer.slice(cut.end);
        if (frame) yield frame;
      }
    }
    buffer += decoder.decode();
    const last = parseFrame(buffer);
    if (last) yield last;
  } finally {
    reader.releaseLock();
  }
}

function nextBoundary(text) {
  const match = /\r?\n\r?\n/.exec(text);
  return match ? { start: match.index, end: match.index + match[0].length } : null;
}

function parseFrame(block) {
  let event = "message";
  let id = null;
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") event = value;
    else if (name === "data") data.push(value);
    else if (name === "id") id = value;
  }
  if (!data.length) return null;
  const text = data.join("\n");
  let parsed = text;
  try { parsed = JSON.parse(text); } catch { /* plain text */ }
  return { id, event, data: parsed };
}
