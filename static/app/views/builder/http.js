// api.js plus PATCH (the goals routes use it).
import { api } from "../../api.js";

export { api, apiHeaders, del, get, post, put, seg, session } from "../../api.js";
export const patch = (path, body, opts) => api("PATCH", path, body, opts);
