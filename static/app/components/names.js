// Names people read for the API's tokens: a conversation's source (`im_a`…`im_h` are the spec's stand-ins for
// messaging platforms; the server names each platform at GET /channels/platforms).
import { get } from "../api.js";
import { useEffect, useState } from "../ui.js";

const FIXED = { web: "Web", webchat: "Webchat", cron: "Schedule", api: "API" };
let platforms = null;

/** {channelType: label} of the messaging platforms, asked once per page load. */
export function platformLabels() {
  platforms ||= get("/channels/platforms")
    .then((list) => Object.fromEntries((list || []).map((p) => [p.channelType, p.label])))
    .catch(() => { platforms = null; return {}; });
  return platforms;
}

/** `const sourceName = useSourceName(); sourceName("im_e")` → "Telegram". */
export function useSourceName() {
  const [labels, setLabels] = useState({});
  useEffect(() => { let live = true; platformLabels().then((l) => { if (live) setLabels(l); }); return () => { live = false; }; }, []);
  return (source) => FIXED[source] || labels[source] || source;
}
