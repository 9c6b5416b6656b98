// HTTP client for /api/v1: bearer token, workspace header, envelope unwrapping, silent renewal.
const TOKEN_KEY = "ap.token";
const USER_KEY = "ap.user";
const WS_KEY = "ap.workspace";

/** Broadcasts "auth-lost" (a 401 on an authenticated call) and "workspace" (switched). */
export const bus = new EventTarget();

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

export const session = {
  get token() { return localStorage.getItem(TOKEN_KEY) || ""; },
  set token(value) {
    if (value) localStorage.setItem(TOKEN_KEY, value);
    else localStorage.removeItem(TOKEN_KEY);
  },
  get user() {
    try { return JSON.parse(localStorage.getItem(USER_KEY) || "null"); } catch { return null; }
  },
  set user(value) {
    if (value) localStorage.setItem(USER_KEY, JSON.stringify(value));
    else localStorage.removeItem(USER_KEY);
  },
  get workspace() { return localStorage.getItem(WS_KEY) || "1"; },
  set workspace(value) {
    localStorage.setItem(WS_KEY, String(value));
    bus.dispatchEvent(new CustomEvent("workspace", { detail: String(value) }));
  },
  /** Remember a LoginResponse. */
  login(data) {
    this.token = data.token;
    this.user = { id: data.id, username: data.username, nickname: data.nickname, role: data.role };
  },
  logout() {
    this.token = "";
    this.user = null;
  },
  get isAdmin() { return this.user?.role === "admin"; },
};

/** Headers for an API call: token, workspace, plus extras. */
export function apiHeaders(extra = {}) {
  const headers = { "X-Workspace-Id": session.workspace, ...extra };
  if (session.token) headers.Authorization = "Bearer " + session.token;
  return headers;
}

/** Replace the stored token when the server sends a renewed one. */
export function takeRenewal(response) {
  const renewed = response.headers.get("X-New-Token");
  if (renewed && session.token) session.token = renewed;
}

function withQuery(path, query) {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  const text = params.toString();
  return text ? `${path}${path.includes("?") ? "&" : "?"}${text}` : path;
}

/** A fresh key for one POST: its retry below sends the same key, so the server creates at most once. */
export function newIdempotencyKey() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  return Date.now().toString(36) + "-" + Math.random().toString(36).slice(2);
}

/** fetch; a POST whose connection failed, or that the server answered 503 (busy: nothing saved), is sent
 * once more after a short pause with the same Idempotency-Key (a create already done is answered again). */
async function fetchOnceMore(url, init) {
  const retriable = init.method === "POST" && !(init.body instanceof FormData);
  try {
    const response = await fetch(url, init);
    if (!retriable || response.status !== 503) return response;
  } catch (err) {
    if (!retriable || err?.name === "AbortError") throw err;
  }
  await new Promise((resolve) => setTimeout(resolve, 700));
  return fetch(url, init);
}

/** Call the API; resolves to the envelope's `data`, throws ApiError otherwise. */
export async function api(method, path, body, { query, signal } = {}) {
  const init = { method, headers: apiHeaders(), signal };
  if (body instanceof FormData) {
    init.body = body;
  } else if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const url = "/api/v1" + withQuery(path, query);
  if (method === "POST") init.headers["Idempotency-Key"] = newIdempotencyKey();
  let response;
  try {
    response = await fetchOnceMore(url, init);
  } catch (err) {
    if (err?.name !== "AbortError") bus.dispatchEvent(new CustomEvent("network", { detail: { reachable: false } }));
    throw err;
  }
  bus.dispatchEvent(new CustomEvent("network", { detail: { reachable: true } }));
  takeRenewal(response);
  let payload = null;
  try { payload = await response.json(); } catch { payload = null; }
  if (response.status === 401 && session.token && !path.startsWith("/auth/login")) {
    bus.dispatchEvent(new CustomEvent("auth-lost"));
  }
  const code = payload && typeof payload === "object" ? payload.code : undefined;
  if (!response.ok || (code !== undefined && code !== 200)) {
    const message = payload?.msg || payload?.message || `HTTP ${response.status}`;
    throw new ApiError(response.status, code, message);
  }
  return payload && typeof payload === "object" && "data" in payload ? payload.data : payload;
}

export const get = (path, query, opts = {}) => api("GET", path, undefined, { ...opts, query });
export const post = (path, body, opts) => api("POST", path, body, opts);
export const put = (path, body, opts) => api("PUT", path, body, opts);
export const del = (path, body, opts) => api("DELETE", path, body, opts);
export const patch = (path, body, opts) => api("PATCH", path, body, opts);

/** A URL-safe path segment. */
export const seg = (value) => encodeURIComponent(String(value));
