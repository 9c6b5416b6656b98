// Transient messages at the bottom of the screen (role=status); the one implementation.

/** toast("Saved"), toast("Could not…", "error"), toast("Done", "ok"). */
export function toast(message, kind = "info") {
  let box = document.getElementById("toasts");
  if (!box) {
    box = document.createElement("div");
    box.id = "toasts";
    box.setAttribute("role", "status");
    box.setAttribute("aria-live", "polite");
    document.body.append(box);
  }
  const item = document.createElement("div");
  item.className = `toast toast-${kind}`;
  item.textContent = message;
  box.append(item);
  setTimeout(() => item.remove(), kind === "error" ? 6000 : 3000);
}

/** Show a failed call's message in words. */
export function toastError(err) {
  toast(err?.message || String(err), "error");
}
