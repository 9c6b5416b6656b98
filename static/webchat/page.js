// The embeddable webchat page: /webchat?token=<the channel's public token>.
import { mountWebchat } from "./widget.js";

const token = new URLSearchParams(location.search).get("token") || "";
mountWebchat(document.getElementById("chat"), { token });
