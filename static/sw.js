// The console's service worker (served at /sw.js with the shell's file list and version filled in).
// It keeps the shell (the entry page, the console's modules, styles, vendored libraries, icons) so the app
// starts offline and says so; it never keeps an API answer (those are per user and change), and never
// answers a request that is not a GET of this origin. Online, every shell request goes to the network first,
// so an upgrade shows at once; the copy is used only when the network fails.
const VERSION = "__SHELL_VERSION__";
const SHELL_URLS = [/* __SHELL_URLS__ */];
const CACHE = `shell-${VERSION}`;

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll(SHELL_URLS.map((url) => new Request(url, { cache: "reload" })));
    await self.skipWaiting();
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

function isShell(url) {
  return url.origin === self.location.origin && (url.pathname === "/" || SHELL_URLS.includes(url.pathname));
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (!isShell(url)) return; // API calls, streams, uploads, Swagger: straight to the network, never kept
  event.respondWith((async () => {
    try {
      const response = await fetch(request);
      if (response.ok && response.type === "basic") {
        const copy = response.clone();
        caches.open(CACHE).then((cache) => cache.put(url.pathname, copy));
      }
      return response;
    } catch (err) {
      const kept = await caches.match(url.pathname, { cacheName: CACHE });
      if (kept) return kept;
      throw err;
    }
  })());
});
