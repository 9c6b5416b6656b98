"""Office documents, e-books and source code as text for the wiki (blocking: run in an executor).

docx, pptx, xlsx and epub are zip archives read by their own well-kept libraries (python-docx,
python-pptx, openpyxl, ebooklib; lxml under them resolves no external entity). Their members are
sized before parsing, so a small archive that inflates to gigabytes is refused, not unpacked.
Source code is kept as it is, in a fence naming its language, so chunks and pages keep it verbatim.
"""

from __future__ import annotations

import io
import zipfile
from typing import TYPE_CHECKING, Callable

from platform_server.lazy import lazy_import
from platform_server.web.errors import BadRequest

if TYPE_CHECKING:
    import docx
    import docx.table as docx_table
    import ebooklib
    import openpyxl
    import pptx
    from ebooklib import epub
else:
    docx = lazy_import("docx")
    docx_table = lazy_import("docx.table")
    pptx = lazy_import("pptx")
    openpyxl = lazy_import("openpyxl")
    ebooklib = lazy_import("ebooklib")
    epub = lazy_import("ebooklib.epub")

MAX_UNZIPPED = 200 * 1024 * 1024  # bytes an office file or e-book may inflate to
MAX_CHARS = 2_000_000  # stop reading once this much text is out (raw.MAX_TEXT_CHARS refuses more)

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EPUB = "application/epub+zip"
DOCUMENT_TYPES = {".docx": DOCX, ".pptx": PPTX, ".xlsx": XLSX, ".epub": EPUB}

# suffix -> the language named in the fence; the content type is text/x-<language>
CODE_LANGUAGES = {
    ".py": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".jsx": "jsx",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".java": "java",
    ".kt": "kotlin",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".hpp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".scala": "scala",
    ".sh": "bash",
    ".sql": "sql",
    ".css": "css",
    ".lua": "lua",
    ".r": "r",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".xml": "xml",
}
CODE_TYPES = {suffix: f"text/x-{lang}" for suffix, lang in CODE_LANGUAGES.items()}
_LANGUAGE_OF_TYPE = {f"text/x-{lang}": lang for lang in CODE_LANGUAGES.values()}


def is_code(content_type: str) -> bool:
    return content_type in _LANGUAGE_OF_TYPE


def code_to_text(text: str, content_type: str) -> str:
    """Source code in a fence naming its language (a longer fence when the code holds one)."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{_LANGUAGE_OF_TYPE[content_type]}\n{text.strip()}\n{fence}"


def _check_zip(data: bytes, kind: str) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            total = sum(info.file_size for info in z.infolist())
    except (zipfile.BadZipFile, ValueError, OSError):
        raise BadRequest(f"Unreadable {kind}: not a {kind} file")
    if total > MAX_UNZIPPED:
        raise BadRequest(f"Unreadable {kind}: it unpacks to more than {MAX_UNZIPPED} bytes")


class _Text:
    """Lines gathered up to MAX_CHARS (a huge sheet stops being read there)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.size = 0

    def add(self, line: str) -> bool:
        self.lines.append(line)
        self.size += len(line) + 1
        return self.size <= MAX_CHARS

    def text(self) -> str:
        return "\n".join(self.lines).strip()


def _docx(data: bytes) -> str:
    document = docx.Document(io.BytesIO(data))
    out = _Text()
    for block in document.iter_inner_content():
        if isinstance(block, docx_table.Table):
            for row in block.rows:
                if not out.add(" | ".join(cell.text.strip() for cell in row.cells)):
                    break
            out.add("")
            continue
        text = block.text.strip()
        style = (block.style.name if block.style is not None else "") or ""
        if text and style.startswith("Heading") and style[7:].strip().isdigit():
            text = "#" * min(6, int(style[7:])) + " " + text
        elif text and style == "Title":
            text = "# " + text
        if not out.add(text + "\n" if text else ""):
            break
    return out.text()


def _pptx(data: bytes) -> str:
    deck = pptx.Presentation(io.BytesIO(data))
    out = _Text()
    for n, slide in enumerate(deck.slides, start=1):
        out.add(f"## Slide {n}\n")
        for shape in slide.shapes:
            if shape.has_text_frame:
                out.add(shape.text_frame.text.strip())
            elif getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    out.add(" | ".join(cell.text.strip() for cell in row.cells))
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                out.add(f"Notes: {notes}")
        if not out.add(""):
            break
    return out.text()


def _xlsx(data: bytes) -> str:
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    out = _Text()
    try:
        for sheet in book.worksheets:
            out.add(f"## {sheet.title}\n")
            for row in sheet.iter_rows(values_only=True):
                cells = ["" if v is None else str(v).strip() for v in row]
                while cells and not cells[-1]:
                    cells.pop()
                if cells and not out.add(" | ".join(cells)):
                    return out.text()
            out.add("")
    finally:
        book.close()
    return out.text()


def _epub(data: bytes) -> str:
    from platform_server.features.wiki.text import html_to_text  # text imports this module

    book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": True})
    out = _Text()
    for item_id, _linear in book.spine:
        item = book.get_item_with_id(item_id)
        if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT:
            continue
        text = html_to_text(item.get_content().decode("utf-8", errors="replace"))
        if text and not out.add(text + "\n"):
            break
    return out.text()


_READERS: dict[str, tuple[str, Callable[[bytes], str]]] = {DOCX: ("DOCX", _docx), PPTX: ("PPTX", _pptx), XLSX: ("XLSX", _xlsx), EPUB: ("EPUB", _epub)}


def is_document(content_type: str) -> bool:
    return content_type in _READERS


def document_to_text(data: bytes, content_type: str) -> str:
    """Text of a docx, pptx, xlsx or epub file; 400 when it is not a readable one."""
    kind, read = _READERS[content_type]
    _check_zip(data, kind)
    try:
        return read(data)
    except BadRequest:
        raise
    except Exception as exc:  # noqa: BLE001 - any parser failure is the file's fault
        raise BadRequest(f"Unreadable {kind}: {type(exc).__name__}")
