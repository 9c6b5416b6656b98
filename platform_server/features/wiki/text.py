"""Pure text helpers: extraction by file type, chunking, slugs and [[wikilinks]]."""

from __future__ import annotations

import html.parser
import io
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from platform_server.features.wiki import convert
from platform_server.lazy import lazy_import
from platform_server.web.errors import BadRequest

if TYPE_CHECKING:
    import pypdf
else:
    pypdf = lazy_import("pypdf")

TEXT_TYPES = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".log": "text/plain",
    ".csv": "text/csv",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    **convert.DOCUMENT_TYPES,  # docx, pptx, xlsx, epub
    **convert.CODE_TYPES,  # source code: text/x-<language>
}
MAX_SLUG = 120
WIKILINK = re.compile(r"\[\[([^\[\]|\n]{1,200})(?:\|([^\[\]\n]{0,200}))?\]\]")


def suffix_of(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot >= 0 else ""


def named_for(name: str, declared: str | None) -> str:
    """The uploaded file's name, with the extension of its part's declared content type added when its own names no
    type read here (a client uploading a blob types it instead of naming it; a generated client sends `file`)."""
    if suffix_of(name) in TEXT_TYPES:
        return name
    ctype = (declared or "").split(";")[0].strip().lower()
    suffix = next((s for s, t in TEXT_TYPES.items() if t == ctype), None)
    return name + suffix if suffix else name


def content_type_for(name: str) -> str:
    """The content type of a supported file name; 400 for anything else."""
    ctype = TEXT_TYPES.get(suffix_of(name))
    if ctype is None:
        raise BadRequest(
            "Unsupported file type: use .txt, .md, .markdown, .csv, .html, .htm, .pdf, .docx, .pptx, .xlsx, .epub "
            "or source code (" + ", ".join(sorted(convert.CODE_TYPES)) + ")"
        )
    return ctype


class _HtmlText(html.parser.HTMLParser):
    BLOCKS = {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "section",
        "article",
        "pre",
        "blockquote",
        "table",
        "ul",
        "ol",
        "header",
        "footer",
    }
    SKIP = {"script", "style", "noscript", "template", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Visible text of an HTML document (scripts and styles dropped, blocks on their own lines)."""
    parser = _HtmlText()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.parts)
    lines = [re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def pdf_to_text(data: bytes) -> str:
    """Text of every page of a PDF (pypdf); 400 when the file is not a readable PDF."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise BadRequest("Encrypted PDFs are not supported")
        pages = [(page.extract_text() or "").strip() for page in reader.pages]
    except BadRequest:
        raise
    except Exception as exc:  # noqa: BLE001 - any parser failure is the file's fault
        raise BadRequest(f"Unreadable PDF: {type(exc).__name__}")
    return "\n\n".join(p for p in pages if p)


def extract_text(data: bytes, content_type: str) -> str:
    """Text of a material by its content type (blocking: run it in an executor)."""
    if content_type == "application/pdf":
        return pdf_to_text(data)
    if convert.is_document(content_type):
        return convert.document_to_text(data, content_type)
    if b"\x00" in data[:8192]:
        raise BadRequest("The file is binary, not text")
    text = data.decode("utf-8-sig", errors="replace").replace("\r\n", "\n")
    if content_type == "text/html":
        return html_to_text(text)
    if convert.is_code(content_type):
        return convert.code_to_text(text, content_type) if text.strip() else ""
    return text.strip()


def chunk_text(text: str, size: int, overlap: int) -> list[str]:
    """Split text into pieces of about `size` characters, cut at paragraph or sentence ends, overlapping."""
    text = text.strip()
    if not text:
        return []
    chunks: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            window = text[start:end]
            cut = max(window.rfind("\n\n"), window.rfind(". "), window.rfind("\n"))
            if cut > size // 2:
                end = start + cut + 1
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end >= len(text):
            break
        start = max(end - overlap, start + 1)
    return chunks


def slugify(text: str) -> str:
    """Lower-case words joined by `-` (letters of any script kept)."""
    slug = re.sub(r"[\W_]+", "-", text.strip().lower()).strip("-")
    return slug[:MAX_SLUG].strip("-")


@dataclass(frozen=True)
class Wikilink:
    target: str
    label: str | None

    @property
    def slug(self) -> str:
        return slugify(self.target)


def wikilinks(markdown: str) -> list[Wikilink]:
    """The [[target]] / [[target|label]] links of a page, first occurrence of each target slug."""
    seen: set[str] = set()
    out: list[Wikilink] = []
    for m in WIKILINK.finditer(markdown):
        link = Wikilink(m.group(1).strip(), m.group(2))
        if link.slug and link.slug not in seen:
            seen.add(link.slug)
            out.append(link)
    return out


def rewrite_links(markdown: str, old_keys: set[str], new_target: str) -> str:
    """Point every link whose target slug is in old_keys at new_target, keeping labels."""

    def repl(m: re.Match[str]) -> str:
        if slugify(m.group(1)) not in old_keys:
            return m.group(0)
        label = m.group(2)
        return f"[[{new_target}|{label}]]" if label is not None else f"[[{new_target}]]"

    return WIKILINK.sub(repl, markdown)


def snippet(text: str, query: str, width: int = 240) -> str:
    """A short piece of text around the first query word found (else the start)."""
    flat = re.sub(r"\s+", " ", text).strip()
    lower = flat.lower()
    pos = -1
    for word in re.findall(r"\w+", query.lower()):
        pos = lower.find(word)
        if pos >= 0:
            break
    start = max(0, pos - width // 3) if pos >= 0 else 0
    piece = flat[start : start + width]
    return ("..." if start else "") + piece + ("..." if start + width < len(flat) else "")
