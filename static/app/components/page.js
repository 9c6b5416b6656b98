// The frame every page sits in: a heading with actions, then loading, error, empty or the content.
import { html, useCallback, useEffect, useRef, useState } from "../ui.js";
import { toast, toastError } from "./toast.js";

/**
 * Load data for a page: `const state = useLoad(() => get("/x"), [dep])`.
 * state = {data, error, loading, reload(), setData(fn|value)}; a stale answer never overwrites a newer one.
 * A page that draws no ErrorBox asks `{ toastErrors: true }`: a failed load is then said in a toast.
 */
export function useLoad(load, deps = [], { toastErrors = false } = {}) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const seq = useRef(0);
  const run = useCallback(async (quiet = false) => {
    const mine = ++seq.current;
    if (!quiet) setState((s) => ({ ...s, loading: true, error: null }));
    try {
      const data = await load();
      if (mine === seq.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === seq.current) {
        setState((s) => ({ ...s, error, loading: false }));
        if (toastErrors) toastError(error);
      }
    }
  }, deps); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => { run(); return () => { seq.current++; }; }, [run]);
  const setData = useCallback((next) => setState((s) => ({ ...s, data: typeof next === "function" ? next(s.data) : next })), []);
  return { ...state, reload: run, setData };
}

/** Run an action with a busy flag: `const [busy, run] = useAction(); run(() => post(…), "Saved")`; `done` (text,
 * or a function of the result) is toasted on success, an error is toasted; resolves to the result or undefined. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (fn, done) => {
    setBusy(true);
    try {
      const result = await fn();
      if (done) toast(typeof done === "function" ? done(result) : done, "ok");
      return result;
    } catch (err) {
      toastError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return [busy, run];
}

/** A page for nav.js whose component draws its own heading (Head) and panels: the wide frame around it,
 * with the hash's args. */
export function page(Component) {
  loadBuildStyles();
  return function WidePage({ args }) {
    return html`<div class="page-inner wide build-page"><${Component} args=${args || []} /></div>`;
  };
}

function loadBuildStyles() {
  if (document.querySelector("link[data-build-css]")) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/static/app/views/builder/build.css";
  link.dataset.buildCss = "1";
  document.head.appendChild(link);
}

/** Call `fn` every `ms` while the tab is visible (and once at once when it becomes visible again). */
export function usePoll(fn, ms, deps = []) {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    const tick = () => { if (document.visibilityState !== "hidden") saved.current(); };
    const timer = setInterval(tick, ms);
    document.addEventListener("visibilitychange", tick);
    return () => { clearInterval(timer); document.removeEventListener("visibilitychange", tick); };
  }, [ms, ...deps]); // eslint-disable-line react-hooks/exhaustive-deps
}

export function Loading({ label = "Loading…" }) {
  return html`<p class="loading" role="status">${label}</p>`;
}

/** An API error in words, with a retry button when given one. */
export function ErrorBox({ error, retry }) {
  if (!error) return null;
  const status = error.status ? ` (${error.status})` : "";
  return html`<div class="error-box" role="alert">
    <p><strong>Could not load this${status}.</strong> ${error.message || String(error)}</p>
    ${retry && html`<button type="button" class="btn btn-small" onClick=${() => retry()}>Try again</button>`}
  </div>`;
}

export function Empty({ children }) {
  return html`<div class="empty-state">${children}</div>`;
}

/**
 * A page: <PageFrame title="Audit" actions=${buttons} state=${useLoad(...)} empty="Nothing yet"
 *   isEmpty=${(d) => !d.length}>${(data) => html`...`}</PageFrame>
 * Without `state` the children render as they are.
 */
export function PageFrame({ title, subtitle, actions, state, empty, isEmpty, wide, children }) {
  let body = children;
  if (state) {
    if (state.error && state.data === undefined) body = html`<${ErrorBox} error=${state.error} retry=${state.reload} />`;
    else if (state.loading && state.data === undefined) body = html`<${Loading} />`;
    else if (empty && (isEmpty ? isEmpty(state.data) : isBlank(state.data))) body = html`<${Empty}>${empty}<//>`;
    else body = typeof children === "function" ? children(state.data) : children;
  }
  return html`<div class=${wide ? "page-inner wide" : "page-inner"}>
    <div class="page-head">
      <div><h1>${title}</h1>${subtitle && html`<p class="muted page-sub">${subtitle}</p>`}</div>
      ${actions && html`<div class="page-actions">${actions}</div>`}
    </div>
    ${state?.error && state.data !== undefined && html`<${ErrorBox} error=${state.error} retry=${state.reload} />`}
    ${body}
  </div>`;
}

function isBlank(data) {
  if (data == null) return true;
  if (Array.isArray(data)) return data.length === 0;
  if (Array.isArray(data.records)) return data.records.length === 0;
  return false;
}

/** A titled panel inside a page. */
export function Panel({ title, actions, children, id, class: cls = "" }) {
  return html`<section class=${`panel ${cls}`} id=${id} aria-labelledby=${id && `${id}-title`}>
    ${(title || actions) && html`<div class="card-head">
      ${title && html`<h2 id=${id && `${id}-title`}>${title}</h2>`}
      ${actions && html`<div class="grow"></div>${actions}`}
    </div>`}
    ${children}
  </section>`;
}
