// A data table: columns [{key, label, render?(row), class?}], rows; at phone width each row stacks into label/value
// lines (a cell's content stays one box next to its label, however many elements it has).
import { html } from "../ui.js";

export function Table({ columns, rows, rowKey = (r) => r.id, empty = "Nothing to show.", caption, label, rowProps }) {
  if (!rows || rows.length === 0) return html`<p class="muted table-empty">${empty}</p>`;
  return html`<div class="table-wrap" role="region" aria-label=${label || caption} tabindex="0">
    <table class="data-table">
      ${caption && html`<caption>${caption}</caption>`}
      <thead><tr>${columns.map((c) => html`<th scope="col" class=${c.class}>${c.label}</th>`)}</tr></thead>
      <tbody>
        ${rows.map((row) => html`<tr key=${rowKey(row)} ...${rowProps ? rowProps(row) : {}}>
          ${columns.map((c) => html`<td class=${c.class} data-label=${c.label}><div class="cell">${c.render ? c.render(row) : display(row[c.key])}</div></td>`)}
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

/** An ISO time in the one format the console shows times in: the viewer's, or `zone` (an IANA name) with the
 * zone's abbreviation (a cron job's next run in the job's zone). "—" when there is none. */
export function when(iso, zone) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const shape = { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" };
  try {
    return d.toLocaleString([], zone ? { ...shape, timeZone: zone, timeZoneName: "short" } : shape);
  } catch {
    return d.toLocaleString([], shape); // an unknown zone name: the viewer's time rather than nothing
  }
}
