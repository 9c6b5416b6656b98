"""The web console's files: the entry page, its modules, the installable-app manifest and service worker,
and the local CA certificate a phone installs to trust this server's HTTPS (see `platform-server tls`)."""

from __future__ import annotations

import hashlib
import json
import os

import tornado.web

CONSOLE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-src 'none'; "
    "frame-ancestors 'none'"
)
SWAGGER_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# What the service worker keeps for offline starts: the shell only. API answers are never cached (they are
# per user and change), nor the API document's Swagger UI (2 MB the phone does not need).
SHELL_DIRS = ("app", "vendor/preact", "vendor/htm", "vendor/marked", "vendor/dompurify", "vendor/uplot", "icons")
SHELL_FILES = ("favicon.svg",)


def browser_headers(handler: tornado.web.RequestHandler, csp: str) -> None:
    """What every page and static file is served with: a CSP header, no framing, no sniffing, no referrer."""
    handler.set_header("Content-Security-Policy", csp)
    handler.set_header("X-Frame-Options", "DENY")
    handler.set_header("X-Content-Type-Options", "nosniff")
    handler.set_header("Referrer-Policy", "no-referrer")


class StaticHandler(tornado.web.StaticFileHandler):
    """The console's modules, styles and vendored libraries."""

    def set_extra_headers(self, path: str) -> None:
        browser_headers(self, CONSOLE_CSP)


class IndexHandler(tornado.web.StaticFileHandler):
    """The web console's entry page (and the swagger page, the app manifest) with no caching."""

    def set_extra_headers(self, path: str) -> None:
        self.set_header("Cache-Control", "no-cache")
        browser_headers(self, SWAGGER_CSP if path.startswith("swagger") else CONSOLE_CSP)

    def get_content_type(self) -> str:
        if self.absolute_path and self.absolute_path.endswith(".webmanifest"):
            return "application/manifest+json"
        return super().get_content_type()


def shell_urls(static_dir: str) -> list[str]:
    """The URLs of the console shell, sorted: the entry page, the manifest and every shell file."""
    urls = ["/", "/manifest.webmanifest"] + [f"/static/{name}" for name in SHELL_FILES]
    for folder in SHELL_DIRS:
        root = os.path.join(static_dir, folder)
        for base, _dirs, files in os.walk(root):
            for name in files:
                rel = os.path.relpath(os.path.join(base, name), static_dir).replace(os.sep, "/")
                urls.append(f"/static/{rel}")
    return sorted(urls)


def shell_version(static_dir: str, urls: list[str]) -> str:
    """A digest of the shell's contents: a changed file changes the worker's text, so browsers install the new
    shell and drop the old cache."""
    digest = hashlib.sha256()
    for url in urls:
        rel = "index.html" if url == "/" else url.removeprefix("/static/").removeprefix("/")
        with open(os.path.join(static_dir, rel), "rb") as f:
            digest.update(url.encode() + b"\0" + f.read())
    return digest.hexdigest()[:16]


class ServiceWorkerHandler(tornado.web.RequestHandler):
    """`/sw.js` at the root so its scope is the whole console: static/sw.js with the shell's file list and
    version filled in (read once per process; a restart after an upgrade serves the new one)."""

    def initialize(self, static_dir: str) -> None:
        self.static_dir = static_dir

    def get(self) -> None:
        text = _worker_text(self.static_dir)
        self.set_header("Content-Type", "text/javascript; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")  # browsers compare the worker byte for byte on each visit
        browser_headers(self, CONSOLE_CSP)
        self.finish(text)


_WORKERS: dict[str, str] = {}


def _worker_text(static_dir: str) -> str:
    text = _WORKERS.get(static_dir)
    if text is None:
        urls = shell_urls(static_dir)
        with open(os.path.join(static_dir, "sw.js"), encoding="utf-8") as f:
            template = f.read()
        text = template.replace('"__SHELL_VERSION__"', json.dumps(shell_version(static_dir, urls)))
        text = text.replace("[/* __SHELL_URLS__ */]", json.dumps(urls))
        _WORKERS[static_dir] = text
    return text


class CaCertHandler(tornado.web.RequestHandler):
    """`/ca.crt`: the public certificate of the local CA made by `platform-server tls`, for a phone to install
    and trust (404 when this server has none). Only the certificate: the CA's key never leaves the data dir."""

    def initialize(self, path: str) -> None:
        self.path = path

    def get(self) -> None:
        try:
            with open(self.path, "rb") as f:
                body = f.read()
        except FileNotFoundError:
            raise tornado.web.HTTPError(404) from None
        self.set_header("Content-Type", "application/x-x509-ca-cert")
        self.set_header("Content-Disposition", 'attachment; filename="platform-ca.crt"')
        browser_headers(self, CONSOLE_CSP)
        self.finish(body)


def console_routes(static_dir: str, ca_cert_path: str) -> list[tuple[str, type[tornado.web.RequestHandler], dict[str, str]]]:
    """The console's routes, after the API's."""
    return [
        (r"/(swagger-ui\.html|manifest\.webmanifest)$", IndexHandler, {"path": static_dir}),
        (r"/(favicon\.ico)$", StaticHandler, {"path": static_dir}),  # browsers ask for it whatever the page links
        (r"/sw\.js$", ServiceWorkerHandler, {"static_dir": static_dir}),
        (r"/ca\.crt$", CaCertHandler, {"path": ca_cert_path}),
        (r"/static/(.*)", StaticHandler, {"path": static_dir}),
        (r"/()$", IndexHandler, {"path": static_dir, "default_filename": "index.html"}),
    ]
