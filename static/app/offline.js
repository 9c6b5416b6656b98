// The console as an installed app: registers the service worker (it keeps the shell only, never an API
// answer) and says plainly when this device cannot reach the server, until it can again.
import { bus } from "./api.js";

export function initOffline() {
  if ("serviceWorker" in navigator && window.isSecureContext) {
    navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {}); // no worker: the console works as before
  }
  const banner = document.createElement("div");
  banner.className = "offline-banner";
  banner.setAttribute("role", "status");
  banner.hidden = true;
  banner.textContent = "Offline: this device cannot reach the server. Chats and settings need the connection; the console picks up again when it is back.";
  document.body.append(banner);
  const show = (offline) => { banner.hidden = !offline; };
  window.addEventListener("offline", () => show(true));
  window.addEventListener("online", () => show(false));
  bus.addEventListener("network", (event) => show(!event.detail.reachable));
  if (!navigator.onLine) show(true);
}
