// The console's component toolkit: Preact with htm tagged templates (no build step, no eval,
// so it runs under the strict CSP) and uPlot for time series. Pages import from here only.
import { h, render, Fragment, cloneElement, createContext } from "/static/vendor/preact/preact.mjs";
import {
  useState, useEffect, useMemo, useCallback, useRef, useReducer, useLayoutEffect, useContext, useId,
} from "/static/vendor/preact/hooks.mjs";
import htm from "/static/vendor/htm/htm.mjs";

/** `html\`<div class=${cls}>${child}</div>\`` builds Preact elements. */
export const html = htm.bind(h);

export {
  h, render, Fragment, cloneElement, createContext,
  useState, useEffect, useMemo, useCallback, useRef, useReducer, useLayoutEffect, useContext, useId,
};

/** uPlot is loaded on demand: only pages with charts pay for it. */
export async function loadUPlot() {
  if (!document.querySelector("link[data-uplot]")) {
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = "/static/vendor/uplot/uPlot.min.css";
    link.dataset.uplot = "1";
    document.head.appendChild(link);
  }
  const mod = await import("/static/vendor/uplot/uPlot.esm.js");
  return mod.default;
}
