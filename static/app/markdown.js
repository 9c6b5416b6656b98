// Markdown to sanitized HTML. The only place the console assigns innerHTML.
import { Marked } from "../vendor/marked/marked.esm.js";
import DOMPurify from "../vendor/dompurify/purify.es.js";

const md = new Marked({ gfm: true, breaks: true, async: false });

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
  if (node.tagName === "IMG") {
    // Only local or inline images: the console works offline and never beacons out.
    const src = node.getAttribute("src") || "";
    if (!(src.startsWith("/api/v1/") || src.startsWith("data:image/"))) node.removeAttribute("src");
  }
});

const PURIFY = {
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed"],
  FORBID_ATTR: ["style"],
};

/** Render markdown text into an element, sanitized. */
export function renderMarkdown(el, text) {
  const html = md.parse(String(text ?? ""));
  el.innerHTML = DOMPurify.sanitize(html, PURIFY);
}
