// Deep research over one KB: the question goes to /wiki/research/start and its events stream in.
import { apiHeaders, post, seg } from "../../api.js";
import { readSse } from "../../sse.js";
import { html, useEffect, useRef, useState } from "../../ui.js";
import { Check, Field, Panel, toastError } from "../../components/index.js";
import { Markdown } from "./page.js";
import { pageHref } from "./links.js";

export function Research({ kbId }) {
  const [question, setQuestion] = useState("");
  const [save, setSave] = useState(false);
  const [events, setEvents] = useState([]);
  const [running, setRunning] = useState(false);
  const abort = useRef(null);
  useEffect(() => () => abort.current?.abort(), []);

  async function start(e) {
    e.preventDefault();
    abort.current?.abort();
    setEvents([]);
    setRunning(true);
    try {
      const { sessionId } = await post("/wiki/research/start", { kbId, question: question.trim(), saveAsPage: save });
      abort.current = new AbortController();
      const response = await fetch(`/api/v1/wiki/research/stream/${seg(sessionId)}`,
        { headers: apiHeaders(), signal: abort.current.signal });
      for await (const frame of readSse(response)) {
        if (frame.event === "heartbeat") continue;
        setEvents((list) => [...list, frame]);
        if (frame.event === "done" || frame.event === "error") break;
      }
    } catch (err) {
      if (err.name !== "AbortError") toastError(err);
    } finally {
      setRunning(false);
    }
  }

  const report = events.find((f) => f.event === "report");
  const failed = events.find((f) => f.event === "error");
  const done = events.find((f) => f.event === "done");
  return html`<${Panel} title="Research" id="wiki-research">
    <form class="stack" onSubmit=${start}>
      <${Field} label="Question"><input name="research-question" value=${question} minlength="3" maxlength="2000"
        onInput=${(e) => setQuestion(e.currentTarget.value)} /><//>
      <${Check} label="Save the report as a synthesis page" checked=${save} onChange=${setSave} />
      <div><button type="submit" class="btn btn-primary" disabled=${running || question.trim().length < 3}>
        ${running ? "Researching…" : "Research"}</button></div>
    </form>
    ${events.length > 0 && html`<ol class="research-log" aria-live="polite">
      ${events.filter((f) => f.event !== "report").map((f, i) => html`<li key=${i} data-event=${f.event}>${describe(f)}</li>`)}
    </ol>`}
    ${failed && html`<p class="field-error" role="alert">${failed.data.message}</p>`}
    ${report && html`<div class="research-report">
      <${Markdown} text=${report.data.markdown} kbId=${kbId} links=${[]} />
      ${done && done.data.pageSlug && html`<p>Saved as <a href=${pageHref(kbId, done.data.pageSlug)}>${done.data.pageSlug}</a></p>`}
    </div>`}
  <//>`;
}

function describe(f) {
  const d = f.data || {};
  switch (f.event) {
    case "plan": return `Plan: ${(d.queries || []).join(" · ")}`;
    case "search": return `Round ${d.round}: "${d.query}" found ${(d.pages || []).length} pages, ${(d.chunks || []).length} passages`;
    case "finding": return `Finding: ${d.text}`;
    case "done": return `Done (${d.findings} findings)`;
    case "error": return "Stopped";
    default: return f.event;
  }
}
