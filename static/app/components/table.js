// A data table: columns [{key, label, render?(row), class?}], rows; scrolls sideways inside its box at phone width.
import { html } from "../ui.js";

export function Table({ columns, rows, rowKey = (r) => r.id, empty = "Nothing to show.", caption, label, rowProps }) {
  if (!rows || rows.length === 0) return html`<p class="muted table-empty">${empty}</p>`;
  return html`<div class="table-wrap" role="region" aria-label=${label || caption} tabindex="0">
    <table class="data-table">
      ${caption && html`<caption>${caption}</caption>`}
      <thead><tr>${columns.map((c) => html`<th scope="col" class=${c.class}>${c.label}</th>`)}</tr></thead>
      <tbody>
        ${rows.map((row) => html`<tr key=${rowKey(row)} ...${rowProps ? rowProps(row) : {}}>
          ${columns.map((c) => html`<td class=${c.class} data-label=${c.label}>${c.render ? c.render(row) : display(row[c.key])}</td>`)}
        </tr>`)}
      </tbody>
    </table>
  </div>`;
}

function display(value) {
  if (value === null || value === undefined || value === "") return "—";
  if (typeof value === "boolean") return value ? "yes" : "no";
  return String(value);
}

/** Previous / next for a paged answer ({records,total,current,size} or {page,size,total}). */
export function Pager({ page, size, total, onPage }) {
  const pages = Math.max(1, Math.ceil((total || 0) / (size || 1)));
  if (pages <= 1) return null;
  return html`<nav class="pager" aria-label="Pages">
    <button type="button" class="btn btn-small" disabled=${page <= 1} onClick=${() => onPage(page - 1)}>Previous</button>
    <span class="muted">Page ${page} of ${pages} · ${total} in all</span>
    <button type="button" class="btn btn-small" disabled=${page >= pages} onClick=${() => onPage(page + 1)}>Next</button>
  </nav>`;
}

/** Format an ISO time as a local date and time. */
export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString([], { dateStyle: "short", timeStyle: "short" });
}
