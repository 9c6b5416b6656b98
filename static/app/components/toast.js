// Transient messages at the bottom of the screen (role=status), shared with the dom.js pages.
import { showError as showDomError, toast as domToast } from "../dom.js";

/** toast("Saved"), toast("Could not…", "error"), toast("Done", "ok"). */
export const toast = domToast;

/** Show a failed call's message in words. */
export const toastError = showDomError;
