// Hash routes of the wiki pages.
import { seg } from "../../api.js";

export const kbHref = (kbId) => `#/wiki/${seg(kbId)}`;
export const pageHref = (kbId, slug) => `#/wiki/${seg(kbId)}/page/${seg(slug)}`;
