// A time-series chart (uPlot, loaded on demand) that follows its box's width and the theme's colours.
// <Chart label="Tokens per day" x=${[unixSeconds…]} series=${[{label: "input", values: […]}, …]} bars />
import { html, loadUPlot, useEffect, useRef, useState } from "../ui.js";

const PALETTE = ["--accent", "--ok", "--warn", "--danger", "--muted"];

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

/** A counter that moves whenever the theme changes (the toggle or the system setting), to redraw in its colours. */
function useThemeVersion() {
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const bump = () => setVersion((v) => v + 1);
    const observer = new MutationObserver(bump);
    observer.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
    const media = window.matchMedia("(prefers-color-scheme: dark)");
    media.addEventListener("change", bump);
    return () => { observer.disconnect(); media.removeEventListener("change", bump); };
  }, []);
  return version;
}

export function Chart({ label, x, series, height = 220, bars = false }) {
  const box = useRef(null);
  const theme = useThemeVersion();
  useEffect(() => {
    let plot = null;
    let observer = null;
    let cancelled = false;
    loadUPlot().then((uPlot) => {
      if (cancelled || !box.current) return;
      const text = cssVar("--muted");
      const grid = cssVar("--border");
      const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
      const opts = {
        width: Math.max(200, box.current.clientWidth),
        height,
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        // bars get half a day of room at both ends so the first and last are drawn whole
        scales: { x: bars ? { time: true, range: (u, min, max) => [min - 43200, max + 43200] } : { time: true } },
        axes: [axis, { ...axis, size: 56 }],
        series: [{}, ...series.map((s, i) => {
          const color = cssVar(PALETTE[i % PALETTE.length]);
          return {
            label: s.label, stroke: color, width: 2,
            fill: bars ? color + "55" : undefined,
            paths: bars ? uPlot.paths.bars({ size: [0.6, 40] }) : undefined,
            points: { show: x.length < 3 },
          };
        })],
      };
      plot = new uPlot(opts, [x, ...series.map((s) => s.values)], box.current);
      observer = new ResizeObserver(() => {
        if (box.current) plot.setSize({ width: Math.max(200, box.current.clientWidth), height });
      });
      observer.observe(box.current);
    });
    return () => { cancelled = true; observer?.disconnect(); plot?.destroy(); };
  }, [JSON.stringify([x, series.map((s) => [s.label, s.values])]), height, bars, theme]);
  return html`<figure class="chart" aria-label=${label}>
    <figcaption>${label}</figcaption>
    <div class="chart-box" ref=${box}></div>
  </figure>`;
}
