// The API's answer shapes read one way, whichever shape a route has (a list, a page, the compat rows).

/** Records of a paged answer, or the list itself. */
export function rows(data) {
  if (Array.isArray(data)) return data;
  if (data && Array.isArray(data.records)) return data.records;
  if (data && Array.isArray(data.items)) return data.items;
  return [];
}

/** Tool names bound to an agent: rows `[{toolName}]` (current) or `{toolNames}` (earlier shape). */
export function boundNames(data, key = "toolName") {
  if (Array.isArray(data)) return data.map((r) => (typeof r === "string" ? r : r[key])).filter(Boolean);
  return data?.[`${key}s`] || [];
}

/** Read a <form>'s named controls into an object (checkboxes as booleans). */
export function formValues(form) {
  const out = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    out[el.name] = el.type === "checkbox" ? el.checked : el.value;
  }
  return out;
}
